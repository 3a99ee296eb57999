"""Every setting of agentfy in one typed object: server, workers, event bus, consolidation, pool, caches,
logging, telemetry, the runtime, the cron scheduler, keys and limits.

Why one object: a setting read in five places drifts (two processes started differently disagree on a lease
or a key), cannot be listed, and cannot be checked before anything starts.  Here each setting has one name,
one type, one default and one validation, and ``agentfy config show`` prints what is in effect and where it
came from.

Where values come from, lowest to highest precedence:

1. the defaults below;
2. the environment: ``AGENTFY_<FIELD>`` for top-level fields, ``AGENTFY_<SECTION>_<FIELD>`` for a section
   (``AGENTFY_DB_POOL_SIZE``, ``AGENTFY_EVENTS_LEASE_SECONDS``, ``AGENTFY_LOG_FORMAT``);
3. a TOML file named by ``--config`` or ``$AGENTFY_CONFIG_FILE`` (top-level keys, and one table per section:
   ``[db] pool_size = 4``);
4. command-line options.

A bad value fails when the settings are built, naming the setting, the value and what was expected.
Secrets are :class:`pydantic.SecretStr`: they print masked everywhere, ``config show`` included.

Built once, at the edge, and passed down: :func:`load_settings` is the only reader of the environment and the
file, called by the command line (each command builds its settings from its options), by the ASGI factory
of ``agentfy serve`` (:mod:`agentfy.gateway.server`) and by tests; no component reads the configuration of
the process itself.  :class:`Settings` constructed directly holds the defaults and whatever it is given,
never the environment.  Each section is defined once, by the component it configures (the pool by the store,
the bus and the consolidation pipeline by the events, the platforms' APIs by the channels); this module
composes them.

``agentfy serve`` with several server processes hands the settings it resolved to each of them in one
variable, :data:`RESOLVED_SETTINGS_ENV` (:func:`serialized` / :func:`inherited_settings`), so every process
serves with exactly the same settings and none reads the environment or the file again.
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from agentfy.channels.settings import API_TIMEOUT_SECONDS, ChannelSettings, DiscordSettings, TelegramSettings
from agentfy.events.consolidation.settings import ConsolidationSettings
from agentfy.events.settings import BusSettings
from agentfy.logs import LogSettings
from agentfy.runtime.mcp.settings import McpSettings
from agentfy.runtime.scheduler_settings import SchedulerSettings
from agentfy.runtime.settings import RuntimeSettings
from agentfy.store.pool import PoolSettings
from agentfy.tracing import TelemetrySettings

ENV_PREFIX: Final = "AGENTFY_"
CONFIG_FILE_ENV: Final = "AGENTFY_CONFIG_FILE"
#: The settings ``agentfy serve`` resolved, as JSON (secrets included), for the server processes it starts.
RESOLVED_SETTINGS_ENV: Final = "AGENTFY_RESOLVED_SETTINGS"
DEFAULT_DATABASE_URL: Final = "sqlite:///var/agentfy.db"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ServeSettings(_Section):
    """``agentfy serve``: where it listens, how many gateway processes, whether the event workers run
    inside them (turn that off when separate ``agentfy worker`` processes consume the bus), and whether it
    serves the operator console at ``/console`` (off: only the API and the chat pages; the console adds no
    work to the API's requests either way, it is a separate application mounted after the API's routes)."""

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    workers: int = Field(default=1, ge=1, le=64)
    event_workers: bool = True
    console: bool = True


class CacheSettings(_Section):
    """How long cached entries live without a change heard from the change feed — a backstop: the feed drops
    an entry on every committed change that makes it stale.  ``router_ttl_seconds``: agents;
    ``principal_ttl_seconds``: credentials of reads (writes always check the credential in the database)."""

    router_ttl_seconds: float = Field(default=300.0, gt=0)
    principal_ttl_seconds: float = Field(default=60.0, gt=0)


class Settings(BaseModel):
    """The effective configuration of one agentfy process (frozen: built once, passed down)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    database_url: str = DEFAULT_DATABASE_URL
    #: base64 of at least 32 bytes; signs the short-lived signed contexts.  Unset: :attr:`signing_key_file`.
    signing_key: SecretStr | None = None
    #: Unset: a file per database (see :func:`agentfy.keys.default_key_file`), created with mode 0600 on
    #: first use.
    signing_key_file: Path | None = None
    #: base64 of 32 bytes (AES-256) for stored credentials.  Unset: :attr:`credentials_key_file`.
    credentials_key: SecretStr | None = None
    credentials_key_file: Path | None = None
    #: Adopt this platform-admin API key instead of issuing (and printing) one on the first start.
    admin_api_key: SecretStr | None = None
    #: The largest request body (bytes) outside the vault's upload.
    body_max_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    #: Where agents' workspaces (their files) live; unset: ``workspaces/`` beside a SQLite database, else
    #: ``var/workspaces``.
    workspace_root: Path | None = None
    channel_api_timeout_seconds: float = Field(default=API_TIMEOUT_SECONDS, gt=0, le=300)
    telegram: TelegramSettings = TelegramSettings()
    discord: DiscordSettings = DiscordSettings()
    serve: ServeSettings = ServeSettings()
    db: PoolSettings = PoolSettings()
    events: BusSettings = BusSettings()
    consolidation: ConsolidationSettings = ConsolidationSettings()
    cache: CacheSettings = CacheSettings()
    log: LogSettings = LogSettings()
    telemetry: TelemetrySettings = TelemetrySettings()
    runtime: RuntimeSettings = RuntimeSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    mcp: McpSettings = McpSettings()

    def channels(self) -> ChannelSettings:
        """The part of the settings the channels' webhooks are given."""
        return ChannelSettings(telegram=self.telegram, discord=self.discord,
                               api_timeout_seconds=self.channel_api_timeout_seconds)


