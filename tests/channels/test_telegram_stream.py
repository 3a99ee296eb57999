"""The pace of Telegram replies is the chat's, not the reply's: two replies streaming into one group at once
never send or edit closer together than the interval (Telegram counts every message and edit in a chat), a
reply in another chat is not held by them, and each reply still ends showing its whole text."""

from __future__ import annotations

import asyncio
import itertools

import httpx

from agentfy.channels.telegram import Addressed
from agentfy.channels.telegram_stream import CHATS_KEPT, ChatThrottle, TelegramReply
from agentfy.identity import AgentKey
from agentfy.permissions.channels import telegram_context
from agentfy.runtime.inbound import Inbound, Reply
from tests.channels.helpers import TELEGRAM_API, FakeClock, FakePlatforms

GROUP, OTHER_GROUP = -1001234567890, -1009876543210
TENANT = "org-calm-rivers-k8m4p2d7n9x3"
INTERVAL = 1.0


def _to(chat: int, message_id: int) -> Addressed:
    context = telegram_context(chat, 1001, is_group=True, tenant_id=TENANT, agent_key="support")
    inbound = Inbound(TENANT, AgentKey("support"), context, "telegram", f"telegram:{chat}", "hi")
    return Addressed(inbound, chat_id=chat, message_id=message_id, in_group=True, sender_id="1001")


def test_two_replies_in_one_chat_share_its_pace_and_another_chat_is_not_held() -> None:
    clock, platforms = FakeClock(), FakePlatforms()
    at: list[tuple[float, int]] = []  # (when, chat) of every request the Bot API got

    def handle(request: httpx.Request) -> httpx.Response:
        response = platforms.handle(request)
        at.append((clock(), platforms.requests[-1][2]["chat_id"]))
        return response

    throttle = ChatThrottle(INTERVAL, clock=clock, sleep=clock.sleep)

    async def token() -> str:
        return "123:abc"

    texts = {41: [f"a{i} " for i in range(12)], 42: [f"b{i} " for i in range(12)], 43: ["c0 ", "c1 "]}

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handle)) as client:
            replies = {message_id: TelegramReply(client, TELEGRAM_API, token,
                                                 _to(OTHER_GROUP if message_id == 43 else GROUP, message_id),
                                                 bot="supportbot", throttle=throttle) for message_id in texts}
            for step in range(12):  # the models' pace: a piece of each reply four times a second
                for message_id, reply in replies.items():
                    if step < len(texts[message_id]):
                        await reply.piece(texts[message_id][step])
                clock.now += 0.25
            # the three end at once: each waits its chat's turn
            await asyncio.gather(*(reply.send(Reply(text="".join(texts[message_id]), session_key="s"))
                                   for message_id, reply in replies.items()))

    asyncio.run(go())
    in_group = [when for when, chat in at if chat == GROUP]
    assert len(in_group) >= 4  # both replies were shown and edited
    assert all(later - earlier >= INTERVAL for earlier, later in itertools.pairwise(in_group)), in_group
    # the other group's first piece went out with the group's first, not after it
    assert next(when for when, chat in at if chat == OTHER_GROUP) == in_group[0]
    shown = {m["reply_parameters"]["message_id"]: m["text"] for m in platforms.shown()}
    assert shown == {message_id: "".join(pieces) for message_id, pieces in texts.items()}


def test_a_chat_whose_turn_has_come_is_forgotten_when_many_are_kept() -> None:
    clock = FakeClock()
    throttle = ChatThrottle(INTERVAL, clock=clock, sleep=clock.sleep)
    for chat in range(2000):
        assert throttle.take_if_due(("bot", chat))
        clock.now += 0.01
    assert not throttle.take_if_due(("bot", 1999))  # still within its interval
    assert len(throttle) <= CHATS_KEPT  # the memory this process keeps is bounded
