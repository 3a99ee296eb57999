"""The bodies of the OpenAI-compatible operations, as OpenAI's Chat Completions API spells them.

A request carries whatever else an OpenAI client sends (``temperature``, ``max_tokens``, ``tools``, …): those
fields are accepted and ignored, because the agent's own configuration decides the model's settings.  Of the
messages only the last one is read (it must be the user's, with text); the conversation's history is the
server's, kept in the agent's session.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from agentfy.gateway.chat import TEXT_MAX_LENGTH
from agentfy.gateway.routes.schemas import AGENT_REF_MAX_LENGTH, Strict, text_field
from agentfy.store.inputs import TEXT_PATTERN

#: Every string this server reads follows the input policy (no NUL): the document states it.
_NO_NUL: Final[JsonDict] = {"pattern": TEXT_PATTERN}

#: The most messages a request may carry (all but the last are ignored; the bound keeps a body's cost bounded).
MESSAGES_MAX: Final = 1000


class _Lenient(Strict):
    """OpenAI's bodies grow new fields: a client sending one this server does not read is not an error (it is
    dropped unread).  The fields it does read follow the input policy, as every request model's."""

    model_config = ConfigDict(extra="ignore")


class TextPart(_Lenient):
    type: Literal["text"]
    text: str = Field(max_length=TEXT_MAX_LENGTH, json_schema_extra=_NO_NUL)


class OtherPart(_Lenient):
    """A content part that is not text (an image, audio, a file): accepted, not sent to the agent."""

    type: str = Field(max_length=64, json_schema_extra=_NO_NUL)


Part = Annotated[TextPart | OtherPart, Field(union_mode="left_to_right")]
Content = Annotated[str, Field(max_length=TEXT_MAX_LENGTH, json_schema_extra=_NO_NUL)] | list[Part] | None


class ChatMessageIn(_Lenient):
    role: str = Field(max_length=64, description="system, developer, user, assistant or tool.",
                      json_schema_extra=_NO_NUL)
    content: Content = Field(default=None, description="A string, or a list of content parts (text parts are read).")
    name: str | None = Field(default=None, max_length=256, json_schema_extra=_NO_NUL)


class StreamOptions(_Lenient):
    include_usage: bool = Field(default=False, description="End the stream with a chunk carrying the usage.")


class ChatCompletionRequest(_Lenient):
    model: str = Field(min_length=1, max_length=AGENT_REF_MAX_LENGTH, json_schema_extra=_NO_NUL,
                       description="The agent: its agent_key or ID, in the caller's organization.")
    messages: list[ChatMessageIn] = Field(min_length=1, max_length=MESSAGES_MAX,
                                          description="Only the last is read: the user's message to the agent.")
    stream: bool | None = Field(default=False, description="Answer with chat.completion.chunk server-sent events.")
    stream_options: StreamOptions | None = None
    user: str | None = text_field(100, default=None, description=(
        "The conversation to continue: the same name as `conversation` of POST /v1/agents/{agent}/messages (one "
        "session per name, per person). Absent: a one-off conversation, completed after the reply."))


class UsageOut(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str | None


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"
    logprobs: None = None


class ChatCompletion(BaseModel):
    """A non-streamed answer (``object`` ``chat.completion``)."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: UsageOut


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: Delta
    finish_reason: Literal["stop"] | None = None
    logprobs: None = None


class ChatCompletionChunk(BaseModel):
    """One event of a streamed answer (``object`` ``chat.completion.chunk``)."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: UsageOut | None = None


class Model(BaseModel):
    id: str = Field(description="The agent's agent_key.")
    object: Literal["model"] = "model"
    created: int = Field(description="When the agent was created (seconds since the epoch).")
    owned_by: str = Field(description="The organization's slug.")


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[Model]
