"""The organization audit log: who did what to which target, kept as history.

An entry's own ID is a technical UUID (``uuid4``), not a registry ID: entries are never referenced by
users.  The IDs it records (the actor, the target) are stored exactly as they were given and never
validated beyond being strings, because history must keep what happened even when the ID is legacy, an
ACTOR that is not an entity (a Telegram sender, ``subagent:…``) or refers to a row deleted since; the
table has no foreign keys for the same reason.  Reads are tenant-scoped.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity import Scope
from agentfy.store.db import Tx, now
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.inputs import check_text
from agentfy.store.repos._batch import check_json
from agentfy.store.repos._common import load_json
from agentfy.store.schema import org_audit
from agentfy.store.sql import insert

ACTION_MAX_LENGTH: Final = 200
DEFAULT_LIMIT: Final = 100

_COLUMNS: Final = (org_audit.c.id, org_audit.c.org_id, org_audit.c.actor_id, org_audit.c.action,
                   org_audit.c.target_id, org_audit.c.details, org_audit.c.created_at)
_IN_ORG: Final = org_audit.c.org_id == sa.bindparam("tenant_id")
_INSERT: Final = insert(org_audit, ["id", "org_id", "actor_id", "action", "target_id", "details", "created_at"])
_BY_ID: Final = sa.select(*_COLUMNS).where(_IN_ORG, org_audit.c.id == sa.bindparam("id"))
_LIST: Final = (sa.select(*_COLUMNS)
                .where(_IN_ORG,
                       sa.or_(sa.bindparam("action", type_=sa.Text).is_(None),
                              org_audit.c.action == sa.bindparam("action", type_=sa.Text)),
                       sa.or_(sa.bindparam("target_id", type_=sa.Text).is_(None),
                              org_audit.c.target_id == sa.bindparam("target_id", type_=sa.Text)))
                .order_by(org_audit.c.created_at.desc(), org_audit.c.id)
                .limit(sa.bindparam("limit")))


@dataclass(frozen=True, slots=True)
class AuditEntry:
    id: str
    org_id: str
    actor_id: str | None
    action: str
    target_id: str | None
    details: dict[str, Any]
    created_at: str


def _entry(row: tuple[Any, ...]) -> AuditEntry:
    return AuditEntry(row[0], row[1], row[2], row[3], row[4], load_json(row[5]), row[6])


def _recorded(value: object, field: str) -> str | None:
    """A recorded ID: any string of any length, kept as is — history records what happened.  Only what no
    engine can store is refused, by the one text rule (a NUL: PostgreSQL text cannot hold it; a lone
    surrogate: it is not Unicode text, and neither engine can encode it)."""
    if value is None:
        return None
    return check_text(value, field, max_length=len(value) if isinstance(value, str) else 0, allow_empty=True)


def record_audit(tx: Tx, scope: Scope, *, action: str, actor_id: str | None = None, target_id: str | None = None,
                 details: dict[str, Any] | None = None) -> AuditEntry:
    """Append an entry for the scope's organization.  ``actor_id``: who acted (the ACTOR, not the group
    SCOPE); ``target_id``: what it acted on.  Both are history: stored as given."""
    entry = AuditEntry(str(uuid.uuid4()), scope.tenant_id, _recorded(actor_id, "actor_id"),
                       check_text(action, "action", max_length=ACTION_MAX_LENGTH), _recorded(target_id, "target_id"),
                       details or {}, now())
    tx.execute(_INSERT, {"id": entry.id, "org_id": entry.org_id, "actor_id": entry.actor_id, "action": entry.action,
                         "target_id": entry.target_id, "details": check_json(details, "details"),
                         "created_at": entry.created_at})
    return entry


def get_audit_entry(tx: Tx, scope: Scope, entry_id: str) -> AuditEntry:
    """The organization's entry with this UUID, or :class:`NotFoundError` (another organization's too)."""
    try:
        canonical = str(uuid.UUID(entry_id)) if type(entry_id) is str else None
    except ValueError:
        canonical = None
    if canonical is None or canonical != entry_id:
        raise InvalidInputError(f"invalid entry_id {entry_id!r}: expected a lower-case UUID", field="entry_id",
                                value=entry_id)
    row = tx.one(_BY_ID, {"tenant_id": scope.tenant_id, "id": entry_id})
    if row is None:
        raise NotFoundError("audit entry", entry_id)
    return _entry(row)


def list_audit(tx: Tx, scope: Scope, *, action: str | None = None, target_id: str | None = None,
               limit: int = DEFAULT_LIMIT) -> list[AuditEntry]:
    """The organization's entries, newest first; optionally one action's or one target's."""
    if type(limit) is not int or not 1 <= limit <= 10_000:
        raise InvalidInputError(f"invalid limit {limit!r}: expected 1-10000", field="limit", value=limit)
    params = {"tenant_id": scope.tenant_id, "limit": limit, "target_id": _recorded(target_id, "target_id"),
              "action": None if action is None else check_text(action, "action", max_length=ACTION_MAX_LENGTH)}
    return [_entry(row) for row in tx.all(_LIST, params)]
