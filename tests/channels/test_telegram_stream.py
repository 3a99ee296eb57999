"""A Telegram reply's shape and pace, with a clock the tests move (nothing sleeps).

The shape: a reply done within the hold of its first piece is one ``sendMessage``, sent the moment it is done;
a slower one streams (sent, then edited).  The pace is the chat's, not the reply's: two replies streaming into
one group at once never send or edit closer together than the interval (Telegram counts every message and edit
in a chat), a reply in another chat is not held by them, a private chat's replies are not held by the interval
at all, and each reply still ends showing its whole text.  A 429 is waited out and the message sent again;
one that persists is logged as a refused reply, never raised."""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable

import httpx
import pytest

from agentfy.channels.delivery import Surface, run_turn
from agentfy.channels.telegram import Addressed
from agentfy.channels.telegram_api import RETRY_AFTER_MAX_SECONDS, RETRY_TRIES
from agentfy.channels.telegram_stream import CHATS_KEPT, ChatThrottle, TelegramReply
from agentfy.identity import AgentKey
from agentfy.permissions.channels import telegram_context
from agentfy.runtime.inbound import Inbound, Reply
from agentfy.runtime.model import TextSink
from tests.channels.helpers import TELEGRAM_API, FakeClock, FakePlatforms

GROUP, OTHER_GROUP = -1001234567890, -1009876543210
PERSON = 1001
TENANT = "org-calm-rivers-k8m4p2d7n9x3"
INTERVAL = 1.0
HOLD = 0.075


def _to(chat: int, message_id: int, *, in_group: bool = True) -> Addressed:
    context = telegram_context(chat, PERSON, is_group=in_group, tenant_id=TENANT, agent_key="support")
    inbound = Inbound(TENANT, AgentKey("support"), context, "telegram", f"telegram:{chat}", "hi")
    return Addressed(inbound, chat_id=chat, message_id=message_id, in_group=in_group, sender_id=str(PERSON))


async def _token() -> str:
    return "123:abc"


class Chat:
    """A fake Bot API on a fake clock: every call with the time it arrived, and replies made against it."""

    def __init__(self) -> None:
        self.clock, self.platforms = FakeClock(), FakePlatforms()
        self.throttle = ChatThrottle(INTERVAL, clock=self.clock, sleep=self.clock.sleep)
        self.calls: list[tuple[float, str, str]] = []  # (when, method, text)

    def handle(self, request: httpx.Request) -> httpx.Response:
        response = self.platforms.handle(request)
        _, url, body = self.platforms.requests[-1]
        self.calls.append((self.clock(), url.rsplit("/", 1)[1], body["text"]))
        return response

    def run(self, go: Callable[[httpx.AsyncClient], Awaitable[None]]) -> None:
        async def main() -> None:
            async with httpx.AsyncClient(transport=httpx.MockTransport(self.handle)) as client:
                await go(client)
            await _settle()
            assert asyncio.all_tasks() == {asyncio.current_task()}  # no hold's timer left behind

        asyncio.run(main())

    def reply(self, client: httpx.AsyncClient, to: Addressed, *, hold: float = HOLD) -> TelegramReply:
        return TelegramReply(client, TELEGRAM_API, _token, to, bot="supportbot", throttle=self.throttle, hold=hold)

    def methods(self) -> list[tuple[str, str]]:
        return [(method, text) for _, method, text in self.calls]


async def _settle() -> None:
    """Let the tasks that are ready (a hold's timer) run until they wait for something."""
    for _ in range(50):
        await asyncio.sleep(0)


async def _stream(reply: TelegramReply, clock: FakeClock, pieces: list[str], step: float) -> None:
    """The model's pace: ``step`` seconds before each piece."""
    for piece in pieces:
        clock.now += step
        await reply.piece(piece)


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


# -- the hold: a quick reply is one message ---------------------------------------------------------------------
def test_a_reply_done_within_the_hold_is_one_message_sent_the_moment_it_is_done() -> None:
    chat = Chat()

    async def go(client: httpx.AsyncClient) -> None:
        reply = chat.reply(client, _to(PERSON, 7, in_group=False))
        await _stream(reply, chat.clock, ["Hel", "lo", " there"], 0.01)
        await reply.send(Reply(text="Hello there", session_key="s"))

    chat.run(go)
    assert chat.methods() == [("sendMessage", "Hello there")]  # no editMessageText
    assert chat.calls[0][0] == pytest.approx(1000.03)  # when the reply was done, not when the hold would end


