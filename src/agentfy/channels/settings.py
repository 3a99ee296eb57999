"""Where the channels reach the chat platforms' APIs: one settings object, read from the environment.

``AGENTFY_TELEGRAM_API_BASE`` (default ``https://api.telegram.org``) and ``AGENTFY_DISCORD_API_BASE``
(default ``https://discord.com/api/v10``).  Tests and self-hosted Bot API servers point them elsewhere; a
value that is not an ``http(s)`` URL fails when the settings are built, naming the variable.
"""

from __future__ import annotations

from typing import Final

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ENV_PREFIX: Final = "AGENTFY_"
#: Seconds a call to a platform's API may take before it fails (the reply is then logged as lost).
API_TIMEOUT_SECONDS: Final = 30.0


class ChannelSettings(BaseSettings):
    """The platforms' API base URLs (no trailing slash needed) and the HTTP timeout for calling them."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, frozen=True, extra="ignore")

    telegram_api_base: str = "https://api.telegram.org"
    discord_api_base: str = "https://discord.com/api/v10"
    channel_api_timeout_seconds: float = Field(default=API_TIMEOUT_SECONDS, gt=0, le=300)

    @field_validator("telegram_api_base", "discord_api_base")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")) or any(c.isspace() for c in value):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value.rstrip("/")
