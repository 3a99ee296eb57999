"""Which model an agent talks to: its configuration, read once per run.

An agent's ``config["model"]`` chooses (absent: the offline model, the embedded default)::

    {"provider": "openai",                     # an OpenAI-compatible chat-completions server
     "base_url": "https://api.openai.com/v1",
     "model": "gpt-4o-mini",
     "credential": "openai",                   # the name of the organization's stored credential (optional)
     "context_window": 128000}                 # tokens; the memory flush runs near it (optional)

    {"provider": "offline", "context_window": 8000}

The API key is never in the agent's configuration (agents are readable by every member): it is the
organization's credential named by ``credential``, decrypted from the credentials store with the
process's credentials key (``$AGENTFY_CREDENTIALS_KEY``).  A configuration the runtime cannot use is a
:class:`ModelConfigError` naming the field, the value and what was expected, shown to the person.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from agentfy.identity import Scope
from agentfy.runtime.model import ModelProvider
from agentfy.runtime.offline import OfflineProvider
from agentfy.runtime.openai_compat import CallPolicy, OpenAIClients, OpenAICompatibleProvider
from agentfy.store.db import Tx
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import credentials
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.credentials import CredentialCipher

OFFLINE: Final = "offline"
OPENAI: Final = "openai"
PROVIDERS: Final = (OFFLINE, OPENAI)
DEFAULT_CONTEXT_WINDOW: Final = 8_000


class ModelConfigError(ValueError):
    """The agent's model configuration cannot be used (the message says which field and what is expected)."""


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """An agent's ``config["model"]``, checked."""

    provider: str = OFFLINE
    base_url: str | None = None
    model: str | None = None
    credential: str | None = None
    context_window: int = DEFAULT_CONTEXT_WINDOW

    @classmethod
    def of(cls, agent: Agent) -> ModelSettings:
        raw: Any = agent.config.get("model") if isinstance(agent.config, dict) else None
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise ModelConfigError(f"agent {agent.agent_key}: config.model {raw!r} must be an object like "
                                   '{"provider": "openai", "base_url": …, "model": …}')
        provider = raw.get("provider", OFFLINE)
        if provider not in PROVIDERS:
            raise ModelConfigError(f"agent {agent.agent_key}: config.model.provider {provider!r} is unknown; "
                                   f"expected one of {', '.join(PROVIDERS)}")
        window = raw.get("context_window", DEFAULT_CONTEXT_WINDOW)
        if type(window) is not int or window < 500:
            raise ModelConfigError(f"agent {agent.agent_key}: config.model.context_window {window!r} must be an "
                                   "integer of at least 500 (tokens)")
        fields = {name: raw.get(name) for name in ("base_url", "model", "credential")}
        for name, value in fields.items():
            if value is not None and (not isinstance(value, str) or not value):
                raise ModelConfigError(f"agent {agent.agent_key}: config.model.{name} {value!r} must be a "
                                       "non-empty string")
        if provider == OPENAI:
            for name in ("base_url", "model"):
                if fields[name] is None:
                    raise ModelConfigError(f"agent {agent.agent_key}: config.model.{name} is required for "
                                           f"provider {OPENAI!r}")
            if not str(fields["base_url"]).startswith(("https://", "http://")):
                raise ModelConfigError(f"agent {agent.agent_key}: config.model.base_url {fields['base_url']!r} "
                                       "must be an http(s) URL")
        return cls(provider, fields["base_url"], fields["model"], fields["credential"], window)


class Providers:
    """Picks each run's provider from the agent's configuration.

    ``offline`` is shared (it keeps no per-run state beyond its script); an OpenAI-compatible provider is
    built per run with the organization's credential, ``policy`` (its tries and timeout; default
    :class:`~agentfy.runtime.openai_compat.CallPolicy`) and this process's SDK clients, one per base URL and
    key (the SDK brings its own HTTP client, so the channels' ``httpx`` client cannot be shared with it), at
    most ``clients`` of them; :meth:`aclose` closes them at shutdown.
    """

    def __init__(self, *, offline: ModelProvider | None = None, cipher: CredentialCipher | None = None,
                 policy: CallPolicy | None = None, clients: OpenAIClients | None = None) -> None:
        self.offline: ModelProvider = offline if offline is not None else OfflineProvider()
        self.cipher = cipher
        self.policy = policy if policy is not None else CallPolicy()
        self.clients = clients if clients is not None else OpenAIClients()

    async def aclose(self) -> None:
        """Close the SDK clients (their connections) of the running loop."""
        await self.clients.aclose()

    def for_agent(self, tx: Tx, scope: Scope, agent: Agent, settings: ModelSettings) -> ModelProvider:
        """The provider of ``agent`` (reads the credential in ``tx``, the run's tenant)."""
        if settings.provider == OFFLINE:
            return self.offline
        assert settings.base_url is not None and settings.model is not None
        return OpenAICompatibleProvider(base_url=settings.base_url, model=settings.model,
                                        api_key=self._api_key(tx, scope, agent, settings), clients=self.clients,
                                        policy=self.policy)

    def _api_key(self, tx: Tx, scope: Scope, agent: Agent, settings: ModelSettings) -> str | None:
        if settings.credential is None:
            return None
        if self.cipher is None:
            raise ModelConfigError(f"agent {agent.agent_key} needs credential {settings.credential!r}, but this "
                                   f"process has no credentials key (${credentials.KEY_ENV})")
        try:
            return credentials.get_credential(tx, scope, self.cipher, settings.credential).decode()
        except NotFoundError:
            raise ModelConfigError(f"agent {agent.agent_key}: credential {settings.credential!r} is not stored in "
                                   "this organization") from None
