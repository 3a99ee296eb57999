"""``POST /v1/channels/discord/{application}/interactions``: one Discord application's interactions endpoint.

Not authenticated by an API key: by Discord's Ed25519 signature of the body, verified by
:func:`verify_discord` against the public key of the application's binding (found by the ID in the path);
an unknown application, a missing, malformed or wrong signature, or a stale timestamp are the same 401, and
nothing else happens.  The tenant and agent are the binding's.  A PING is answered PONG; a slash command is
answered "thinking…" (a deferred response, type 5) at once, and the agent's turn and the reply (through the
REST API) run after the response (:mod:`agentfy.channels.delivery`): Discord allows 3 seconds for the first
answer.  A failed run replaces "thinking…" with the failure note (:mod:`agentfy.runtime.failures`).  A
command that is not for the agent gets an ephemeral message saying why; so does a command run in a DM by a
sender the agent's DM policy refuses (:mod:`agentfy.channels.access`: the refusal, or the pairing code, which
only the sender sees), and nothing reaches the runtime.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Final

from fastapi import APIRouter, BackgroundTasks, Depends, Request
from fastapi.concurrency import run_in_threadpool

from agentfy.channels import access, discord
from agentfy.channels.delivery import Surface, run_turn
from agentfy.channels.discord_api import send_reply
from agentfy.channels.discord_interactions import PING, Interaction
from agentfy.channels.payloads import parse_body
from agentfy.channels.state import ChannelState, channels_of
from agentfy.errors import ApiError
from agentfy.runtime.inbound import Reply
from agentfy.store.repos import channel_access
from agentfy.store.repos import channels as bindings
from agentfy.store.repos.channel_access import ChannelPolicy
from agentfy.store.repos.channels import ChannelBinding

SIGNATURE_HEADER: Final = "x-signature-ed25519"
TIMESTAMP_HEADER: Final = "x-signature-timestamp"
PONG: Final = {"type": 1}
DEFERRED_MESSAGE: Final = {"type": 5}
#: An answer only the user who ran the command sees (Discord's EPHEMERAL flag).
EPHEMERAL: Final = 64

router = APIRouter(tags=["channels"])


def refused() -> ApiError:
    return ApiError(401, "unauthorized", "the request is not signed by this application's key "
                    f"({SIGNATURE_HEADER}, {TIMESTAMP_HEADER})")


@dataclass(frozen=True, slots=True)
class _Signed:
    """What one transaction read for a request whose signature held: the binding and its agent's policy."""

    binding: ChannelBinding
    policy: ChannelPolicy


def _find_signed(state: ChannelState, application: str, signature: str, timestamp: str,
                 body: bytes) -> _Signed | None:
    """The binding of ``application`` and its agent's access policy, if the body carries the binding's
    signature; else ``None`` (the policy is read only once the signature held)."""
    with state.db.transaction(write=False) as tx:
        binding = bindings.find_binding(tx, "discord", application)
        if binding is None or not discord.signature_holds(binding.verifier, signature, timestamp, body):
            return None
        return _Signed(binding, channel_access.get_policy(tx, binding.scope, binding.agent_id))


async def verify_discord(request: Request, application: str) -> ChannelBinding:
    """The binding of the application named in the path, if the body carries its signature; else 401.

    One hop to a worker thread and one read transaction per interaction: the binding is found, the signature
    checked and the agent's policy read there (kept on ``request.state`` for :func:`discord_interactions`);
    each hop and transaction is a round trip on PostgreSQL, and an interaction used to take three of each."""
    signature = request.headers.get(SIGNATURE_HEADER, "")
    timestamp = request.headers.get(TIMESTAMP_HEADER, "")
    if not (discord.APPLICATION_ID.fullmatch(application) and signature and timestamp):
        raise refused()
    signed = await run_in_threadpool(_find_signed, channels_of(request), application, signature, timestamp,
                                     await request.body())
    if signed is None:
        raise refused()
    request.state.discord = signed
    return signed.binding


def _policy(request: Request, state: ChannelState, binding: ChannelBinding) -> ChannelPolicy:
    """The policy :func:`verify_discord` read for this request (read again if the route was called without it)."""
    signed = getattr(request.state, "discord", None)
    if isinstance(signed, _Signed) and signed.binding is binding:
        return signed.policy
    return access.policy_of(state.db, binding)


DiscordApplication = Annotated[ChannelBinding, Depends(verify_discord)]


@router.post("/channels/discord/{application}/interactions", operation_id="channels.discord.interactions",
             include_in_schema=False)
async def discord_interactions(application: str, request: Request, binding: DiscordApplication,
                               background: BackgroundTasks) -> dict[str, Any]:
    """Answer one interaction (see the module docstring)."""
    state = channels_of(request)
    interaction = parse_body(Interaction, await request.body())
    if interaction.type == PING:
        return PONG
    found = discord.addressed(interaction, binding)
    if isinstance(found, str):
        return {"type": 4, "data": {"content": f"Not sent to the agent: {found}.", "flags": EPHEMERAL}}
    policy = _policy(request, state, binding)
    verdict = (await run_in_threadpool(access.admit, state.db, binding, policy, found.sender_id,
                                       direct=found.direct)
               if access.reads_senders(policy, direct=found.direct) else access.ADMITTED)
    if not verdict.admitted:
        return {"type": 4, "data": {"content": verdict.reply or f"Not sent to the agent: {verdict.reason}.",
                                    "flags": EPHEMERAL}}
    handler = state.require_handler()

    async def send(reply: Reply) -> None:
        await send_reply(state.client(), state.settings.discord.api_base, found, reply.text)

    async def fail(note: str) -> None:  # the failure note replaces "thinking…"
        await send_reply(state.client(), state.settings.discord.api_base, found, note)

    background.add_task(run_turn, handler, found.inbound, Surface(send, fail))
    return DEFERRED_MESSAGE
