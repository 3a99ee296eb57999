"""Cursor pagination for every list of the HTTP and WebSocket APIs: ``limit`` and ``cursor`` in, ``items`` and
``next_cursor`` out.

A cursor is the last item's key (:class:`agentfy.store.paging.Keyset`), signed with the gateway's secret
together with the caller's organization and the operation: it cannot be forged, edited, or used in another
organization or another list (each is a 422 ``invalid_cursor``, the same answer, telling nothing).  Pages are
stable: an item added or removed between two pages neither repeats nor skips another.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Final, Generic, TypeVar

from fastapi import Query
from pydantic import BaseModel, Field

from agentfy.errors import ApiError
from agentfy.gateway.auth import Principal
from agentfy.store.inputs import TEXT_PATTERN
from agentfy.store.paging import DEFAULT_LIMIT, MAX_LIMIT, Keyset, PageKeyError

if TYPE_CHECKING:
    from agentfy.gateway.deps import GatewayState

T = TypeVar("T")
Out = TypeVar("Out")
CURSOR_MAX_CHARS: Final = 2048
_MAC_BYTES: Final = 16

Limit = Annotated[int, Query(ge=1, le=MAX_LIMIT, description=f"Items per page (default {DEFAULT_LIMIT}).")]
Cursor = Annotated[str | None, Query(max_length=CURSOR_MAX_CHARS, json_schema_extra={"pattern": TEXT_PATTERN},
                                     description=("Where the page starts: the previous page's next_cursor (omit "
                                                  "for the first page)."))]


class Page(BaseModel, Generic[Out]):
    """One page of a list."""

    items: list[Out]
    next_cursor: str | None = Field(description="Pass as cursor for the next page; null on the last page.")


class PageParams(BaseModel):
    """The WebSocket list methods' paging parameters (the HTTP routes take the same as query parameters)."""

    model_config = {"extra": "forbid"}
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT)
    cursor: str | None = Field(default=None, max_length=CURSOR_MAX_CHARS)


def _mac(secret: bytes, who: Principal, operation: str, body: str) -> str:
    message = f"{who.tenant_id}\n{operation}\n{body}".encode()
    digest = hmac.new(secret, message, hashlib.sha256).digest()[:_MAC_BYTES]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def encode_cursor(secret: bytes, who: Principal, operation: str, key: Sequence[Any]) -> str:
    body = base64.urlsafe_b64encode(json.dumps(list(key), separators=(",", ":")).encode()).rstrip(b"=").decode()
    return f"{body}.{_mac(secret, who, operation, body)}"


def decode_cursor(secret: bytes, who: Principal, operation: str, cursor: str) -> list[Any]:
    """The key a cursor carries, or 422 ``invalid_cursor`` (forged, edited, another organization's or list's)."""
    body, _, mac = cursor.partition(".")
    # Bytes, not text: hmac.compare_digest refuses a str with a character outside ASCII (a TypeError, which
    # would be a 500), and a cursor is whatever the caller sent.  surrogatepass: a lone surrogate is bytes too.
    if not hmac.compare_digest(mac.encode("utf-8", "surrogatepass"),
                               _mac(secret, who, operation, body).encode("ascii")):
        raise invalid_cursor()
    try:
        key = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except ValueError as error:
        raise invalid_cursor() from error
    if not isinstance(key, list):
        raise invalid_cursor()
    return key


def invalid_cursor() -> ApiError:
    return ApiError(422, "invalid_cursor", "the cursor is not one this list gave out for this organization; "
                                            "start from the first page", field="cursor")


def page(secret: bytes, who: Principal, operation: str, keyset: Keyset[T], *, fetch: Callable[..., list[T]],
         out: Callable[[T], Out], limit: int, cursor: str | None) -> Page[Out]:
    """One page: ``fetch(after=, limit=)`` is the repository's list function, asked for one item more than the
    page to learn whether another page follows."""
    after = None if cursor is None else decode_cursor(secret, who, operation, cursor)
    try:
        items = fetch(after=after, limit=limit + 1)
    except PageKeyError as error:  # a key of the wrong width: not a cursor of this list
        raise invalid_cursor() from error
    following = None
    if len(items) > limit:
        items = items[:limit]
        following = encode_cursor(secret, who, operation, keyset.key(items[-1]))
    return Page[Any](items=[out(item) for item in items], next_cursor=following)


def paged(gateway: GatewayState, who: Principal, operation: str, keyset: Keyset[T], *,
          fetch: Callable[..., list[T]], out: Callable[[T], Out], limit: int, cursor: str | None) -> Page[Out]:
    """:func:`page` in one read transaction: ``fetch(tx, after=, limit=)`` is the repository's list function."""
    with gateway.db.transaction(write=False) as tx:
        return page(gateway.signing_secret, who, operation, keyset, fetch=lambda **bounds: fetch(tx, **bounds),
                    out=out, limit=limit, cursor=cursor)


def empty() -> Page[Any]:
    """The page of a list the caller may see nothing of."""
    return Page[Any](items=[], next_cursor=None)
