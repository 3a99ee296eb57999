"""``/v1/agents/{agent}/embeddings``: which embeddings model an agent's memory is searched by — set it, read
it, remove it — for admins, beside ``/v1/agents/{agent}/model``.

The configuration is checked by the runtime's own validator (:meth:`agentfy.runtime.embeddings.
EmbeddingsSettings.parse`), so what is accepted here is what a search accepts; an error names the field, the
value and what was expected.  ``credential`` names a credential of the organization, which must be stored
first (else 422 naming ``credential``); the key itself is never in the configuration nor in an answer.
Setting writes ``config.embeddings`` through the store's agent update (every process sees the change) and, in
the same transaction, queues the embedding of the agent's existing memory (``memory.embed``, catch-up): the
vectors come from the event workers afterwards, never inside this request.  Removing it makes memory search
the full-text search again; the stored vectors stay unused (a model is only ever compared with its own).
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from agentfy.errors import ApiError
from agentfy.events.embedding import publish_embedding_due
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.resolve import agent_in
from agentfy.gateway.routes.agent_model import configurable_agent, invalid, parsed
from agentfy.gateway.routes.agents import AgentRef
from agentfy.gateway.routes.schemas import Strict, text_field
from agentfy.gateway.routing import ApiRoute
from agentfy.runtime.embeddings import (
    BASE_URL_MAX_LENGTH,
    CONFIG_KEY,
    DEFAULT_MIN_SIMILARITY,
    EmbeddingsSettings,
)
from agentfy.runtime.providers import ModelConfigError
from agentfy.store.repos import agents, credentials
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.vectors import DIMENSIONS_MAX, MODEL_MAX_LENGTH

router = APIRouter(tags=["agents"], route_class=ApiRoute)


class EmbeddingsIn(Strict):
    base_url: str = text_field(BASE_URL_MAX_LENGTH, schema={"pattern": "^https?://[^\\x00]*$"},
                               description="The OpenAI-compatible server's API root, e.g. https://api.openai.com/v1 "
                                           "(the call goes to <base_url>/embeddings).")
    model: str = text_field(MODEL_MAX_LENGTH,
                            description="The embeddings model's name on that server, e.g. text-embedding-3-small.")
    credential: str | None = Field(default=None, min_length=1, max_length=credentials.SLUG_NAME_MAX_LENGTH,
                                   pattern=credentials.NAME_PATTERN,
                                   description="The name of the organization's credential holding the API key "
                                               "(stored first with PUT /v1/credentials/{name}).")
    dimensions: int | None = Field(default=None, ge=1, le=DIMENSIONS_MAX,
                                   description="How many dimensions to ask the model for (models that can shorten "
                                               "their vectors); default: the model's own.")
    min_similarity: float | None = Field(default=None, ge=0, le=1,
                                         description="The least cosine similarity of a search hit by meaning "
                                                     f"(default {DEFAULT_MIN_SIMILARITY}).")


class EmbeddingsOut(BaseModel):
    configured: bool = Field(description="Whether the agent has an embeddings model (false: memory search is "
                                         "full-text only, and the other fields are null).")
    base_url: str | None
    model: str | None
    credential: str | None = Field(description="The credential's name (never its secret).")
    dimensions: int | None
    min_similarity: float | None


def embeddings_out(settings: EmbeddingsSettings | None) -> EmbeddingsOut:
    if settings is None:
        return EmbeddingsOut(configured=False, base_url=None, model=None, credential=None, dimensions=None,
                             min_similarity=None)
    return EmbeddingsOut(configured=True, base_url=settings.base_url, model=settings.model,
                         credential=settings.credential, dimensions=settings.dimensions,
                         min_similarity=settings.min_similarity)


def _settings_of(agent: Agent) -> EmbeddingsSettings | None:
    try:
        return EmbeddingsSettings.of(agent)
    except ModelConfigError as error:
        raise invalid(error) from None


def _config(agent: Agent) -> dict[str, object]:
    return dict(agent.config) if isinstance(agent.config, dict) else {}


@router.put("/agents/{agent}/embeddings", operation_id="agents.embeddings.set", response_model=EmbeddingsOut)
def set_embeddings(agent: AgentRef, body: EmbeddingsIn, call: Authenticated) -> EmbeddingsOut:
    """Set the agent's embeddings model (its ``config.embeddings``; the rest of its configuration is kept) after
    checking it like a search would (admin or higher), and queue the embedding of its existing memory. A
    credential not stored in the organization is 422 naming it; nothing is written."""
    settings = parsed(EmbeddingsSettings.parse, body)
    with call.gateway.db.transaction() as tx:
        found = configurable_agent(tx, call, agent, settings.credential)
        updated = agents.update_agent(tx, call.who.scope, found.id,
                                      config={**_config(found), CONFIG_KEY: settings.as_config()})
        publish_embedding_due(tx, call.who.scope, updated, catch_up=True)
    return embeddings_out(settings)


@router.get("/agents/{agent}/embeddings", operation_id="agents.embeddings.get", response_model=EmbeddingsOut)
def get_embeddings(agent: AgentRef, call: Authenticated) -> EmbeddingsOut:
    """The agent's embeddings model as a search reads it (``configured: false`` when it has none); a stored
    configuration a search could not use is 422 naming its field under ``config.embeddings`` (admin or higher)."""
    with call.gateway.db.transaction(write=False) as tx:
        found = agent_in(tx, call.who, agent)
    return embeddings_out(_settings_of(found))


@router.delete("/agents/{agent}/embeddings", operation_id="agents.embeddings.delete", status_code=204,
               response_class=Response)
def delete_embeddings(agent: AgentRef, call: Authenticated) -> Response:
    """Remove the agent's embeddings model: memory search is full-text only again (admin or higher). 404 when
    the agent has none, naming what is missing (``config.embeddings``), not the agent, which is there: a client
    must not read it as the agent being gone."""
    with call.gateway.db.transaction() as tx:
        found = agent_in(tx, call.who, agent)
        config = _config(found)
        if config.pop(CONFIG_KEY, None) is None:
            raise ApiError(404, "not_found", f"agent {found.agent_key} has no embeddings model",
                           field=f"config.{CONFIG_KEY}")
        agents.update_agent(tx, call.who.scope, found.id, config=config)
    return Response(status_code=204)
