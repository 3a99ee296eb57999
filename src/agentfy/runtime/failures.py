"""What the person is told when a run fails: one short note, the same on every channel.

Why one place: a person in a Telegram chat, a Discord interaction, the web chat page or the terminal should
learn what failed and what to do, in the same words, and never get silence (a dropped turn) or a stack
trace.  The note names what failed — the model's own :class:`~agentfy.runtime.model.ModelError` message
(the model's base URL and HTTP status or transport error, never a credential), or the configuration problem
of a :class:`~agentfy.runtime.providers.ModelConfigError` (the field, the value and what was expected) — and
what to do: try again later, or ask an admin.  Any other exception is "something went wrong" with a short
reference that is also logged with the exception (so an admin can find it), never the exception's text
(it may carry anything, SQL or a path).
"""

from __future__ import annotations

import secrets

from agentfy.logs import current_identity
from agentfy.runtime.model import ModelError
from agentfy.runtime.providers import ModelConfigError

#: What a person is asked to do when the model keeps failing or is misconfigured: an admin can read and fix
#: the agent's ``config.model`` (``PATCH /v1/agents/{agent}``).
ADMIN_HINT = "ask an admin to check the agent's model settings (`agentfy agents model check {agent}`)"


def failure_reference() -> str:
    """A short reference for an unexpected failure: the request's ID when the failure happened inside one
    (it is on every log record of that request), else a new random one the caller logs with the error."""
    request_id = current_identity().request_id
    return request_id or f"run-{secrets.token_hex(6)}"


def failure_note(error: BaseException, *, agent: str, reference: str | None = None) -> str:
    """The note for the person whose run of ``agent`` (its key) failed with ``error`` (see the module
    docstring); ``reference`` (default :func:`failure_reference`) is named only for an unexpected error, and
    the caller logs the error with it."""
    hint = ADMIN_HINT.format(agent=agent)
    if isinstance(error, ModelError):
        if error.timed_out:
            return (f"The agent's model did not answer in time ({error}). Please try again in a minute; if it "
                    f"keeps failing, {hint}.")
        return (f"The agent's model could not answer ({error}). Please try again in a minute; if it keeps "
                f"failing, {hint}.")
    if isinstance(error, ModelConfigError):
        return f"The agent's model is not configured correctly ({error}). Please {hint}."
    shown = reference or failure_reference()
    return (f"Something went wrong while the agent was answering (reference {shown}). Please try again; if it "
            "keeps failing, give an admin this reference.")
