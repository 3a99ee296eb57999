"""An agent's channel policy, allowlist and pairing codes: defaults, validation naming the field, single-use
and expiring codes, and tenant scope (both engines)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from agentfy.store.db import Database
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.repos import channel_access
from agentfy.store.repos.channel_access import CODE_ALPHABET, CODE_LENGTH, PAIRING_TTL, ChannelPolicy
from tests.helpers.tenants import Tenant, make_tenant


@pytest.fixture
def acme(db: Database) -> Tenant:
    return make_tenant(db, "acme", agent_key="bot")


def _agent(tenant: Tenant) -> str:
    assert tenant.bot is not None
    return tenant.bot.id


def test_the_policy_defaults_to_open_and_mention_and_changes_part_by_part(db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        assert channel_access.get_policy(tx, acme.scope, _agent(acme)) == ChannelPolicy("open", "mention")
        assert channel_access.set_policy(tx, acme.scope, _agent(acme), dm_policy="pairing") == \
            ChannelPolicy("pairing", "mention")
        assert channel_access.set_policy(tx, acme.scope, _agent(acme), group_policy="all") == \
            ChannelPolicy("pairing", "all")


@pytest.mark.parametrize(("field", "value"), [("dm_policy", "everyone"), ("group_policy", "ALL"),
                                              ("dm_policy", ""), ("group_policy", "mention\x00")])
def test_an_unknown_policy_is_refused_naming_the_field(db: Database, acme: Tenant, field: str, value: str) -> None:
    with pytest.raises(InvalidInputError, match=field) as caught, db.transaction() as tx:
        channel_access.set_policy(tx, acme.scope, _agent(acme), **{field: value})
    assert caught.value.field == field


def test_the_database_refuses_an_unknown_policy_written_raw(db: Database, acme: Tenant) -> None:
    with pytest.raises(Exception, match="dm_policy_known"), db.transaction() as tx:
        tx.execute(sa.text("INSERT INTO channel_access (tenant_id, agent_id, dm_policy, group_policy, updated_at) "
                           "VALUES (:t, :a, 'everyone', 'all', 'x')"), {"t": acme.scope.tenant_id, "a": _agent(acme)})


def test_allow_is_idempotent_and_remove_takes_the_sender_off(db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        first = channel_access.allow(tx, acme.scope, _agent(acme), "telegram", 1001)
        again = channel_access.allow(tx, acme.scope, _agent(acme), "telegram", "1001")
        assert first == again and first.status == "allowed" and first.sender_id == "1001"
        assert [s.sender_id for s in channel_access.senders(tx, acme.scope, _agent(acme), "allowed")] == ["1001"]
        channel_access.remove(tx, acme.scope, _agent(acme), "telegram", "1001")
        assert channel_access.senders(tx, acme.scope, _agent(acme), "allowed") == []
    with pytest.raises(NotFoundError), db.transaction() as tx:
        channel_access.remove(tx, acme.scope, _agent(acme), "telegram", "1001")


@pytest.mark.parametrize(("platform", "sender", "field"), [("telegram", "-5", "sender_id"), ("telegram", "1e3",
                         "sender_id"), ("telegram", "1" * 21, "sender_id"), ("slack", "1", "platform"),
                         ("telegram", "١٢", "sender_id")])
def test_a_malformed_sender_is_refused_naming_the_field(db: Database, acme: Tenant, platform: str, sender: str,
                                                        field: str) -> None:
    with pytest.raises(InvalidInputError) as caught, db.transaction() as tx:
        channel_access.allow(tx, acme.scope, _agent(acme), platform, sender)
    assert caught.value.field == field


def test_a_pairing_code_is_short_unambiguous_stored_hashed_and_works_once(db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        code = channel_access.request_pairing(tx, acme.scope, _agent(acme), "telegram", "7")
        assert code is not None and len(code) == CODE_LENGTH and set(code) <= set(CODE_ALPHABET)
        assert not set(code) & set("01OIL")
        assert channel_access.request_pairing(tx, acme.scope, _agent(acme), "telegram", "7") is None  # still valid
        (pending,) = channel_access.senders(tx, acme.scope, _agent(acme), "pending")
        assert pending.sender_id == "7" and pending.expires_at is not None
        stored = tx.all(sa.text("SELECT * FROM channel_senders"))
        assert code not in repr(stored)
        approved = channel_access.approve(tx, acme.scope, _agent(acme), f" {code[:4].lower()}-{code[4:]} ")
        assert approved.status == "allowed" and approved.sender_id == "7"
        assert channel_access.senders(tx, acme.scope, _agent(acme), "pending") == []
    with pytest.raises(ConflictError, match="already used") as caught, db.transaction() as tx:
        channel_access.approve(tx, acme.scope, _agent(acme), code)
    assert caught.value.field == "code"


def test_an_expired_code_is_refused_and_the_sender_gets_a_new_one(db: Database, acme: Tenant) -> None:
    long_ago = datetime.now(UTC) - PAIRING_TTL - timedelta(minutes=1)
    with db.transaction() as tx:
        old = channel_access.request_pairing(tx, acme.scope, _agent(acme), "discord", "99", at=long_ago)
    assert old is not None
    with pytest.raises(ConflictError, match="expired"), db.transaction() as tx:
        channel_access.approve(tx, acme.scope, _agent(acme), old)
    with db.transaction() as tx:
        new = channel_access.request_pairing(tx, acme.scope, _agent(acme), "discord", "99")
        assert new is not None and new != old
        with pytest.raises(NotFoundError):  # the old code is gone with its row's digest
            channel_access.approve(tx, acme.scope, _agent(acme), old)
        assert channel_access.approve(tx, acme.scope, _agent(acme), new).status == "allowed"


@pytest.mark.parametrize("code", ["", "ABC", "ABCDEFG0", "ABCDEFGHJ", "ABCD_EFG"])
def test_a_code_that_cannot_be_one_is_refused_naming_the_field(db: Database, acme: Tenant, code: str) -> None:
    with pytest.raises(InvalidInputError) as caught, db.transaction() as tx:
        channel_access.approve(tx, acme.scope, _agent(acme), code)
    assert caught.value.field == "code"


def test_another_tenant_sees_nothing_and_cannot_approve(db: Database, acme: Tenant) -> None:
    globex = make_tenant(db, "globex", agent_key="bot")
    with db.transaction() as tx:
        code = channel_access.request_pairing(tx, acme.scope, _agent(acme), "telegram", "5")
        channel_access.allow(tx, acme.scope, _agent(acme), "telegram", "6")
        channel_access.set_policy(tx, acme.scope, _agent(acme), dm_policy="allowlist")
    assert code is not None
    with db.transaction() as tx:
        assert channel_access.get_policy(tx, globex.scope, _agent(globex)) == ChannelPolicy()
        assert channel_access.senders(tx, globex.scope, _agent(globex), "allowed") == []
        with pytest.raises(NotFoundError):  # acme's agent, named by globex
            channel_access.senders(tx, globex.scope, _agent(acme), "allowed")
        with pytest.raises(NotFoundError):
            channel_access.approve(tx, globex.scope, _agent(acme), code)
        with pytest.raises(NotFoundError):  # globex's own agent never gave the code
            channel_access.approve(tx, globex.scope, _agent(globex), code)
        assert channel_access.find_sender(tx, acme.scope, _agent(acme), "telegram", "5").status == "pending"  # type: ignore[union-attr]
