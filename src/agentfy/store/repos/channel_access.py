"""Who may talk to an agent through its bots: the agent's channel policy, its allowlist and its pairings.

Policy (one row per agent; none means the defaults, today's behaviour): ``dm_policy`` is ``open`` (anyone who
finds the bot), ``allowlist`` (only allowed senders) or ``pairing`` (an unknown sender is given a one-time code
that an admin approves, which allows the sender); ``group_policy`` is ``mention`` (the bot must be mentioned
or replied to) or ``all`` (every message of the group).  :func:`check_policy` is the one validator of both
values: an unknown one is :class:`InvalidInputError` naming the field.

Senders are a platform and the sender's numeric ID (a Telegram user ID, a Discord user snowflake), within one
tenant and one agent.  A pairing code is 8 characters of an alphabet without look-alikes (no 0/O, 1/I/L), from
the OS CSPRNG (:mod:`secrets`); only its SHA-256 is stored, it expires after :data:`PAIRING_TTL`, and it works
once: the digest stays on the row after approval so that a second use is told apart from a wrong code.

Every function takes the tenant scope explicitly and filters by it; another tenant's agent is not found.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

import sqlalchemy as sa

from agentfy.identity import Scope
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.repos import agents as agent_rows
from agentfy.store.repos.channels import PLATFORMS, Platform
from agentfy.store.schema import channel_access, channel_senders
from agentfy.store.sql import insert

DmPolicy = Literal["open", "allowlist", "pairing"]
GroupPolicy = Literal["mention", "all"]
DM_POLICIES: Final[tuple[DmPolicy, ...]] = ("open", "allowlist", "pairing")
GROUP_POLICIES: Final[tuple[GroupPolicy, ...]] = ("mention", "all")
_ALLOWED: Final = {"dm_policy": DM_POLICIES, "group_policy": GROUP_POLICIES}
#: The pairing code's alphabet: upper-case letters and digits without the ones read as each other.
CODE_ALPHABET: Final = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH: Final = 8
_LETTER: Final = "".join(sorted(set(CODE_ALPHABET + CODE_ALPHABET.lower())))
#: A code as it may be typed: its characters in any case, spaces and dashes anywhere (the API states it).
CODE_PATTERN: Final = rf"^[ -]*(?:[{_LETTER}][ -]*){{{CODE_LENGTH}}}$"
PAIRING_TTL: Final = timedelta(hours=1)
SENDER_ID_MAX_DIGITS: Final = 20

_POLICY: Final = sa.select(channel_access.c.dm_policy, channel_access.c.group_policy).where(
    channel_access.c.tenant_id == sa.bindparam("tenant_id"), channel_access.c.agent_id == sa.bindparam("agent_id"))
_INSERT_POLICY: Final = insert(channel_access, ["tenant_id", "agent_id", "dm_policy", "group_policy", "updated_at"])
_UPDATE_POLICY: Final = sa.update(channel_access).where(
    channel_access.c.tenant_id == sa.bindparam("tenant_id"), channel_access.c.agent_id == sa.bindparam("agent_id"),
).values(dm_policy=sa.bindparam("dm_policy"), group_policy=sa.bindparam("group_policy"),
         updated_at=sa.bindparam("updated_at"))
_SENDER_COLUMNS: Final = (channel_senders.c.platform, channel_senders.c.sender_id, channel_senders.c.status,
                          channel_senders.c.expires_at, channel_senders.c.created_at, channel_senders.c.approved_at)
_OF_AGENT: Final = sa.and_(channel_senders.c.tenant_id == sa.bindparam("tenant_id"),
                           channel_senders.c.agent_id == sa.bindparam("agent_id"))
_ONE: Final = sa.and_(_OF_AGENT, channel_senders.c.platform == sa.bindparam("platform"),
                      channel_senders.c.sender_id == sa.bindparam("sender_id"))
_SENDER: Final = sa.select(*_SENDER_COLUMNS).where(_ONE)
_SENDERS: Final = sa.select(*_SENDER_COLUMNS).where(_OF_AGENT, channel_senders.c.status == sa.bindparam("status")) \
    .order_by(channel_senders.c.platform, channel_senders.c.created_at, channel_senders.c.sender_id)
_BY_CODE: Final = sa.select(*_SENDER_COLUMNS).where(_OF_AGENT, channel_senders.c.code_digest == sa.bindparam("digest"))
_INSERT_SENDER: Final = insert(channel_senders, ["tenant_id", "agent_id", "platform", "sender_id", "status",
                                                 "code_digest", "expires_at", "created_at", "approved_at"])
_SET_SENDER: Final = sa.update(channel_senders).where(_ONE).values(
    status=sa.bindparam("status"), code_digest=sa.bindparam("code_digest"), expires_at=sa.bindparam("expires_at"),
    approved_at=sa.bindparam("approved_at"))
_DELETE_SENDER: Final = sa.delete(channel_senders).where(_ONE, channel_senders.c.status == "allowed")


@dataclass(frozen=True, slots=True)
class ChannelPolicy:
    dm_policy: DmPolicy = "open"
    group_policy: GroupPolicy = "mention"


@dataclass(frozen=True, slots=True)
class Sender:
    """An allowed sender, or a pending pairing (``expires_at`` is the code's)."""

    platform: Platform
    sender_id: str
    status: Literal["allowed", "pending"]
    expires_at: str | None
    created_at: str
    approved_at: str | None


def check_policy(field: Literal["dm_policy", "group_policy"], value: object) -> str:
    """``value`` if it is one of the field's policies; else :class:`InvalidInputError` naming the field."""
    allowed = _ALLOWED[field]
    if not isinstance(value, str) or value not in allowed:
        raise InvalidInputError(f"invalid {field} {value!r}: expected one of {', '.join(allowed)}", field=field,
                                value=value if isinstance(value, str) else None)
    return value


def check_sender(platform: str, sender_id: object) -> tuple[Platform, str]:
    """The platform and the sender's numeric ID as decimal text; :class:`InvalidInputError` naming the field."""
    if platform not in PLATFORMS:
        raise InvalidInputError(f"invalid platform {platform!r}: expected telegram or discord", field="platform",
                                value=platform)
    text = str(sender_id) if isinstance(sender_id, int) and not isinstance(sender_id, bool) else sender_id
    if not isinstance(text, str) or not text.isascii() or not text.isdigit() or len(text) > SENDER_ID_MAX_DIGITS:
        raise InvalidInputError(f"invalid sender_id {sender_id!r}: expected the platform's numeric user ID "
                                f"(1-{SENDER_ID_MAX_DIGITS} digits)", field="sender_id",
                                value=sender_id if isinstance(sender_id, str) else None)
    return platform, str(int(text))


def normalize_code(code: str) -> str:
    """A code as typed (any case, spaces or dashes between groups) in its canonical form."""
    return "".join(c for c in code.upper() if c not in " -")


def code_digest(code: str) -> str:
    return hashlib.sha256(normalize_code(code).encode("utf-8")).hexdigest()


def _sender(row: tuple[object, ...]) -> Sender:
    platform, sender_id, status, expires, created, approved = row
    assert platform in PLATFORMS and status in ("allowed", "pending")
    return Sender(platform, str(sender_id), status, None if expires is None else str(expires),
                  str(created), None if approved is None else str(approved))


def _agent(tx: Tx, scope: Scope, agent_id: str) -> str:
    return agent_rows.get_agent(tx, scope, agent_id).id  # the scope's agent, or NotFoundError


def get_policy(tx: Tx, scope: Scope, agent_id: str) -> ChannelPolicy:
    """The agent's policy (the defaults if it never set one)."""
    row = tx.one(_POLICY, {"tenant_id": scope.tenant_id, "agent_id": _agent(tx, scope, agent_id)})
    if row is None:
        return ChannelPolicy()
    return ChannelPolicy(row[0], row[1])


def set_policy(tx: Tx, scope: Scope, agent_id: str, *, dm_policy: str | None = None,
               group_policy: str | None = None) -> ChannelPolicy:
    """Change the given parts of the agent's policy; the others keep their value."""
    agent_id = _agent(tx, scope, agent_id)
    current = get_policy(tx, scope, agent_id)
    dm = current.dm_policy if dm_policy is None else check_policy("dm_policy", dm_policy)
    group = current.group_policy if group_policy is None else check_policy("group_policy", group_policy)
    params = {"tenant_id": scope.tenant_id, "agent_id": agent_id, "dm_policy": dm, "group_policy": group,
              "updated_at": now()}
    if tx.execute(_UPDATE_POLICY, params).rowcount == 0:
        tx.execute(_INSERT_POLICY, params)
    return get_policy(tx, scope, agent_id)


def find_sender(tx: Tx, scope: Scope, agent_id: str, platform: str, sender_id: object) -> Sender | None:
    platform, sender = check_sender(platform, sender_id)
    row = tx.one(_SENDER, {"tenant_id": scope.tenant_id, "agent_id": agent_id, "platform": platform,
                           "sender_id": sender})
    return None if row is None else _sender(row)


def senders(tx: Tx, scope: Scope, agent_id: str, status: Literal["allowed", "pending"]) -> list[Sender]:
    """The agent's allowed senders, or its pending pairings (expired ones included, marked by ``expires_at``)."""
    agent_id = _agent(tx, scope, agent_id)
    return [_sender(row) for row in tx.all(_SENDERS, {"tenant_id": scope.tenant_id, "agent_id": agent_id,
                                                      "status": status})]


def _put(tx: Tx, scope: Scope, agent_id: str, platform: Platform, sender_id: str, *, status: str,
         digest: str | None, expires_at: str | None, approved_at: str | None) -> None:
    params = {"tenant_id": scope.tenant_id, "agent_id": agent_id, "platform": platform, "sender_id": sender_id,
              "status": status, "code_digest": digest, "expires_at": expires_at, "approved_at": approved_at}
    if tx.execute(_SET_SENDER, params).rowcount == 0:
        tx.execute(_INSERT_SENDER, {**params, "created_at": now()})


def allow(tx: Tx, scope: Scope, agent_id: str, platform: str, sender_id: object) -> Sender:
    """Allow the sender (idempotent; a pending pairing of the sender becomes allowed, its code spent)."""
    agent_id = _agent(tx, scope, agent_id)
    platform, sender = check_sender(platform, sender_id)
    existing = find_sender(tx, scope, agent_id, platform, sender)
    if existing is None or existing.status != "allowed":
        _put(tx, scope, agent_id, platform, sender, status="allowed", digest=None, expires_at=None,
             approved_at=now())
    found = find_sender(tx, scope, agent_id, platform, sender)
    assert found is not None
    return found


def remove(tx: Tx, scope: Scope, agent_id: str, platform: str, sender_id: object) -> None:
    """Take the sender off the allowlist; :class:`NotFoundError` if it is not on it."""
    agent_id = _agent(tx, scope, agent_id)
    platform, sender = check_sender(platform, sender_id)
    if tx.execute(_DELETE_SENDER, {"tenant_id": scope.tenant_id, "agent_id": agent_id, "platform": platform,
                                   "sender_id": sender}).rowcount == 0:
        raise NotFoundError("allowed sender", f"{platform}:{sender}")


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def request_pairing(tx: Tx, scope: Scope, agent_id: str, platform: str, sender_id: object, *,
                    at: datetime | None = None) -> str | None:
    """A new pairing code for the sender (to show them once), or ``None`` when the sender already holds a code
    that has not expired (it is not replaced: a sender cannot make codes in a loop) or is already allowed."""
    agent_id = _agent(tx, scope, agent_id)
    platform, sender = check_sender(platform, sender_id)
    moment = at or datetime.now(UTC)
    existing = find_sender(tx, scope, agent_id, platform, sender)
    if existing is not None and (existing.status == "allowed" or
                                 (existing.expires_at or "") > _stamp(moment)):
        return None
    code = new_code()
    _put(tx, scope, agent_id, platform, sender, status="pending", digest=code_digest(code),
         expires_at=_stamp(moment + PAIRING_TTL), approved_at=None)
    return code


def approve(tx: Tx, scope: Scope, agent_id: str, code: str, *, at: datetime | None = None) -> Sender:
    """Allow the sender that was given ``code``.  A code this agent never gave is :class:`NotFoundError`; a
    code already used or expired is :class:`ConflictError` saying which (the code itself is never echoed)."""
    agent_id = _agent(tx, scope, agent_id)
    canonical = normalize_code(code)
    if re.fullmatch(CODE_PATTERN, code) is None:
        raise InvalidInputError(f"invalid code: a pairing code is {CODE_LENGTH} characters of {CODE_ALPHABET}",
                                field="code", value=None)
    row = tx.one(_BY_CODE, {"tenant_id": scope.tenant_id, "agent_id": agent_id, "digest": code_digest(canonical)})
    if row is None:
        raise NotFoundError("pairing code", None)
    found = _sender(row)
    if found.status == "allowed":
        raise ConflictError("the pairing code was already used: its sender is allowed", field="code")
    if (found.expires_at or "") <= _stamp(at or datetime.now(UTC)):
        raise ConflictError(f"the pairing code expired at {found.expires_at}; the sender gets a new one by "
                            "writing to the bot again", field="code")
    _put(tx, scope, agent_id, found.platform, found.sender_id, status="allowed", digest=code_digest(canonical),
         expires_at=None, approved_at=now())
    approved = find_sender(tx, scope, agent_id, found.platform, found.sender_id)
    assert approved is not None
    return approved


def _stamp(moment: datetime) -> str:
    """The store's timestamp format (:func:`agentfy.store.db.now`) for ``moment``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