def test_the_hold_adds_no_wait_in_real_time() -> None:
    """With the gateway's own clock and sleep and a hold of a minute, a reply done at once is sent at once."""
    platforms = FakePlatforms()
    throttle = ChatThrottle(INTERVAL, clock=time.monotonic)

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(platforms.handle)) as client:
            reply = TelegramReply(client, TELEGRAM_API, _token, _to(PERSON, 7, in_group=False), bot="supportbot",
                                  throttle=throttle, hold=60.0)
            await reply.piece("Hi")
            await reply.send(Reply(text="Hi", session_key="s"))
        await _settle()
        assert asyncio.all_tasks() == {asyncio.current_task()}  # the hold's timer was cancelled

    started = time.monotonic()
    asyncio.run(go())
    assert time.monotonic() - started < 10  # far below the minute the hold would have lasted
    assert [url.rsplit("/", 1)[1] for _, url, _ in platforms.requests] == ["sendMessage"]


def test_a_long_quick_reply_is_split_at_telegrams_limit_never_edited() -> None:
    chat = Chat()
    text = "x" * 4096 + "y" * 100

    async def go(client: httpx.AsyncClient) -> None:
        reply = chat.reply(client, _to(GROUP, 7))
        await reply.piece(text)
        await reply.send(Reply(text=text, session_key="s"))

    chat.run(go)
    assert chat.methods() == [("sendMessage", "x" * 4096), ("sendMessage", "y" * 100)]


def test_a_slow_reply_streams_when_the_hold_ends_and_its_edits_are_paced() -> None:
    chat = Chat()

    async def go(client: httpx.AsyncClient) -> None:
        reply = chat.reply(client, _to(PERSON, 7, in_group=False))
        await reply.piece("one")
        await _settle()  # the run is busy (a tool, a slow model): the hold's timer ends and sends what there is
        assert chat.methods() == [("sendMessage", "one")] and chat.calls[0][0] == pytest.approx(1000 + HOLD)
        await _stream(reply, chat.clock, [" two", " three", " four", " five", " six", " seven"], 0.3)
        await reply.send(Reply(text="one two three four five six seven", session_key="s"))

    chat.run(go)
    assert chat.methods() == [("sendMessage", "one"), ("editMessageText", "one two three four five"),
                              ("editMessageText", "one two three four five six seven")]
    sent, edited, ended = (when for when, _, _ in chat.calls)
    assert edited - sent >= INTERVAL  # progress is paced
    assert ended == pytest.approx(1000 + HOLD + 6 * 0.3)  # the end in a private chat is not: sent when done


def test_pieces_while_the_first_message_is_on_its_way_wait_for_the_next_edit() -> None:
    chat = Chat()

    async def go(client: httpx.AsyncClient) -> None:
        gate = asyncio.Event()  # the Bot API answers the first message only once the test says so

        async def slow(request: httpx.Request) -> httpx.Response:
            await gate.wait()
            return chat.handle(request)

        async with httpx.AsyncClient(transport=httpx.MockTransport(slow)) as slow_client:
            reply = chat.reply(slow_client, _to(PERSON, 7, in_group=False))
            await reply.piece("one")
            await _settle()  # the timer's sendMessage is under way (the Bot API has not answered)
            await reply.piece(" two")  # no second sendMessage
            ending = asyncio.ensure_future(reply.send(Reply(text="one two", session_key="s")))
            await _settle()
            gate.set()
            await ending

    chat.run(go)
    assert chat.methods() == [("sendMessage", "one"), ("editMessageText", "one two")]


# -- pace: private chats follow the person, groups keep the interval ------------------------------------------
def test_two_quick_replies_in_a_private_chat_are_not_held_by_the_interval() -> None:
    chat = Chat()

    async def go(client: httpx.AsyncClient) -> None:
        for n in range(2):  # the person asks twice, 10 ms apart; each reply is done at once
            reply = chat.reply(client, _to(PERSON, 7 + n, in_group=False))
            await reply.piece(f"answer {n}")
            await reply.send(Reply(text=f"answer {n}", session_key="s"))
            chat.clock.now += 0.01

    chat.run(go)
    assert chat.methods() == [("sendMessage", "answer 0"), ("sendMessage", "answer 1")]
    assert [when for when, _, _ in chat.calls] == pytest.approx([1000.0, 1000.01])


def test_quick_replies_in_a_group_keep_the_chats_interval_and_another_group_is_not_held() -> None:
    chat = Chat()

    async def go(client: httpx.AsyncClient) -> None:
        async def answer(group: int, message_id: int) -> None:
            reply = chat.reply(client, _to(group, message_id))
            await reply.piece("ok")
            await reply.send(Reply(text=f"ok {message_id}", session_key="s"))

        # (the fake clock's sleep moves time for everyone: the other group answers before the wait)
        await asyncio.gather(answer(GROUP, 1), answer(OTHER_GROUP, 3), answer(GROUP, 2))

    chat.run(go)
    in_group = [when for when, _, text in chat.calls if text in ("ok 1", "ok 2")]
    assert len(in_group) == 2 and in_group[1] - in_group[0] >= INTERVAL
    assert next(when for when, _, text in chat.calls if text == "ok 3") == in_group[0]


