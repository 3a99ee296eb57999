"""Where the channels reach the chat platforms' APIs: the ``telegram`` and ``discord`` sections of the one
settings object (:mod:`agentfy.settings`) and the part of it the webhooks take.

``telegram.api_base`` (``AGENTFY_TELEGRAM_API_BASE``, default ``https://api.telegram.org``),
``discord.api_base`` (``AGENTFY_DISCORD_API_BASE``, default ``https://discord.com/api/v10``) and
``telegram.edit_interval_seconds`` (``AGENTFY_TELEGRAM_EDIT_INTERVAL_SECONDS``, default 1: how often a reply
that streams in is edited, Telegram's limit being about one message a second per chat),
``telegram.first_piece_delay_ms`` (``AGENTFY_TELEGRAM_FIRST_PIECE_DELAY_MS``, default 75: how long a reply's
first piece is held, so that a reply done by then is sent as one message instead of streamed) and
``channel_api_timeout_seconds`` are settings of :class:`agentfy.settings.Settings`; each section is defined
here, once, and validated when the settings are built (a base that is not an ``http(s)`` URL is refused
naming the setting).  :class:`ChannelSettings` is the frozen value the webhooks are given, so tests can
point the channels at fake servers without touching the environment.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Seconds a call to a chat platform's API may take before it fails (the reply is then logged as lost).
API_TIMEOUT_SECONDS: Final = 30.0
#: Seconds between two edits of a Telegram reply that is streaming in (Telegram allows about one message a
#: second in a chat; an edit counts as one).
EDIT_INTERVAL_SECONDS: Final = 1.0
#: Milliseconds a Telegram reply's first piece is held: a reply the run completes within them is sent whole, as
#: one message (no edits, none of the chat's edit budget spent); a longer one streams.  Short enough that a
#: person does not notice it before a slow reply starts showing; long enough for a model that answers at once.
FIRST_PIECE_DELAY_MS: Final = 75
#: The most the hold may be set to (beyond it a slow reply would show nothing for too long).
FIRST_PIECE_DELAY_MAX_MS: Final = 2000


def _http_url(value: str) -> str:
    if not value.startswith(("http://", "https://")) or any(c.isspace() for c in value):
        raise ValueError(f"{value!r} is not an http(s) URL")
    return value.rstrip("/")


class _PlatformApi(BaseModel):
    """A chat platform's API: ``api_base`` is where replies are sent (an http(s) URL; a fake one in tests)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_base: str

    @field_validator("api_base")
    @classmethod
    def _url(cls, value: str) -> str:
        return _http_url(value)


class TelegramSettings(_PlatformApi):
    """The Bot API server (``api.telegram.org``, or a self-hosted one)."""

    api_base: str = "https://api.telegram.org"
    #: The least time between two progress messages or edits of streaming replies in one chat (all its replies
    #: together), and between two of a group's messages; a private chat's whole replies are not held by it.
    edit_interval_seconds: float = Field(default=EDIT_INTERVAL_SECONDS, ge=0.1, le=60)
    #: How long a reply's first piece is held before the reply starts streaming (0: stream at once); a reply
    #: done within it is one ``sendMessage``, sent the moment it is done.
    first_piece_delay_ms: int = Field(default=FIRST_PIECE_DELAY_MS, ge=0, le=FIRST_PIECE_DELAY_MAX_MS)


class DiscordSettings(_PlatformApi):
    """Discord's REST API."""

    api_base: str = "https://discord.com/api/v10"


class ChannelSettings(BaseModel):
    """The platforms' APIs and the HTTP timeout for calling them, as the webhooks take them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    telegram: TelegramSettings = TelegramSettings()
    discord: DiscordSettings = DiscordSettings()
    api_timeout_seconds: float = Field(default=API_TIMEOUT_SECONDS, gt=0, le=300)
