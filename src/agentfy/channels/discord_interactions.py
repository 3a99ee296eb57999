"""The part of a Discord interaction that a chat agent reads, as strict pydantic models (our own, for the
reasons :mod:`agentfy.channels.telegram_updates` gives: a few fields of one JSON document, one error
contract).  Snowflakes are JSON strings of digits (Discord sends them so: they exceed JavaScript's integers).
Unknown fields are ignored; known ones are strict."""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: The interaction types handled here (Discord's numbering).
PING: Final = 1
APPLICATION_COMMAND: Final = 2
#: Discord's limit on a slash-command option's string; anything over it is not a real interaction.
OPTION_MAX_CHARS: Final = 6000

Snowflake = Annotated[str, Field(pattern=r"^[0-9]{1,20}$")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True)


class DiscordUser(_Model):
    id: Snowflake
    bot: bool = False


class DiscordMember(_Model):
    user: DiscordUser


class CommandOption(_Model):
    name: Annotated[str, Field(max_length=100)]
    type: Annotated[int, Field(ge=1, le=11)]
    value: str | int | float | bool | None = None

    @field_validator("value")
    @classmethod
    def _bounded(cls, value: str | int | float | bool | None) -> str | int | float | bool | None:
        if isinstance(value, str) and len(value) > OPTION_MAX_CHARS:
            raise ValueError(f"an option's text is at most {OPTION_MAX_CHARS} characters, got {len(value)}")
        return value


class CommandData(_Model):
    name: Annotated[str, Field(max_length=100)]
    options: Annotated[list[CommandOption], Field(max_length=25)] = []


class Interaction(_Model):
    """One interactions-endpoint delivery: a PING, or a slash command (``/ask message:<text>``)."""

    id: Snowflake
    application_id: Snowflake
    type: Annotated[int, Field(ge=1, le=5)]
    token: Annotated[str, Field(max_length=1000)] = ""
    guild_id: Snowflake | None = None
    channel_id: Snowflake | None = None
    member: DiscordMember | None = None
    user: DiscordUser | None = None
    data: CommandData | None = None
