"""Where the channels reach the chat platforms' APIs, as the channels take it from the process's settings.

``telegram.api_base`` (``AGENTFY_TELEGRAM_API_BASE``, default ``https://api.telegram.org``),
``discord.api_base`` (``AGENTFY_DISCORD_API_BASE``, default ``https://discord.com/api/v10``) and
``channel_api_timeout_seconds`` live in :class:`agentfy.settings.Settings` (validated there: a base that is
not an ``http(s)`` URL is refused naming the setting); this frozen value is the part the webhooks need, so
tests can point the channels at fake servers without touching the environment.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agentfy.settings import API_TIMEOUT_SECONDS, Settings


class ChannelSettings(BaseModel):
    """The platforms' API base URLs (no trailing slash) and the HTTP timeout for calling them."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    telegram_api_base: str = "https://api.telegram.org"
    discord_api_base: str = "https://discord.com/api/v10"
    channel_api_timeout_seconds: float = Field(default=API_TIMEOUT_SECONDS, gt=0, le=300)

    @classmethod
    def from_settings(cls, settings: Settings) -> ChannelSettings:
        return cls(telegram_api_base=settings.telegram.api_base, discord_api_base=settings.discord.api_base,
                   channel_api_timeout_seconds=settings.channel_api_timeout_seconds)