class _FromSources(Settings, BaseSettings):
    """:class:`Settings` read from the command line, the file and the environment: what :func:`load_settings`
    builds (and then hands on as a plain :class:`Settings`).  Private: nothing else reads the environment."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, env_nested_delimiter="_", env_nested_max_split=1,
                                      frozen=True, extra="forbid")

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        # CLI (init) over the file over the environment; no .env or secrets directory is read implicitly.
        return (init_settings, _FileSource(settings_cls), env_settings)


class _FileSource(PydanticBaseSettingsSource):
    """The TOML file handed over by :func:`load_settings` (a module-level slot: pydantic-settings builds the
    sources itself, so the path cannot be passed as an argument)."""

    data: Mapping[str, Any] = {}

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self.data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self.data)


class SettingsError(ValueError):
    """A setting (or the config file) is invalid; the message names each bad setting, value and rule."""


def read_config_file(path: Path) -> dict[str, Any]:
    """The TOML document at ``path``, or :class:`SettingsError` saying what is wrong with it."""
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except FileNotFoundError:
        raise SettingsError(f"config file {str(path)!r} does not exist") from None
    except PermissionError:
        raise SettingsError(f"config file {str(path)!r} cannot be read (permission denied)") from None
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"config file {str(path)!r} is not valid TOML: {error}") from None


def load_settings(cli: Mapping[str, Any] | None = None, *, config_file: Path | None = None) -> Settings:
    """The effective settings: ``cli`` (dotted names such as ``"db.pool_size"``, ``None`` values ignored)
    over the config file (``config_file``, else ``$AGENTFY_CONFIG_FILE``) over the environment over the
    defaults.  Call it at an edge (a command, a server process's factory, a test), once, and pass the result
    down."""
    path = config_path(config_file)
    _FileSource.data = read_config_file(path) if path else {}
    overrides = _nest({name: value for name, value in (cli or {}).items() if value is not None})
    try:
        sourced = _FromSources(**overrides)
    except ValidationError as error:
        raise SettingsError(describe(error)) from None
    finally:
        _FileSource.data = {}
    return Settings.model_validate(dict(sourced))


def config_path(explicit: Path | None) -> Path | None:
    """The config file in use: ``explicit`` (``--config``), else ``$AGENTFY_CONFIG_FILE``, else none."""
    named = os.environ.get(CONFIG_FILE_ENV)
    return explicit or (Path(named) if named else None)


def describe(error: ValidationError) -> str:
    """One line per problem: the setting, the value given and the rule it broke."""
    problems = []
    for problem in error.errors():
        name = ".".join(str(part) for part in problem["loc"])
        message = str(problem["msg"]).removeprefix("Value error, ")
        given = problem.get("input")
        if name and not isinstance(given, dict):
            problems.append(f"{name} {_masked(name, given)!r}: {message}")
        else:
            problems.append(f"{name + ': ' if name else ''}{message}")
    return "invalid setting: " + "; ".join(problems)


def _masked(name: str, value: Any) -> Any:
    return "********" if _is_secret_name(name) and value not in (None, "") else value


def _is_secret_name(name: str) -> bool:
    return name.rsplit(".", 1)[-1] in {"signing_key", "credentials_key", "admin_api_key"}


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for name, value in flat.items():
        section, _, field = name.partition(".")
        if field:
            nested.setdefault(section, {})[field] = value
        else:
            nested[name] = value
    return nested


@dataclass(frozen=True, slots=True)
class Effective:
    """One setting as ``config show`` prints it."""

    name: str
    environment_variable: str
    value: str
    source: str


def effective(settings: Settings, cli: Mapping[str, Any] | None = None, *,
              config_file: Path | None = None) -> Iterator[Effective]:
    """Each setting's value (secrets masked) and where it came from: ``cli``, ``file <path>``,
    ``env $NAME`` or ``default``; the same sources :func:`load_settings` was given."""
    env = os.environ
    path = config_path(config_file)
    file_data = read_config_file(path) if path else {}
    given = {name for name, value in (cli or {}).items() if value is not None}
    for name, value in _leaves(settings.model_dump()):
        variable = ENV_PREFIX + name.replace(".", "_").upper()
        section, _, field = name.partition(".")
        in_file = (section in file_data and isinstance(file_data[section], Mapping) and field in file_data[section]
                   ) if field else name in file_data
        source = ("cli" if name in given else f"file {path}" if in_file else
                  f"env ${variable}" if env.get(variable) not in (None, "") else "default")
        shown = "********" if _is_secret_name(name) and value is not None else (
            "" if value is None else str(value))
        yield Effective(name, variable, shown, source)


def _leaves(values: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for name, value in values.items():
        if isinstance(value, Mapping):
            yield from _leaves(value, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", value


def serialized(settings: Settings) -> str:
    """``settings`` as one JSON document, secrets revealed (for the processes ``agentfy serve`` starts, in
    :data:`RESOLVED_SETTINGS_ENV`; never printed): :func:`inherited_settings` reads it back unchanged."""
    def plain(value: Any) -> Any:
        if isinstance(value, SecretStr):
            return value.get_secret_value()
        if isinstance(value, Mapping):
            return {name: plain(item) for name, item in value.items()}
        return str(value) if isinstance(value, Path) else value

    return json.dumps(plain(settings.model_dump()))


def inherited_settings() -> Settings | None:
    """The settings the parent ``agentfy serve`` resolved and handed down in :data:`RESOLVED_SETTINGS_ENV`;
    ``None`` when this process was not started that way (then its edge calls :func:`load_settings`)."""
    text = os.environ.get(RESOLVED_SETTINGS_ENV)
    if not text:
        return None
    try:
        return Settings.model_validate_json(text)
    except ValidationError as error:
        raise SettingsError(describe(error)) from None