# -- 429 Too Many Requests --------------------------------------------------------------------------------------
def test_a_429_is_waited_out_and_the_message_sent_again() -> None:
    chat = Chat()
    chat.platforms.too_many = {"sendMessage": [3]}

    async def go(client: httpx.AsyncClient) -> None:
        reply = chat.reply(client, _to(PERSON, 7, in_group=False))
        await reply.piece("Hello")
        await reply.send(Reply(text="Hello", session_key="s"))

    chat.run(go)
    assert chat.calls == [(1000.0, "sendMessage", "Hello"), (1003.0, "sendMessage", "Hello")]
    assert [m["text"] for m in chat.platforms.shown()] == ["Hello"]


def test_after_a_429_the_chats_other_replies_wait_for_its_retry_after() -> None:
    chat = Chat()
    chat.platforms.too_many = {"sendMessage": [5]}

    async def go(client: httpx.AsyncClient) -> None:
        streaming = chat.reply(client, _to(PERSON, 7, in_group=False), hold=0)
        await streaming.piece("thinking")  # progress: refused with a 429, not retried
        chat.clock.now += 0.01
        quick = chat.reply(client, _to(PERSON, 8, in_group=False))
        await quick.send(Reply(text="answer", session_key="s"))  # not sent into the limit: after it
        await streaming.send(Reply(text="thinking done", session_key="s"))

    chat.run(go)
    assert chat.calls == [(1000.0, "sendMessage", "thinking"), (1005.0, "sendMessage", "answer"),
                          (1005.0, "sendMessage", "thinking done")]


def test_a_429_on_a_progress_edit_is_not_retried_and_the_end_still_arrives() -> None:
    chat = Chat()
    chat.platforms.too_many = {"editMessageText": [4]}

    async def go(client: httpx.AsyncClient) -> None:
        reply = chat.reply(client, _to(PERSON, 7, in_group=False), hold=0)
        await _stream(reply, chat.clock, ["one", " two", " three"], 1.0)  # sent, then an edit refused
        await reply.send(Reply(text="one two three", session_key="s"))

    chat.run(go)
    assert chat.methods() == [("sendMessage", "one"), ("editMessageText", "one two"),
                              ("editMessageText", "one two three")]
    refused_at, ended_at = chat.calls[1][0], chat.calls[2][0]
    assert ended_at == pytest.approx(refused_at + 4)  # the end waited for the chat's retry_after
    assert [m["text"] for m in chat.platforms.shown()] == ["one two three"]


def test_a_429_that_persists_is_a_logged_refusal_never_an_exception(caplog: pytest.LogCaptureFixture) -> None:
    chat = Chat()
    chat.platforms.too_many = {"sendMessage": [2] * 10}

    async def handler(inbound: Inbound, *, on_text: TextSink | None = None) -> Reply:
        return Reply(text="Hello", session_key="s")

    async def go(client: httpx.AsyncClient) -> None:
        to = _to(PERSON, 7, in_group=False)
        reply = chat.reply(client, to)
        await run_turn(handler, to.inbound, Surface(reply.send, reply.fail, on_text=reply.piece))

    with caplog.at_level(logging.INFO, logger="agentfy.channels"):
        chat.run(go)
    assert [when for when, _, _ in chat.calls] == [1000.0 + 2 * n for n in range(RETRY_TRIES)]
    refused = [r for r in caplog.records if r.message == "channels.platform_refused"]
    assert [(r.__dict__["status"], r.__dict__["platform"]) for r in refused] == [(429, "telegram")]
    assert not [r for r in caplog.records if r.message == "channels.reply_failed"]  # nothing was raised


def test_a_429_asking_for_too_long_is_not_waited_for() -> None:
    chat = Chat()
    chat.platforms.too_many = {"sendMessage": [RETRY_AFTER_MAX_SECONDS + 1]}

    async def go(client: httpx.AsyncClient) -> None:
        reply = chat.reply(client, _to(PERSON, 7, in_group=False))
        await reply.send(Reply(text="Hello", session_key="s"))

    chat.run(go)
    assert chat.calls == [(1000.0, "sendMessage", "Hello")]  # logged as refused at once


def test_the_failure_note_is_waited_through_a_429_too() -> None:
    chat = Chat()
    chat.platforms.too_many = {"editMessageText": [2]}

    async def go(client: httpx.AsyncClient) -> None:
        reply = chat.reply(client, _to(GROUP, 7), hold=0)
        await reply.piece("half an")
        chat.clock.now += INTERVAL
        await reply.fail("The agent's model did not answer in time.")

    chat.run(go)
    assert chat.methods() == [("sendMessage", "half an"),
                              ("editMessageText", "The agent's model did not answer in time."),
                              ("editMessageText", "The agent's model did not answer in time.")]
    assert chat.calls[2][0] - chat.calls[1][0] == pytest.approx(2)
    assert [m["text"] for m in chat.platforms.shown()] == ["The agent's model did not answer in time."]
