"""Which embeddings model an agent's memory is searched by, and the calls to it.

An agent's ``config["embeddings"]`` names an OpenAI-compatible ``/embeddings`` endpoint (absent: no
embeddings; memory search is the full-text search alone)::

    {"base_url": "https://api.openai.com/v1",   # the server's API root (the call goes to <base_url>/embeddings)
     "model": "text-embedding-3-small",
     "credential": "openai",                   # the name of the organization's stored credential (optional)
     "dimensions": 256,                        # asked of the model (optional: the model's own size)
     "min_similarity": 0.3}                    # the least cosine similarity of a hit (optional, 0 to 1)

The key is never in the configuration: like the chat model's, it is the organization's credential named by
``credential`` (:mod:`agentfy.runtime.providers`).  :meth:`EmbeddingsSettings.parse` is the one validator;
the API (``PUT /v1/agents/{agent}/embeddings``) and every reader call it, and its errors are
:class:`~agentfy.runtime.providers.ModelConfigError` naming the field, the value and what was expected.

:func:`embed` calls the endpoint through the ``openai`` SDK's clients and the one retry loop
(:mod:`agentfy.runtime.call_policy`); its failures are :class:`~agentfy.runtime.model.ModelError` (the base
URL and the status, never the key or a body).  :class:`QueryEmbedder` embeds a search's query for a run —
before any transaction is opened, with one short try: a search whose embedding fails is the full-text search.
Every call's tokens are recorded in ``usage_snapshots`` under the agent (``run_id`` ``embedding-…``).
"""

from __future__ import annotations

import asyncio
import logging
import math
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from agentfy.identity import Scope
from agentfy.runtime import usage
from agentfy.runtime.call_policy import CallPolicy, Progress, call_with_policy
from agentfy.runtime.model import ModelError, Usage
from agentfy.runtime.openai_compat import ERRORS, OpenAIClients
from agentfy.runtime.providers import OPENAI, ModelConfigError, Providers, is_http_url
from agentfy.store.db import Database, Tx
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos import credentials
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.credentials import CredentialCipher
from agentfy.store.repos.vectors import DIMENSIONS_MAX, MODEL_MAX_LENGTH, QueryVector, pack

logger: Final = logging.getLogger("agentfy.runtime.embeddings")

EMBEDDINGS: Final = "/embeddings"
#: The agent configuration's key.
CONFIG_KEY: Final = "embeddings"
DEFAULT_MIN_SIMILARITY: Final = 0.3
BASE_URL_MAX_LENGTH: Final = 2000
#: A query's embedding is asked once, briefly: the search must not wait long for a ranking it can do without.
QUERY_POLICY: Final = CallPolicy(attempts=1, timeout_seconds=5.0)
#: How many texts one background call embeds at most.
BATCH_MAX: Final = 32


def _path(field: str, name: str) -> str:
    return f"{field}.{name}" if field else name


