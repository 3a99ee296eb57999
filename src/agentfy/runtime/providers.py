"""Which model an agent talks to: its configuration, read once per run.

An agent's ``config["model"]`` chooses (absent: the offline model, the embedded default)::

    {"provider": "openai",                     # an OpenAI-compatible chat-completions server
     "base_url": "https://api.openai.com/v1",
     "model": "gpt-4o-mini",
     "credential": "openai",                   # the name of the organization's stored credential (optional)
     "context_window": 128000}                 # tokens; the memory flush runs near it (optional)

    {"provider": "anthropic",                  # Anthropic's Messages API
     "base_url": "https://api.anthropic.com",  # the default (the API root: the SDK adds /v1/messages)
     "model": "claude-sonnet-4-5",
     "credential": "anthropic",
     "max_tokens": 4096,                       # the longest answer, in tokens (the API requires one; default 4096)
     "context_window": 200000}

    {"provider": "offline", "context_window": 8000}

The API key is never in the agent's configuration (agents are readable by every member): it is the
organization's credential named by ``credential``, decrypted from the credentials store with the
process's credentials key (``$AGENTFY_CREDENTIALS_KEY``).  A configuration the runtime cannot use is a
:class:`ModelConfigError` naming the field, the value and what was expected, shown to the person.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import httpx

from agentfy.identity import Scope
from agentfy.runtime.call_policy import CallPolicy
from agentfy.runtime.model import ModelProvider
from agentfy.runtime.offline import OfflineProvider
from agentfy.runtime.openai_compat import OpenAIClients, OpenAICompatibleProvider
from agentfy.store.db import Tx
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import credentials
from agentfy.store.repos.agents import Agent
from agentfy.store.repos.credentials import CredentialCipher

if TYPE_CHECKING:  # imported with the first agent on Anthropic's API (see ProviderFactory.anthropic_clients)
    from agentfy.runtime.anthropic_messages import AnthropicClients

OFFLINE: Final = "offline"
OPENAI: Final = "openai"
ANTHROPIC: Final = "anthropic"
PROVIDERS: Final = (OFFLINE, OPENAI, ANTHROPIC)
DEFAULT_CONTEXT_WINDOW: Final = 8_000
#: Anthropic's API root (the SDK adds ``/v1/messages``).
ANTHROPIC_BASE_URL: Final = "https://api.anthropic.com"
#: The longest answer an Anthropic model may write when the configuration says nothing (tokens): the API
#: requires a bound; a few pages of text, and room for a tool call's arguments.
DEFAULT_MAX_TOKENS: Final = 4_096
#: The bounds of a configured ``max_tokens`` (a model's own limit may be lower: the API then answers 400).
MAX_TOKENS_MIN: Final = 1
MAX_TOKENS_MAX: Final = 1_000_000
#: The smallest context window a configuration may state (tokens).
CONTEXT_WINDOW_MIN: Final = 500


class ModelConfigError(ValueError):
    """The agent's model configuration cannot be used (the message says which field and what is expected).

    ``field`` is the path of the offending field as the caller wrote it (``config.model.base_url`` in an
    agent's configuration, ``base_url`` in the body of ``PUT /v1/agents/{agent}/model``), ``value`` the value
    (``None`` when it is absent or not a scalar), ``expected`` what would do."""

    def __init__(self, message: str, *, field: str | None = None, value: object = None,
                 expected: str | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.value = value if isinstance(value, str | int | float) and not isinstance(value, bool) else None
        self.expected = expected


def is_http_url(value: str) -> bool:
    """Whether a request can be sent to ``value``: http(s), a host, parsed as the HTTP client parses it."""
    if not value.startswith(("https://", "http://")):
        return False
    try:
        return bool(httpx.URL(value).host)
    except (httpx.InvalidURL, ValueError, TypeError):
        return False


def _path(field: str, name: str) -> str:
    return f"{field}.{name}" if field else name


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """An agent's ``config["model"]``, checked (:meth:`parse`, the one validator of a model configuration)."""

    provider: str = OFFLINE
    base_url: str | None = None
    model: str | None = None
    credential: str | None = None
    context_window: int = DEFAULT_CONTEXT_WINDOW
    #: The longest answer in tokens: Anthropic only (the API requires it), ``None`` for the other providers.
    max_tokens: int | None = None

    @classmethod
    def of(cls, agent: Agent) -> ModelSettings:
        """The settings of ``agent``'s ``config.model`` (:meth:`parse`; the message names the agent)."""
        raw: Any = agent.config.get("model") if isinstance(agent.config, dict) else None
        try:
            return cls.parse(raw)
        except ModelConfigError as error:
            raise ModelConfigError(f"agent {agent.agent_key}: {error}", field=error.field, value=error.value,
                                   expected=error.expected) from None

    @classmethod
    def parse(cls, raw: object, *, field: str = "config.model") -> ModelSettings:
        """``raw`` (a model configuration: ``None`` for the default) checked, or :class:`ModelConfigError`
        naming the field (``field`` is where ``raw`` sits: ``config.model`` in an agent's configuration, ``""``
        for a body that is the configuration itself), the value and what was expected.

        The runtime (every run), the API (``PUT /v1/agents/{agent}/model``) and the command line call this:
        a configuration one of them accepts, the others accept."""
        if raw is None:
            return cls()
        if not isinstance(raw, dict):
            raise ModelConfigError(f"{field or 'the model configuration'} {raw!r:.100} must be an object like "
                                   '{"provider": "openai", "base_url": …, "model": …}', field=field or None,
                                   value=raw, expected="an object")
        provider = raw.get("provider", OFFLINE)
        if provider not in PROVIDERS:
            raise ModelConfigError(f"{_path(field, 'provider')} {provider!r:.100} is unknown; expected one of "
                                   f"{', '.join(PROVIDERS)}", field=_path(field, "provider"), value=provider,
                                   expected=" or ".join(PROVIDERS))
        window = raw.get("context_window", DEFAULT_CONTEXT_WINDOW)
        if type(window) is not int or window < CONTEXT_WINDOW_MIN:
            raise ModelConfigError(f"{_path(field, 'context_window')} {window!r:.100} must be an integer of at "
                                   f"least {CONTEXT_WINDOW_MIN} (tokens)", field=_path(field, "context_window"),
                                   value=window, expected=f"an integer >= {CONTEXT_WINDOW_MIN}")
        fields = {name: raw.get(name) for name in ("base_url", "model", "credential")}
        for name, value in fields.items():
            if value is not None and (not isinstance(value, str) or not value):
                raise ModelConfigError(f"{_path(field, name)} {value!r:.100} must be a non-empty string",
                                       field=_path(field, name), value=value, expected="a non-empty string")
        if fields["credential"] is not None and credentials.name_problem(fields["credential"]) is not None:
            problem = credentials.name_problem(fields["credential"])
            raise ModelConfigError(f"{_path(field, 'credential')} {fields['credential']!r:.100}: {problem}",
                                   field=_path(field, "credential"), value=fields["credential"],
                                   expected="a credential name (a lower-case slug)")
        if provider == ANTHROPIC and fields["base_url"] is None:
            fields["base_url"] = ANTHROPIC_BASE_URL
        if provider in (OPENAI, ANTHROPIC):
            for name in ("base_url", "model"):
                if fields[name] is None:
                    raise ModelConfigError(f"{_path(field, name)} is required for provider {provider!r}",
                                           field=_path(field, name), expected="a non-empty string")
            if not is_http_url(str(fields["base_url"])):
                example = ANTHROPIC_BASE_URL if provider == ANTHROPIC else "https://api.openai.com/v1"
                raise ModelConfigError(f"{_path(field, 'base_url')} {fields['base_url']!r:.200} is not an http(s) "
                                       "URL with a host", field=_path(field, "base_url"), value=fields["base_url"],
                                       expected=f"an http:// or https:// URL, e.g. {example}")
        return cls(provider, fields["base_url"], fields["model"], fields["credential"], window,
                   _max_tokens(raw, field, provider))

    def as_config(self) -> dict[str, Any]:
        """These settings as an agent's ``config.model`` (unset fields left out): what :meth:`parse` reads back."""
        config: dict[str, Any] = {"provider": self.provider, "context_window": self.context_window}
        config.update({name: value for name, value in (("base_url", self.base_url), ("model", self.model),
                                                       ("credential", self.credential),
                                                       ("max_tokens", self.max_tokens)) if value is not None})
        return config


def _max_tokens(raw: dict[str, Any], field: str, provider: str) -> int | None:
    """``max_tokens``: for Anthropic an integer in bounds (default :data:`DEFAULT_MAX_TOKENS`); no other provider
    takes it (it would be ignored, which a person setting it would not expect)."""
    value = raw.get("max_tokens")
    path = _path(field, "max_tokens")
    if provider != ANTHROPIC:
        if value is not None:
            raise ModelConfigError(f"{path} applies to provider {ANTHROPIC!r} only, not {provider!r}", field=path,
                                   value=value, expected=f"no max_tokens for provider {provider!r}")
        return None
    if value is None:
        return DEFAULT_MAX_TOKENS
    if type(value) is not int or not MAX_TOKENS_MIN <= value <= MAX_TOKENS_MAX:
        raise ModelConfigError(f"{path} {value!r:.100} must be an integer from {MAX_TOKENS_MIN} to {MAX_TOKENS_MAX} "
                               "(tokens of one answer)", field=path, value=value,
                               expected=f"an integer from {MAX_TOKENS_MIN} to {MAX_TOKENS_MAX}")
    return value


class Providers:
    """Picks each run's provider from the agent's configuration.

    ``offline`` is shared (it keeps no per-run state beyond its script); an OpenAI-compatible or Anthropic
    provider is built per run with the organization's credential, ``policy`` (its tries and timeout; default
    :class:`~agentfy.runtime.call_policy.CallPolicy`) and this process's SDK clients, one per base URL and key
    (:mod:`agentfy.runtime.sdk_clients`): ``clients`` for the ``openai`` SDK, ``anthropic_clients`` for the
    ``anthropic`` one; :meth:`aclose` closes them all at shutdown.
    """

    def __init__(self, *, offline: ModelProvider | None = None, cipher: CredentialCipher | None = None,
                 policy: CallPolicy | None = None, clients: OpenAIClients | None = None,
                 anthropic_clients: AnthropicClients | None = None) -> None:
        self.offline: ModelProvider = offline if offline is not None else OfflineProvider()
        self.cipher = cipher
        self.policy = policy if policy is not None else CallPolicy()
        self.clients = clients if clients is not None else OpenAIClients()
        self._anthropic_clients = anthropic_clients

    @property
    def anthropic_clients(self) -> AnthropicClients:
        """The ``anthropic`` SDK's clients, made with the first agent on Anthropic's API: importing that SDK
        costs every process seconds of CPU at start, and most platforms have no such agent."""
        if self._anthropic_clients is None:
            from agentfy.runtime.anthropic_messages import AnthropicClients  # noqa: PLC0415

            self._anthropic_clients = AnthropicClients()
        return self._anthropic_clients

    @anthropic_clients.setter
    def anthropic_clients(self, clients: AnthropicClients) -> None:
        self._anthropic_clients = clients

    async def aclose(self) -> None:
        """Close the SDK clients (their connections) of the running loop."""
        await self.clients.aclose()
        if self._anthropic_clients is not None:
            await self._anthropic_clients.aclose()

    def for_agent(self, tx: Tx, scope: Scope, agent: Agent, settings: ModelSettings) -> ModelProvider:
        """The provider of ``agent`` (reads the credential in ``tx``, the run's tenant)."""
        if settings.provider == OFFLINE:
            return self.offline
        assert settings.base_url is not None and settings.model is not None
        api_key = self._api_key(tx, scope, agent, settings)
        if settings.provider == ANTHROPIC:
            from agentfy.runtime.anthropic_messages import AnthropicMessagesProvider  # noqa: PLC0415

            assert settings.max_tokens is not None
            return AnthropicMessagesProvider(base_url=settings.base_url, model=settings.model,
                                             max_tokens=settings.max_tokens, api_key=api_key,
                                             clients=self.anthropic_clients, policy=self.policy)
        return OpenAICompatibleProvider(base_url=settings.base_url, model=settings.model, api_key=api_key,
                                        clients=self.clients, policy=self.policy)

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
