"""Batch validation helpers: fail-fast checks that name the row, the field and the value.

Shared by the memory-document upsert, the knowledge-graph ingest, the vault bulk upload, telemetry, audit,
policies and credentials: every row is validated before the first write, so a batch is all or nothing
(a partial success would leave the caller guessing which rows were stored).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from agentfy.identity import AgentId, Scope, parse_id
from agentfy.store.db import Sql, Tx
from agentfy.store.errors import InvalidInputError, NotFoundError
from agentfy.store.repos._common import dump_json
from agentfy.store.schema import agents

#: Limits of the free-text fields (far above real use; they keep one row from filling the database).
USER_ID_MAX_LENGTH: Final = 200
SESSION_KEY_MAX_LENGTH: Final = 200
PATH_MAX_LENGTH: Final = 1024
CONTENT_MAX_LENGTH: Final = 10_000_000


# -- batch validation helpers (shared with knowledge.py and vault.py) -------------------------------------
class RowNotFoundError(NotFoundError):
    """A batch row names a row that does not exist in the tenant (or exists in another tenant).

    ``field`` is the row's path in the call (``entities[3].agent_id``), so the caller knows which row to fix.
    """

    def __init__(self, field: str, entity: str, ref: object) -> None:
        super().__init__(entity, ref, field=field)
        self.args = (f"{field}: {entity} {ref!r} not found",)


def row_field(batch: str, index: int, field: str) -> str:
    """The path of one row's field in an error: ``entities[3].agent_id``."""
    return f"{batch}[{index}].{field}"


def check_json(value: object, field: str) -> str:
    """``value`` (a dict or ``None``) as JSON text, or :class:`InvalidInputError` naming the field."""
    if value is None:
        return "{}"
    if not isinstance(value, dict):
        raise InvalidInputError(f"invalid {field}: expected an object (dict) or None, got {type(value).__name__}",
                                field=field, value=value)
    return dump_json(value, field=field)


def json_values(param: str, dialect: str) -> sa.Select[Any]:
    """``SELECT value FROM <the JSON array in :param>``: a list of values as ONE bound parameter.

    The raw-driver execution path cannot expand ``IN (:a, :b, …)`` lists, and a list of 100k IDs should not
    become 100k parameters anyway; a JSON array is one parameter on both engines (``json_each`` on SQLite,
    ``json_array_elements_text`` on PostgreSQL, both yielding a ``value`` column).
    """
    bound = sa.bindparam(param, type_=sa.Text)
    if dialect == "postgresql":
        table = sa.func.json_array_elements_text(sa.cast(bound, postgresql.JSON)).table_valued("value")
    else:
        table = sa.func.json_each(bound).table_valued("value")
    return sa.select(table.c.value)


def json_list(values: Iterable[str]) -> str:
    """The value of a :func:`json_values` parameter."""
    return json.dumps(list(values), separators=(",", ":"))


_AGENTS_IN_TENANT: Final = Sql(lambda d: sa.select(agents.c.id).where(
    agents.c.tenant_id == sa.bindparam("tenant_id"), agents.c.deleted_at.is_(None),
    agents.c.id.in_(json_values("ids", d))))


def require_agents(tx: Tx, scope: Scope, first_row: dict[str, str]) -> None:
    """Every agent of a batch lives in the scope's tenant: ONE query for the distinct IDs.

    ``first_row`` maps each distinct, already parsed agent ID to the field of the first row naming it; the
    first (in row order) agent that is missing, archived or another tenant's raises :class:`RowNotFoundError`.
    """
    if not first_row:
        return
    found = {row[0] for row in tx.all(_AGENTS_IN_TENANT, {"tenant_id": scope.tenant_id,
                                                          "ids": json_list(first_row)})}
    for agent_id, field in first_row.items():  # insertion order = row order
        if agent_id not in found:
            raise RowNotFoundError(field, "agent", agent_id)


def require_agent(tx: Tx, scope: Scope, agent_id: object, field: str = "agent_id") -> AgentId:
    """``agent_id`` parsed, and the agent living (not archived) in the scope's tenant, else NotFoundError.

    An :class:`~agentfy.store.repos.agents.Agent` record instead of an ID is what the caller already resolved in
    a tenant (a run's agent): it is not read again, only its tenant compared with the scope's."""
    if not isinstance(agent_id, str):
        from agentfy.store.repos.agents import Agent  # noqa: PLC0415 - the agents module imports this one

        if isinstance(agent_id, Agent):
            if agent_id.tenant_id != scope.tenant_id:
                raise NotFoundError("agent", agent_id.id)
            return agent_id.id
    parsed = parse_id(agent_id, AgentId, field=field)
    if tx.one(_AGENTS_IN_TENANT, {"tenant_id": scope.tenant_id, "ids": json_list([parsed])}) is None:
        raise NotFoundError("agent", parsed)
    return parsed


def parse_row_ids(values: Iterable[object], prefix: str, batch: str) -> list[str]:
    """Every value parsed as an ID of ``prefix``; the first bad one names its index (``ids[2]``)."""
    return [parse_id(value, prefix, field=f"{batch}[{i}]") for i, value in enumerate(values)]


# -- episodic summaries -------------------------------------------------------------------------------------
