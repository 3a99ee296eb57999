"""The part of the Telegram Bot API's ``Update`` that a chat agent reads, as strict pydantic models.

Why our own models rather than python-telegram-bot or aiogram: those are whole bot frameworks (their own
HTTP clients, dispatchers, polling loops, many dependencies) for what is here six fields of one JSON
document; the gateway already validates with pydantic, and strict models give the one error contract (a
422 naming the field) for free.  Unknown fields are ignored (the Bot API adds fields often); known ones are
strict: a string where an integer belongs, an integer beyond 64 bits, or a missing required field is
refused, never coerced.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

INT64_MAX: Final = 2**63 - 1
#: Telegram's own limit on a message's text and a caption is 4096 characters; anything far over it is not
#: a real update.
TEXT_MAX_CHARS: Final = 16384

ChatId = Annotated[int, Field(ge=-INT64_MAX, le=INT64_MAX)]
UserId = Annotated[int, Field(ge=0, le=INT64_MAX)]
Text = Annotated[str, Field(max_length=TEXT_MAX_CHARS)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True, frozen=True, populate_by_name=True)


class TelegramUser(_Model):
    id: UserId
    is_bot: bool = False
    username: Annotated[str, Field(max_length=64)] | None = None


class TelegramChat(_Model):
    id: ChatId
    type: Literal["private", "group", "supergroup", "channel"]


class RepliedMessage(_Model):
    """The message a message replies to (only who sent it matters here)."""

    message_id: UserId
    sender: TelegramUser | None = Field(default=None, alias="from")


class TelegramMessage(_Model):
    message_id: UserId
    chat: TelegramChat
    sender: TelegramUser | None = Field(default=None, alias="from")
    text: Text | None = None
    caption: Text | None = None
    reply_to_message: RepliedMessage | None = None


class TelegramUpdate(_Model):
    """One webhook delivery.  Only ``message`` is answered; edits, channel posts, callbacks and the rest
    are acknowledged and ignored."""

    update_id: Annotated[int, Field(ge=0, le=INT64_MAX)]
    message: TelegramMessage | None = None
