"""``POST /v1/channels/telegram/{bot}/webhook``: Telegram's webhook for one bot.

Not authenticated by an API key (Telegram cannot send one): by the secret token given to ``setWebhook``,
which Telegram sends in ``X-Telegram-Bot-Api-Secret-Token``.  :func:`verify_telegram` finds the bot's
binding by the username in the path and compares the header's SHA-256 with the stored one in constant time;
an unknown bot, a missing or wrong token are the same 401, and nothing else happens.  The tenant and agent
are the binding's.  Then the update is parsed (422 naming the field if it is not an update), the message
checked for being addressed to the bot under the agent's group policy (200 ``{"ok": true, "ignored": reason}``
if not), a DM's sender checked against the agent's DM policy (:mod:`agentfy.channels.access`: a refused sender
is sent the refusal or a pairing code, and nothing reaches the runtime), and accepted (200): the agent's turn
and the reply run after the response (:mod:`agentfy.channels.delivery`): a quick reply sent as one message, a
slow one edited as it streams in, and either replaced by the failure note if the run fails
(:mod:`agentfy.channels.telegram_stream`).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Annotated, Any, Final

from fastapi import APIRouter, BackgroundTasks, Depends, Request
from fastapi.concurrency import run_in_threadpool

from agentfy.channels import access, telegram
from agentfy.channels.delivery import Surface, logger, run_turn
from agentfy.channels.payloads import parse_body
from agentfy.channels.state import ChannelState, channels_of
from agentfy.channels.telegram_api import send_reply
from agentfy.channels.telegram_stream import TelegramReply
from agentfy.channels.telegram_updates import TelegramUpdate
from agentfy.errors import ApiError
from agentfy.store.repos import channel_access
from agentfy.store.repos import channels as bindings
from agentfy.store.repos.channel_access import ChannelPolicy
from agentfy.store.repos.channels import ChannelBinding

SECRET_HEADER: Final = "x-telegram-bot-api-secret-token"  # noqa: S105 - a header name
#: Telegram's rule for the secret token: 1-256 characters of A-Z, a-z, 0-9, ``_`` and ``-``.
SECRET_MAX_LENGTH: Final = 256
_NOTHING: Final = hashlib.sha256(b"").hexdigest()

router = APIRouter(tags=["channels"])


def secret_digest(secret: str) -> str:
    """What a binding stores of its secret token (the token itself is never stored)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def refused() -> ApiError:
    return ApiError(401, "unauthorized", f"the {SECRET_HEADER} header does not match this bot's secret token")


@dataclass(frozen=True, slots=True)
class _Verified:
    """What one transaction read for a request whose secret token matched: the agent's access policy and the
    bot token (``None``: read it when replying, as a binding whose token cannot be read now is)."""

    policy: ChannelPolicy
    token: str | None


async def verify_telegram(request: Request, bot: str) -> ChannelBinding:
    """The binding of the bot named in the path, if the request carries its secret token; else 401.

    One hop to a worker thread and one read transaction per update: the binding is found and its secret
    compared there, and only once it matched are the agent's policy and the bot token read in the same
    transaction (kept on ``request.state`` for :func:`telegram_webhook`): each hop and transaction is a
    round trip on PostgreSQL, and an update used to take four of each."""
    state = channels_of(request)
    secret = request.headers.get(SECRET_HEADER, "")
    try:
        address, _ = telegram.parse_bot_username(bot)
    except ValueError:
        address = ""
    digest = secret_digest(secret)
    found: tuple[ChannelBinding, _Verified] | None = None
    if address and 0 < len(secret) <= SECRET_MAX_LENGTH:
        found = await run_in_threadpool(_find_verified, state, address, digest)
    else:
        hmac.compare_digest(digest, _NOTHING)  # the same work for a request refused before the look-up
    if found is None:
        raise refused()
    request.state.telegram = found[1]
    return found[0]


def _find_verified(state: ChannelState, address: str, digest: str) -> tuple[ChannelBinding, _Verified] | None:
    """The binding of ``address`` and what the webhook reads of it, if ``digest`` is its secret's; else
    ``None`` (the comparison is made, in constant time, whether or not the bot exists)."""
    with state.db.transaction(write=False) as tx:
        binding = bindings.find_binding(tx, "telegram", address)
        matches = hmac.compare_digest(digest, binding.verifier if binding is not None else _NOTHING)
        if binding is None or not matches:
            return None
        policy = channel_access.get_policy(tx, binding.scope, binding.agent_id)
        try:
            token = bindings.bot_token(tx, state.cipher(), binding)
        except Exception:  # no key, a token that does not decrypt: the reply reports it, as it always did
            token = None
    return binding, _Verified(policy, token)


def _verified(request: Request, state: ChannelState, binding: ChannelBinding) -> _Verified:
    """What :func:`verify_telegram` read for this request (read again if the route was called without it)."""
    verified = getattr(request.state, "telegram", None)
    if isinstance(verified, _Verified):
        return verified
    return _Verified(access.policy_of(state.db, binding), None)


def _token(state: ChannelState, binding: ChannelBinding) -> str | None:
    with state.db.transaction(write=False) as tx:
        return bindings.bot_token(tx, state.cipher(), binding)


TelegramBot = Annotated[ChannelBinding, Depends(verify_telegram)]


@router.post("/channels/telegram/{bot}/webhook", operation_id="channels.telegram.webhook", include_in_schema=False)
async def telegram_webhook(bot: str, request: Request, binding: TelegramBot,
                           background: BackgroundTasks) -> dict[str, Any]:
    """Accept one update for the bot (see the module docstring)."""
    state = channels_of(request)
    update = parse_body(TelegramUpdate, await request.body())
    verified = _verified(request, state, binding)
    policy = verified.policy
    found = telegram.addressed(update, binding, group_policy=policy.group_policy)
    if isinstance(found, str):
        return {"ok": True, "ignored": found}
    direct = not found.in_group
    verdict = (await run_in_threadpool(access.admit, state.db, binding, policy, found.sender_id, direct=direct)
               if access.reads_senders(policy, direct=direct) else access.ADMITTED)
    if not verdict.admitted:
        if verdict.reply is not None:
            background.add_task(_tell, state, binding, found, verdict.reply)
        return {"ok": True, "ignored": verdict.reason}
    handler = state.require_handler()

    async def token() -> str:
        if verified.token is not None:
            return verified.token
        found_token = await run_in_threadpool(_token, state, binding)
        if found_token is None:
            raise ValueError(f"the binding of @{binding.name} has no bot token")
        return found_token

    reply = TelegramReply(state.client(), state.settings.telegram.api_base, token, found, bot=binding.address,
                          throttle=state.telegram_throttle(),
                          hold=state.settings.telegram.first_piece_delay_ms / 1000)
    background.add_task(run_turn, handler, found.inbound, Surface(reply.send, reply.fail, on_text=reply.piece))
    return {"ok": True}


async def _tell(state: ChannelState, binding: ChannelBinding, to: telegram.Addressed, text: str) -> None:
    """Send a refused sender the access policy's answer (never the runtime's); a failure is logged, not raised
    (the update was already acknowledged)."""
    try:
        token = await run_in_threadpool(_token, state, binding)
        if token is not None:
            await send_reply(state.client(), state.settings.telegram.api_base, token, to, text)
    except Exception:
        logger.warning("channels.telegram.access_reply_lost", exc_info=True)
