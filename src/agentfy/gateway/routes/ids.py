"""``GET /v1/ids/{value}``: explain an ID, and whether it names something in the caller's organization."""

from __future__ import annotations

from typing import Annotated, Any

import sqlalchemy as sa
from fastapi import APIRouter, Path

from agentfy.cutover.hops import resolve_migrated_id
from agentfy.gateway.deps import Authenticated
from agentfy.gateway.routing import ApiRoute
from agentfy.ids import explain_id, id_prefix_of
from agentfy.store.db import Tx
from agentfy.store.inputs import TEXT_PATTERN
from agentfy.store.schema import metadata

router = APIRouter(tags=["ids"], route_class=ApiRoute)

#: prefix -> (table, tenant column or None for the organization itself), from the schema.
_TABLES: dict[str, tuple[sa.Table, str | None]] = {}
for _table in metadata.sorted_tables:
    _prefix = _table.c["id"].info.get("id_prefix") if "id" in _table.c else None
    if _prefix:
        tenant_column = "tenant_id" if "tenant_id" in _table.c else ("org_id" if "org_id" in _table.c else None)
        _TABLES[_prefix] = (_table, tenant_column)
_EXISTS = {prefix: sa.select(sa.literal(1)).select_from(table).where(
    table.c.id == sa.bindparam("id"),
    *([table.c[column] == sa.bindparam("tenant_id")] if column else [table.c.id == sa.bindparam("tenant_id")]))
    for prefix, (table, column) in _TABLES.items() if prefix not in ("user", "domain-event")}


@router.get("/ids/{value}", operation_id="ids.explain")
def explain(value: Annotated[str, Path(max_length=200, json_schema_extra={"pattern": TEXT_PATTERN}, description=(
                 "Any value (but a NUL, refused in any URL); it is explained, not trusted."))],
            call: Authenticated) -> dict[str, Any]:
    """Format, entity and words of ``value``, what is wrong with it if anything, whether it exists in the
    caller's organization (false for another organization's rows: they are not yours), and — for an ID the
    cutover replaced — the ID it became (``migrated_to``), followed through every recorded hop, shown only
    when that ID is the caller's.  Old addresses are not aliases: they still answer 404 elsewhere."""
    report = explain_id(value).as_dict()
    with call.gateway.db.transaction(write=False) as tx:
        report["exists_in_your_organization"] = _exists(tx, value, call.who.tenant_id)
        current = resolve_migrated_id(tx, value)
        visible = current is not None and _exists(tx, current, call.who.tenant_id)
    report["migrated_to"] = current if visible else None
    return report


def _exists(tx: Tx, value: str, tenant_id: str) -> bool | None:
    """Whether ``value`` names a row of the caller's organization; ``None`` when it names no known table."""
    prefix = id_prefix_of(value)
    statement = _EXISTS.get(prefix) if prefix else None
    if statement is None:
        return None
    return tx.one(statement, {"id": value, "tenant_id": tenant_id}) is not None
