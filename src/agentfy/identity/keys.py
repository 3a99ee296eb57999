"""``agent_key``: the per-tenant, human-readable identity of an agent (prompts, paths, logs, UI, router).

Rules: a lower-case slug (``a-z``, ``0-9``, single hyphens, starting with a letter or digit), at most 100
characters, and never the shape of an ID: a value that could be read as an ID (any well-formed prefix,
canonical or legacy, or a bare UUID) is refused, so "ID or key" look-ups are never ambiguous, even after a
new prefix is registered.  A key is unique only within its tenant; never use it as a global identifier.
"""

from __future__ import annotations

import re
from typing import Final, NewType

from agentfy.ids import AGENTFY_UUID_LEGACY, AGENTFY_WORDS_LEGACY, CANONICAL, NIL_UUID, PRODUCT_LEGACY_ID_FORMATS

AgentKey = NewType("AgentKey", str)
#: An organization's slug: its human-readable identity (URLs, workspace paths, log fields).
TenantSlug = NewType("TenantSlug", str)
TENANT_SLUG_MAX_LENGTH: Final = 63

AGENT_KEY_MAX_LENGTH: Final = 100
#: The shape of an agent_key and of a tenant slug, as a JSON-schema ``pattern`` (ECMA-262 and Python ``re``
#: read it alike): the OpenAPI document states it and :data:`_SLUG` checks it.  Not stated there, because no
#: pattern can: the length, and that the value does not have the shape of an ID (:func:`agent_key_problem`).
SLUG_PATTERN: Final = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
#: An ``agent_key``'s shape, anchored: the slug's.
AGENT_KEY_PATTERN: Final = SLUG_PATTERN
_SLUG: Final = re.compile(SLUG_PATTERN.removeprefix("^").removesuffix("$"))
_SHORT_SLUG: Final = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+){0,2}")  # a slug with fewer than three hyphens
_ID_SHAPES: Final = (CANONICAL, AGENTFY_WORDS_LEGACY, AGENTFY_UUID_LEGACY,
                     *(shape for product in ("bonsite", "securify", "store-deputy")
                       for shape in PRODUCT_LEGACY_ID_FORMATS[product]))


class InvalidAgentKeyError(ValueError):
    """A value used as an ``agent_key`` breaks the key rules; names the value and the rule."""

    def __init__(self, value: object, reason: str, *, field: str = "agent_key") -> None:
        self.value = value
        self.field = field
        self.reason = reason
        shown = value if isinstance(value, str) else type(value).__name__
        super().__init__(f"invalid {field} {shown!r}: {reason}")


def looks_like_an_id(value: str) -> bool:
    """Whether ``value`` has the shape of an ID with any well-formed prefix (registered or not): canonical,
    Agentfy's legacy shapes, and the other products' human-id shapes (Bonsite, Securify, Store Deputy —
    so ``agent-calm-rivers-k8m4p2d7n9xi`` is refused too).  Shiffty's shape (any two words and six
    characters) is left out: it would refuse ordinary keys such as ``team-alpha-beta-123456``.  The nil UUID
    counts too: it is no ID, but it is the silent-nil marker of a caller bug, and a key or slug spelled like
    it would make that bug look like a hit."""
    if value.count("-") < 3:  # every ID shape has at least three hyphens (a UUID has four)
        return False
    return value == NIL_UUID or any(shape.match(value, None) for shape in _ID_SHAPES)


def is_short_key(value: str) -> bool:
    """Whether ``value`` is certainly a valid ``agent_key`` by a cheap test: a slug of at most 100 characters
    with fewer than three hyphens, which no ID shape has.  ``False`` says nothing (ask
    :func:`agent_key_problem`); it lets a look-up by the commonest keys skip the ID checks."""
    if value.isascii() and value.isalnum() and value.islower():  # one word of a-z and 0-9, not only digits:
        return len(value) <= AGENT_KEY_MAX_LENGTH  # the commonest key, decided without the pattern's fixed cost
    return len(value) <= AGENT_KEY_MAX_LENGTH and _SHORT_SLUG.fullmatch(value) is not None


def agent_key_problem(value: object) -> str | None:
    """Why ``value`` is not a valid ``agent_key``, or ``None`` if it is."""
    if not isinstance(value, str) or type(value) is not str:
        return "expected a string"
    if not value:
        return "is empty"
    if len(value) > AGENT_KEY_MAX_LENGTH:
        return f"is {len(value)} characters; at most {AGENT_KEY_MAX_LENGTH} are allowed"
    if not _SLUG.fullmatch(value):
        return "expected a lower-case slug: a-z, 0-9 and single hyphens, e.g. 'support-bot'"
    if looks_like_an_id(value):
        return "has the shape of an ID; an agent_key must never be mistakable for one"
    return None


def parse_agent_key(value: object, *, field: str = "agent_key") -> AgentKey:
    """``value`` as an :data:`AgentKey`, or :class:`InvalidAgentKeyError`."""
    problem = agent_key_problem(value)
    if problem is not None:
        raise InvalidAgentKeyError(value, problem, field=field)
    return AgentKey(value)  # type: ignore[arg-type]


class InvalidTenantSlugError(ValueError):
    """A value used as a tenant slug is not one (wrong shape, or an ID passed where the slug belongs)."""

    def __init__(self, value: object, reason: str, *, field: str = "tenant_slug") -> None:
        self.value = value
        self.field = field
        self.reason = reason
        shown = value if isinstance(value, str) else type(value).__name__
        super().__init__(f"invalid {field} {shown!r}: {reason}")


def tenant_slug_problem(value: object) -> str | None:
    """Why ``value`` is not a tenant slug, or ``None`` if it is."""
    if not isinstance(value, str) or type(value) is not str:
        return "expected a string"
    if not value:
        return "is empty"
    if len(value) > TENANT_SLUG_MAX_LENGTH:
        return f"is {len(value)} characters; at most {TENANT_SLUG_MAX_LENGTH} are allowed"
    if not _SLUG.fullmatch(value):
        return "expected a lower-case slug: a-z, 0-9 and single hyphens, e.g. 'acme'"
    if looks_like_an_id(value):
        return "has the shape of an ID; pass the tenant's slug, not its ID"
    return None


def parse_tenant_slug(value: object, *, field: str = "tenant_slug") -> TenantSlug:
    """``value`` as a :data:`TenantSlug`, or :class:`InvalidTenantSlugError`."""
    problem = tenant_slug_problem(value)
    if problem is not None:
        raise InvalidTenantSlugError(value, problem, field=field)
    return TenantSlug(value)  # type: ignore[arg-type]
