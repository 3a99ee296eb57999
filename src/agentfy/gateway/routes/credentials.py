"""``/v1/credentials``: the organization's named secrets (a model provider's API key, say) — store or rotate,
list, show, delete — for admins, never shown back.

A secret goes in once (``PUT``) and is encrypted at rest (:mod:`agentfy.store.repos.credentials`, AES-256-GCM
bound to the organization) with the key the runtime decrypts with: the gateway's runtime's
(:class:`agentfy.runtime.providers.Providers`), so what is stored here is what the next run reads.  No answer,
log line or error carries the secret: answers hold the name, when it was first stored, and a hint of its last
four characters only when the secret is long enough for those to give little away.  An agent uses one by
naming it in ``config.model.credential`` (``PUT /v1/agents/{agent}/model``).  A server without the credentials
key answers 503 naming ``$AGENTFY_CREDENTIALS_KEY``.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Path, Response
from pydantic import BaseModel, Field

from agentfy.errors import ApiError
from agentfy.gateway.deps import Authenticated, GatewayState
from agentfy.gateway.errors import ErrorBody
from agentfy.gateway.routes.schemas import Strict, text_field
from agentfy.gateway.routing import ApiRoute
from agentfy.store.repos import credentials
from agentfy.store.repos.credentials import KEY_ENV, CredentialCipher, CredentialInfo

router = APIRouter(tags=["credentials"], route_class=ApiRoute)

#: Characters of a secret a person may type (a provider's key is ~50-200); 4 bytes each at most, within the
#: store's bound.
SECRET_MAX_LENGTH: Final = credentials.SECRET_MAX_BYTES // 4
#: A hint shows the last :data:`HINT_CHARS` characters, and only of a secret at least :data:`HINT_MIN_LENGTH` long
#: (four of twenty characters leave sixteen unknown; a shorter secret gets no hint at all).
HINT_CHARS: Final = 4
HINT_MIN_LENGTH: Final = 20
NO_KEY: Final[dict[int | str, dict[str, Any]]] = {
    503: {"model": ErrorBody, "description": f"this server has no credentials key (${KEY_ENV})"}}

CredentialName = Annotated[str, Path(min_length=1, max_length=credentials.SLUG_NAME_MAX_LENGTH,
                                     pattern=credentials.NAME_PATTERN,
                                     description="The credential's name: a lower-case slug, e.g. openai.")]


class CredentialIn(Strict):
    secret: str = text_field(SECRET_MAX_LENGTH, description="The secret (an API key, a token). Stored "
                                                            "encrypted; never shown back.")


class CredentialOut(BaseModel):
    name: str
    created_at: str = Field(description="When a secret was first stored under this name (UTC).")
    rotated_at: str | None = Field(default=None, description="When the secret was last replaced (UTC); null if "
                                                             "it never was.")
    hint: str | None = Field(default=None, description=f"The secret's last {HINT_CHARS} characters after '…', "
                                                       "only in the answer to the PUT that stored it, and only "
                                                       f"for a secret of at least {HINT_MIN_LENGTH} characters.")
    rotated: bool | None = Field(default=None, description="In the answer to a PUT: whether a previous secret "
                                                           "was replaced (true) or the name is new (false).")


class CredentialList(BaseModel):
    items: list[CredentialOut] = Field(description="By name; never the secrets.")


def cipher_of(gateway: GatewayState) -> CredentialCipher:
    """The cipher the gateway's runtime decrypts credentials with, or 503 naming the setting to set."""
    cipher = None if gateway.runtime is None else gateway.runtime.providers.cipher
    if cipher is None:
        raise ApiError(503, "credentials_unavailable", f"this server has no credentials key: set ${KEY_ENV} "
                       "(base64 of 32 bytes, the same in every gateway process) to store credentials")
    return cipher


def hint(secret: str) -> str | None:
    """``…`` and the last :data:`HINT_CHARS` characters of a long secret; ``None`` for a short one."""
    return "…" + secret[-HINT_CHARS:] if len(secret) >= HINT_MIN_LENGTH else None


def credential_out(info: CredentialInfo) -> CredentialOut:
    return CredentialOut(name=info.name, created_at=info.created_at, rotated_at=info.rotated_at)


@router.put("/credentials/{name}", operation_id="credentials.put", response_model=CredentialOut,
            responses=NO_KEY)
def put_credential(name: CredentialName, body: CredentialIn, call: Authenticated) -> CredentialOut:
    """Store a secret under ``name``, or replace (rotate) the one stored there: the next run of every agent
    naming it uses the new one (admin or higher)."""
    cipher = cipher_of(call.gateway)
    with call.gateway.db.transaction() as tx:
        rotated = name in credentials.list_credential_names(tx, call.who.scope)
        credentials.put_credential(tx, call.who.scope, cipher, name, body.secret.encode("utf-8"))
        info = credentials.credential_info(tx, call.who.scope, name)
    return credential_out(info).model_copy(update={"hint": hint(body.secret), "rotated": rotated})


@router.get("/credentials", operation_id="credentials.list", response_model=CredentialList)
def list_credentials(call: Authenticated) -> CredentialList:
    """The organization's credentials by name, with when each was stored and last rotated; never a secret
    (admin or higher)."""
    with call.gateway.db.transaction(write=False) as tx:
        infos = credentials.list_credentials(tx, call.who.scope)
    return CredentialList(items=[credential_out(info) for info in infos])


@router.get("/credentials/{name}", operation_id="credentials.get", response_model=CredentialOut)
def get_credential(name: CredentialName, call: Authenticated) -> CredentialOut:
    """One credential's name and when it was stored; never the secret. Missing or another organization's:
    the same 404, naming the name (admin or higher)."""
    with call.gateway.db.transaction(write=False) as tx:
        return credential_out(credentials.credential_info(tx, call.who.scope, name))


@router.delete("/credentials/{name}", operation_id="credentials.delete", status_code=204,
               response_class=Response)
def delete_credential(name: CredentialName, call: Authenticated) -> Response:
    """Delete a credential (admin or higher): an agent naming it can no longer reach its model until one is
    stored again. Missing or another organization's: the same 404, naming the name."""
    with call.gateway.db.transaction() as tx:
        credentials.delete_credential(tx, call.who.scope, name)
    return Response(status_code=204)