@dataclass(frozen=True, slots=True)
class EmbeddingsSettings:
    """An agent's ``config["embeddings"]``, checked (:meth:`parse`)."""

    base_url: str
    model: str
    credential: str | None = None
    dimensions: int | None = None
    min_similarity: float = DEFAULT_MIN_SIMILARITY

    @classmethod
    def of(cls, agent: Agent) -> EmbeddingsSettings | None:
        """The agent's embeddings settings, ``None`` when it has none (the message of an error names the agent)."""
        raw: Any = agent.config.get(CONFIG_KEY) if isinstance(agent.config, dict) else None
        if raw is None:
            return None
        try:
            return cls.parse(raw)
        except ModelConfigError as error:
            raise ModelConfigError(f"agent {agent.agent_key}: {error}", field=error.field, value=error.value,
                                   expected=error.expected) from None

    @classmethod
    def parse(cls, raw: object, *, field: str = f"config.{CONFIG_KEY}") -> EmbeddingsSettings:
        """``raw`` checked, or :class:`ModelConfigError` naming the field (``field`` is where ``raw`` sits:
        ``config.embeddings`` in an agent's configuration, ``""`` for a body that is the configuration)."""
        if not isinstance(raw, dict):
            raise ModelConfigError(f"{field or 'the embeddings configuration'} {raw!r:.100} must be an object like "
                                   '{"base_url": …, "model": …}', field=field or None, value=raw,
                                   expected="an object")
        unknown = sorted(set(raw) - {"base_url", "model", "credential", "dimensions", "min_similarity"})
        if unknown:
            raise ModelConfigError(f"{_path(field, unknown[0])} is not an embeddings setting; expected base_url, "
                                   "model, credential, dimensions or min_similarity", field=_path(field, unknown[0]),
                                   expected="base_url, model, credential, dimensions or min_similarity")
        texts: dict[str, str | None] = {}
        for name, longest in (("base_url", BASE_URL_MAX_LENGTH), ("model", MODEL_MAX_LENGTH),
                              ("credential", credentials.SLUG_NAME_MAX_LENGTH)):
            value = raw.get(name)
            if value is None and name != "credential":
                raise ModelConfigError(f"{_path(field, name)} is required for embeddings", field=_path(field, name),
                                       expected="a non-empty string")
            if value is not None and (not isinstance(value, str) or not value or len(value) > longest):
                raise ModelConfigError(f"{_path(field, name)} {value!r:.100} must be a non-empty string of at most "
                                       f"{longest} characters", field=_path(field, name), value=value,
                                       expected="a non-empty string")
            texts[name] = value
        base_url, model, credential = texts["base_url"], texts["model"], texts["credential"]
        assert base_url is not None and model is not None
        if not is_http_url(base_url):
            raise ModelConfigError(f"{_path(field, 'base_url')} {base_url!r:.200} is not an http(s) URL with a host",
                                   field=_path(field, "base_url"), value=base_url,
                                   expected="an http:// or https:// URL, e.g. https://api.openai.com/v1")
        if credential is not None and (problem := credentials.name_problem(credential)) is not None:
            raise ModelConfigError(f"{_path(field, 'credential')} {credential!r:.100}: {problem}",
                                   field=_path(field, "credential"), value=credential,
                                   expected="a credential name (a lower-case slug)")
        dimensions = raw.get("dimensions")
        if dimensions is not None and (type(dimensions) is not int or not 1 <= dimensions <= DIMENSIONS_MAX):
            raise ModelConfigError(f"{_path(field, 'dimensions')} {dimensions!r:.100} must be an integer from 1 to "
                                   f"{DIMENSIONS_MAX}", field=_path(field, "dimensions"), value=dimensions,
                                   expected=f"an integer from 1 to {DIMENSIONS_MAX}")
        similarity = raw.get("min_similarity", DEFAULT_MIN_SIMILARITY)
        if type(similarity) not in (int, float) or not 0 <= similarity <= 1:
            raise ModelConfigError(f"{_path(field, 'min_similarity')} {similarity!r:.100} must be a number from 0 to 1",
                                   field=_path(field, "min_similarity"), value=similarity,
                                   expected="a number from 0 to 1 (cosine similarity)")
        return cls(base_url.rstrip("/"), model, credential, dimensions, float(similarity))

    def as_config(self) -> dict[str, Any]:
        """These settings as an agent's ``config.embeddings`` (unset fields left out)."""
        config: dict[str, Any] = {"base_url": self.base_url, "model": self.model,
                                  "min_similarity": self.min_similarity}
        config.update({name: value for name, value in (("credential", self.credential),
                                                       ("dimensions", self.dimensions)) if value is not None})
        return config


def api_key(tx: Tx, scope: Scope, cipher: CredentialCipher | None, agent: Agent,
            settings: EmbeddingsSettings) -> str | None:
    """The key of the settings' credential (read in ``tx``, the agent's tenant), ``None`` when it names none;
    :class:`ModelConfigError` when it cannot be read here (no credentials key, the credential not stored)."""
    if settings.credential is None:
        return None
    if cipher is None:
        raise ModelConfigError(f"agent {agent.agent_key} needs credential {settings.credential!r} for embeddings, "
                               f"but this process has no credentials key (${credentials.KEY_ENV})")
    try:
        return credentials.get_credential(tx, scope, cipher, settings.credential).decode()
    except NotFoundError:
        raise ModelConfigError(f"agent {agent.agent_key}: embeddings credential {settings.credential!r} is not stored "
                               "in this organization") from None


@dataclass(frozen=True, slots=True)
class Embedded:
    """The vectors of one call (:func:`~agentfy.store.repos.vectors.pack`ed, in input order) and its usage."""

    vectors: tuple[bytes, ...]
    usage: Usage | None


