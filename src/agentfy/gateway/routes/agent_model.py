"""``/v1/agents/{agent}/model``: which model an agent talks to — set it, read it, check it — for admins.

The configuration is checked by the runtime's own validator (:meth:`agentfy.runtime.providers.ModelSettings.
parse`), so what is accepted here is what a run accepts, and an error names the field (``base_url``), the value
and what was expected.  ``credential`` names a credential of the organization (``/v1/credentials``), which
must be stored first (else 422 naming ``credential``): the API key itself is never in an agent's configuration.
Setting goes through the store's agent update, which publishes the change, so every process's router and the
WebSocket change feed see it.  ``POST …/model/check`` calls the model once with a tiny prompt through the
runtime's providers (:mod:`agentfy.runtime.model_check`): 200 with the latency, or ``model_error`` — 502, or
504 when the model did not answer in time — with the model's safe message (never the credential).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Literal, TypeVar

from fastapi import APIRouter
from pydantic import BaseModel, Field

from agentfy.errors import ApiError
from agentfy.gateway.deps import Authenticated, Call, GatewayState
from agentfy.gateway.errors import ErrorBody
from agentfy.gateway.openapi import BODY_RULES
from agentfy.gateway.resolve import agent_in
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.credentials import NO_KEY, cipher_of
from agentfy.gateway.routes.schemas import Strict, text_field
from agentfy.gateway.routing import ApiRoute
from agentfy.identity import Scope
from agentfy.runtime.model import ModelError
from agentfy.runtime.model_check import check_model
from agentfy.runtime.providers import (
    ANTHROPIC,
    ANTHROPIC_BASE_URL,
    CONTEXT_WINDOW_MIN,
    DEFAULT_MAX_TOKENS,
    MAX_TOKENS_MAX,
    MAX_TOKENS_MIN,
    OFFLINE,
    OPENAI,
    ModelConfigError,
    ModelSettings,
)
from agentfy.store.db import Tx
from agentfy.store.repos import agents, credentials
from agentfy.store.repos.agents import Agent

router = APIRouter(tags=["agents"], route_class=ApiRoute)
SettingsT = TypeVar("SettingsT")

BASE_URL_MAX_LENGTH: Final = 2000
MODEL_NAME_MAX_LENGTH: Final = 200
#: What :meth:`ModelSettings.parse` checks across fields, stated in the body's schema: an OpenAI-compatible model
#: needs its server and its model's name, an Anthropic one its model's name (its server has a default), and only
#: Anthropic takes ``max_tokens``.
_NO_MAX_TOKENS: Final = {"max_tokens": {"type": "null"}}
MODEL_BODY_RULES: Final = {"anyOf": [
    {"properties": {"provider": {"const": OFFLINE}, **_NO_MAX_TOKENS}},
    {"required": ["provider", "base_url", "model"],
     "properties": {"provider": {"const": OPENAI}, "base_url": {"type": "string"}, "model": {"type": "string"},
                    **_NO_MAX_TOKENS}},
    {"required": ["provider", "model"], "properties": {"provider": {"const": ANTHROPIC}, "model": {"type": "string"}}},
]}
MODEL_ERRORS: Final[dict[int | str, dict[str, Any]]] = {
    502: {"model": ErrorBody, "description": "model_error: the model could not answer (unreachable, refused the "
                                             "credential, a malformed answer)"},
    504: {"model": ErrorBody, "description": "model_error: the model did not answer in time"},
    **NO_KEY,
}


class ModelIn(Strict):
    provider: Literal["offline", "openai", "anthropic"] = Field(
        default=OFFLINE, description="offline (the built-in model), openai (any OpenAI-compatible "
                                     "chat-completions server) or anthropic (Anthropic's Messages API).")
    base_url: str | None = text_field(BASE_URL_MAX_LENGTH, default=None, schema={"pattern": "^https?://[^\\x00]*$"},
                                      description="The server's API root, e.g. https://api.openai.com/v1 "
                                                  f"(required for openai; for anthropic {ANTHROPIC_BASE_URL} "
                                                  "unless given).")
    model: str | None = text_field(MODEL_NAME_MAX_LENGTH, default=None,
                                   description="The model's name on that server (required for openai and "
                                               "anthropic).")
    credential: str | None = Field(default=None, min_length=1, max_length=credentials.SLUG_NAME_MAX_LENGTH,
                                   pattern=credentials.NAME_PATTERN,
                                   description="The name of the organization's credential holding the API key "
                                               "(stored first with PUT /v1/credentials/{name}).")
    context_window: int | None = Field(default=None, ge=CONTEXT_WINDOW_MIN, le=2**31 - 1,
                                       description="The model's context window in tokens (the memory flush runs "
                                                   "near it).")
    max_tokens: int | None = Field(default=None, ge=MAX_TOKENS_MIN, le=MAX_TOKENS_MAX,
                                   description="The longest answer in tokens: anthropic only (the API requires "
                                               f"it; default {DEFAULT_MAX_TOKENS}).")


class ModelOut(BaseModel):
    provider: str
    base_url: str | None
    model: str | None
    credential: str | None = Field(description="The credential's name (never its secret).")
    context_window: int
    max_tokens: int | None = Field(description="The longest answer in tokens (anthropic only).")


class ModelCheckOut(BaseModel):
    ok: bool = Field(description="Always true: a failed check is an error (502/504).")
    model: str = Field(description="The model that answered (offline: the built-in model).")
    latency_ms: int = Field(description="How long the model took to answer, in milliseconds.")


def model_out(settings: ModelSettings) -> ModelOut:
    return ModelOut(provider=settings.provider, base_url=settings.base_url, model=settings.model,
                    credential=settings.credential, context_window=settings.context_window,
                    max_tokens=settings.max_tokens)


def invalid(error: ModelConfigError) -> ApiError:
    """The 422 of a configuration the validator refused: its field, value and expectation."""
    return ApiError(422, "invalid_input", str(error), field=error.field, value=error.value,
                    expected=error.expected)


def settings_of(agent: Agent) -> ModelSettings:
    try:
        return ModelSettings.of(agent)
    except ModelConfigError as error:
        raise invalid(error) from None


def parsed(parse: Callable[..., SettingsT], body: BaseModel) -> SettingsT:
    """``body`` as the runtime's validator ``parse`` reads it (its ``parse(document, field="")``), or the 422
    of :func:`invalid`: what a run (or a search) accepts is what a route accepts."""
    try:
        return parse(body.model_dump(exclude_none=True), field="")
    except ModelConfigError as error:
        raise invalid(error) from None


def configurable_agent(tx: Tx, call: Call, agent: str, credential: str | None) -> Agent:
    """The caller's agent ``agent`` (404 as every agent reference), once ``credential`` — the one a model or
    embeddings configuration names — is known to be stored in the organization (else 422 naming
    ``credential``): the check every configuration that spends a credential makes before it is written."""
    found = agent_in(tx, call.who, agent)
    require_credential(tx, call.who.scope, credential, "credential")
    return found


def require_credential(tx: Tx, who_scope: Scope, name: str | None, field: str) -> None:
    """422 naming ``field`` unless ``name`` (when given) is a credential stored in the organization."""
    if name is not None and name not in credentials.list_credential_names(tx, who_scope):
        raise ApiError(422, "invalid_input", f"credential {name!r} is not stored in this organization; store it "
                       f"first (PUT /v1/credentials/{name})", field=field, value=name,
                       expected="the name of a stored credential")


@router.put("/agents/{agent}/model", operation_id="agents.model.set", response_model=ModelOut,
            openapi_extra={BODY_RULES: MODEL_BODY_RULES})
def set_model(agent: AgentRef, body: ModelIn, call: Authenticated) -> ModelOut:
    """Set the agent's model (its ``config.model``; the rest of its configuration is kept) after checking it
    like a run would (admin or higher). A credential not stored in the organization is 422 naming it."""
    settings = parsed(ModelSettings.parse, body)
    with call.gateway.db.transaction() as tx:
        found = configurable_agent(tx, call, agent, settings.credential)
        config = {**(found.config if isinstance(found.config, dict) else {}), "model": settings.as_config()}
        agents.update_agent(tx, call.who.scope, found.id, config=config)
    return model_out(settings)


@router.get("/agents/{agent}/model", operation_id="agents.model.get", response_model=ModelOut)
def get_model(agent: AgentRef, call: Authenticated) -> ModelOut:
    """The agent's model as a run reads it (the offline model when none is set); a stored configuration a run
    could not use is 422 naming its field under ``config.model`` (admin or higher)."""
    with call.gateway.db.transaction(write=False) as tx:
        found = agent_in(tx, call.who, agent)
    return model_out(settings_of(found))


@router.post("/agents/{agent}/model/check", operation_id="agents.model.check", response_model=ModelCheckOut,
             responses=MODEL_ERRORS)
async def check(agent: AgentRef, call: Authenticated) -> ModelCheckOut:
    """Call the agent's model once with a tiny prompt, as a run would (its credential, the server's key):
    200 with the latency, or model_error — 502, 504 on a timeout — with the model's message (admin or higher).
    Nothing is stored."""
    gateway = call.gateway
    found = _checked_agent(gateway, call, agent)
    runtime = gateway.runtime
    assert runtime is not None  # _checked_agent answered 503 otherwise
    try:
        result = await check_model(gateway.db, runtime.providers, found)
    except ModelConfigError as error:
        raise invalid(error) from None
    except ModelError as error:
        raise ApiError(504 if error.timed_out else 502, "model_error", str(error)) from None
    return ModelCheckOut(ok=True, model=result.model, latency_ms=result.latency_ms)


def _checked_agent(gateway: GatewayState, call: Call, ref: str) -> Agent:
    """The agent to check, read fresh (a check right after a change checks the change); its configuration
    valid (else 422), its credential stored (else 422 naming ``config.model.credential``) and decryptable here
    (else 503)."""
    with gateway.db.transaction(write=False) as tx:
        found = agent_in(tx, call.who, ref)
        settings = settings_of(found)
        require_credential(tx, call.who.scope, settings.credential, "config.model.credential")
    if settings.credential is not None:
        cipher_of(gateway)
    elif gateway.runtime is None:
        raise ApiError(503, "unavailable", "this server runs no agent runtime")
    return found
