"""The channels' parsers, for any input: a bot username is accepted exactly when Telegram would, a payload is
a model or a 422 naming a field (never another exception), and a signature holds only for the signed bytes."""

from __future__ import annotations

import json
import re
import time

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given
from hypothesis import strategies as st

from agentfy.channels import discord, telegram
from agentfy.channels.discord_interactions import Interaction
from agentfy.channels.payloads import parse_body
from agentfy.channels.telegram_updates import TelegramUpdate
from agentfy.errors import ApiError

USERNAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{1,28}bot", re.IGNORECASE)
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner,
                                                                                         max_size=4), max_leaves=20)


@given(st.text(max_size=40))
def test_bot_usernames_are_accepted_exactly_by_telegrams_rule(value: str) -> None:
    name = value.removeprefix("@")
    try:
        address, kept = telegram.parse_bot_username(value)
    except ValueError as error:
        assert repr(value) in str(error)
        assert not (USERNAME.fullmatch(name) and name.isascii())
    else:
        assert kept == name and address == name.lower() and USERNAME.fullmatch(name)


@given(st.dictionaries(st.sampled_from(["update_id", "message", "edited_message"]), json_values, max_size=3))
def test_any_json_is_an_update_or_a_422_naming_a_field(payload: dict[str, object]) -> None:
    _model_or_422(TelegramUpdate, json.dumps(payload).encode())


@given(st.dictionaries(st.sampled_from(["id", "application_id", "type", "token", "guild_id", "member", "user",
                                        "data"]), json_values, max_size=6))
def test_any_json_is_an_interaction_or_a_422_naming_a_field(payload: dict[str, object]) -> None:
    _model_or_422(Interaction, json.dumps(payload).encode())


def _model_or_422(model: type[TelegramUpdate] | type[Interaction], body: bytes) -> None:
    try:
        parse_body(model, body)
    except ApiError as error:
        assert error.status == 422 and error.details["field"]


KEY = Ed25519PrivateKey.generate()
PUBLIC = KEY.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


@given(st.binary(max_size=200), st.binary(min_size=1, max_size=8))
def test_a_signature_holds_only_for_the_bytes_it_signed(body: bytes, suffix: bytes) -> None:
    stamp = str(int(time.time()))
    signature = KEY.sign(stamp.encode() + body).hex()
    assert discord.signature_holds(PUBLIC, signature, stamp, body)
    assert not discord.signature_holds(PUBLIC, signature, stamp, body + suffix)
