"""The mention stripper (Telegram's ``@bot`` and ``/cmd@bot``, Discord's ``<@id>``): examples, and properties
over any text (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.channels import discord, telegram

BOT = "supportbot"
WORDS = st.sampled_from(["@SupportBot", "@supportbot", "/tool@SupportBot", "@SupportBots", "x@SupportBot",
                         "@@SupportBot", "/tool", "read_file", "path=a.txt", "hi", "@other_bot", "<@1234>", ""])
SEPARATORS = st.sampled_from([" ", "  ", "\t", "\n", ""])
TEXTS = st.lists(st.tuples(WORDS, SEPARATORS), max_size=8).map(lambda parts: "".join(w + s for w, s in parts)) \
    | st.text(max_size=60)


@pytest.mark.parametrize(("text", "expected"), [
    ("@SupportBot /tool read_file path=a.txt", "/tool read_file path=a.txt"),
    ("/tool@SupportBot read_file path=a.txt", "/tool read_file path=a.txt"),
    ("hey @supportbot what's up", "hey what's up"),
    ("@SupportBot@SupportBot hi", "hi"),
    ("@SupportBots is another bot", "@SupportBots is another bot"),
    ("mail me at a@SupportBot.com", "mail me at a@SupportBot.com"),
    ("  no mention at all  ", "  no mention at all  "),
    ("@SupportBot", ""),
])
def test_telegram_examples(text: str, expected: str) -> None:
    assert telegram.strip_mentions(text, BOT) == expected


@given(TEXTS)
def test_what_is_left_never_mentions_the_bot_and_stripping_again_changes_nothing(text: str) -> None:
    stripped = telegram.strip_mentions(text, BOT)
    assert not telegram._mentions(stripped, BOT)
    assert telegram.strip_mentions(stripped, BOT) == stripped
    assert len(stripped) <= len(text)


@given(TEXTS)
def test_a_text_without_a_mention_is_left_exactly_as_it_is(text: str) -> None:
    if "@supportbot" not in text.lower():
        assert telegram.strip_mentions(text, BOT) == text


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40).filter(
    lambda t: "@" not in t and t.strip() == t and t != "" and not t.startswith("/")))
def test_a_leading_mention_leaves_the_message_itself(rest: str) -> None:
    assert telegram.strip_mentions(f"@SupportBot {rest}", BOT) == rest


@pytest.mark.parametrize(("text", "expected"), [("<@1234> /tool x", "/tool x"), ("<@!1234>", ""),
                                                ("<@12345> hi", "<@12345> hi"), ("hi <@1234>", "hi")])
def test_discord_examples(text: str, expected: str) -> None:
    assert discord.strip_mentions(text, "1234") == expected