def _malformed(base_url: str) -> ModelError:
    return ModelError(f"the embeddings model at {base_url} sent an answer that is not a list of embeddings")


def parse_embeddings(document: object, count: int, base_url: str) -> Embedded:
    """The endpoint's answer: ``data[i].embedding`` by ``index`` (one per input), ``usage.prompt_tokens``."""
    if not isinstance(document, Mapping) or not isinstance(document.get("data"), list):
        raise _malformed(base_url)
    data = document["data"]
    if len(data) != count or not all(isinstance(item, Mapping) for item in data):
        raise _malformed(base_url)
    ordered = sorted(data, key=lambda item: item.get("index", 0) if type(item.get("index")) is int else 0)
    vectors: list[bytes] = []
    for item in ordered:
        values = item.get("embedding")
        if not isinstance(values, list) or not all(type(v) in (int, float) and math.isfinite(v) for v in values):
            raise _malformed(base_url)
        try:
            vectors.append(pack(values))
        except InvalidInputError:
            raise _malformed(base_url) from None
    if len({len(v) for v in vectors}) > 1:
        raise _malformed(base_url)
    used = document.get("usage")
    tokens = used.get("prompt_tokens") if isinstance(used, Mapping) else None
    return Embedded(tuple(vectors), Usage(tokens, 0) if type(tokens) is int and tokens >= 0 else None)


async def embed(clients: OpenAIClients, policy: CallPolicy, settings: EmbeddingsSettings, key: str | None,
                texts: Sequence[str]) -> Embedded:
    """The vectors of ``texts`` (1 to :data:`BATCH_MAX`) from the settings' endpoint, tried as ``policy``
    says; :class:`~agentfy.runtime.model.ModelError` when it cannot answer."""
    body: dict[str, Any] = {"model": settings.model, "input": list(texts), "encoding_format": "float"}
    if settings.dimensions is not None:
        body["dimensions"] = settings.dimensions

    async def attempt() -> Embedded:
        async with clients.lease(settings.base_url, key) as client:
            answer = await client.post(EMBEDDINGS, body=body, cast_to=object,
                                       options={"timeout": policy.timeout_seconds})
        return parse_embeddings(answer, len(texts), settings.base_url)

    return await call_with_policy(policy, ERRORS, settings.base_url, attempt, progress=Progress(None))


def query_vector(settings: EmbeddingsSettings, embedded: Embedded) -> QueryVector:
    data = embedded.vectors[0]
    return QueryVector(settings.model, len(data) // 4, data, settings.min_similarity)


class QueryEmbedder:
    """Embeds a run's search query with the agent's own embeddings model (see the module docstring): a
    :class:`~agentfy.store.repos.vectors.QueryVector`, or ``None`` — no embeddings configured, or they failed
    (logged; the caller searches by text alone).  ``providers``: the runtime's, whose credentials cipher and
    ``openai`` SDK clients it uses (read at each call, so they are the runtime's at that moment)."""

    def __init__(self, providers: Providers, *, policy: CallPolicy = QUERY_POLICY) -> None:
        self.providers = providers
        self.policy = policy

    async def vector_for(self, db: Database, agent: Agent, text: str) -> QueryVector | None:
        try:
            settings = EmbeddingsSettings.of(agent)
            if settings is None or not text.strip():
                return None
            key = await asyncio.to_thread(self._key, db, agent, settings)
            embedded = await embed(self.providers.clients, self.policy, settings, key, [text])
        except (ModelConfigError, ModelError) as error:
            logger.warning("embeddings.query_failed", extra={"agent_id": agent.id, "tenant_id": agent.tenant_id,
                                                             "problem": str(error)})
            return None
        if embedded.usage is not None:  # its own short transaction, after the call (a failure is only logged)
            await asyncio.to_thread(usage.record, db, agent, provider=OPENAI, model=settings.model,
                                    usage=embedded.usage, run_id=f"embedding-{secrets.token_hex(8)}",
                                    session_key=None)
        return query_vector(settings, embedded)

    def _key(self, db: Database, agent: Agent, settings: EmbeddingsSettings) -> str | None:
        with db.transaction(write=False) as tx:  # closed before the call: a network call holds no transaction
            return api_key(tx, Scope(agent.tenant_id), self.providers.cipher, agent, settings)

