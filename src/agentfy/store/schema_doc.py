"""``docs/schema.md``, generated from the models so that it cannot drift (a test compares them).

Regenerate with ``python -m agentfy.store.schema_doc > docs/schema.md``.
"""

from __future__ import annotations

import sqlalchemy as sa

from agentfy.store import search_index
from agentfy.store.schema import metadata

INTRO = """# Schema

Generated from `src/agentfy/store/schema.py` by `python -m agentfy.store.schema_doc > docs/schema.md`;
`tests/store/test_schema_doc.py` fails when this page and the models disagree.

Every ID column is `TEXT` with a CHECK (1-80 characters of `0-9 a-z -`) on both engines; IDs are validated
with `parse_id` before any SQL. Timestamps are ISO-8601 UTC text; JSON documents are text.
"""


def _id_columns(table: sa.Table) -> list[str]:
    return [c.name for c in table.columns if c.foreign_keys or c.info.get("id_prefix") or "references" in c.info
            or c.name == "tenant_id"]


def render() -> str:
    lines = [INTRO, "## Tables", "", "| table | primary key | ID prefix | ID columns | unique |",
             "|---|---|---|---|---|"]
    for table in metadata.sorted_tables:
        pk = ", ".join(c.name for c in table.primary_key.columns)
        prefix = table.c["id"].info.get("id_prefix", "") if "id" in table.c else ""
        uniques = [", ".join(c.name for c in u.columns) for u in table.constraints
                   if isinstance(u, sa.UniqueConstraint)]
        uniques += [", ".join(c.name for c in i.columns) + (" (not deleted)" if i.dialect_options["sqlite"]
                                                            .get("where") is not None else "")
                    for i in table.indexes if i.unique]
        lines.append(f"| `{table.name}` | {pk} | {f'`{prefix}`' if prefix else '—'} | "
                     f"{', '.join(_id_columns(table)) or '—'} | {'; '.join(uniques) or '—'} |")
    lines += ["", "## Foreign keys", "", "Every foreign key states its ON DELETE: CASCADE for owned rows, SET NULL "
              "for nullable references.", "", "| table | column(s) | references | ON DELETE |", "|---|---|---|---|"]
    for table in metadata.sorted_tables:
        for fk in sorted(table.foreign_key_constraints, key=lambda f: tuple(f.column_keys)):
            target = fk.elements[0].column.table.name
            columns = ", ".join(fk.column_keys)
            targets = ", ".join(e.column.name for e in fk.elements)
            lines.append(f"| `{table.name}` | {columns} | `{target}` ({targets}) | {fk.ondelete} |")
    lines += ["", "## References without a foreign key", "",
              "Found by the orphan scan and the cutover through `info[\"references\"]`.", "",
              "| table | column | references | why no FK |", "|---|---|---|---|"]
    for table in metadata.sorted_tables:
        for column in table.columns:
            if "references" in column.info:
                why = column.info.get("why_no_fk") or (
                    "telemetry: append-only, high volume" if table.name in ("spans", "traces", "usage_snapshots")
                    else "organizations and agents would reference each other; cleared when the agent is deleted")
                lines.append(f"| `{table.name}` | {column.name} | `{column.info['references']}` | {why} |")
    lines += ["", "## Full-text indexes (not in the models)", "",
              "Created by migration 0015 and kept in step in the writing transaction; named in "
              "`agentfy.store.search_index` (see docs/store.md, Full-text search).", "",
              "| engine | object | indexes |", "|---|---|---|"]
    for name, index in zip(search_index.INDEXED_TABLES, search_index.PG_INDEXES, strict=True):
        lines.append(f"| PostgreSQL | `{name}.{search_index.VECTOR_COLUMN}` (generated `tsvector`, GIN index "
                     f"`{index}`) | `{name}` |")
    sources = ", ".join(f"`{table}`" for table in search_index.INDEXED_TABLES)
    lines.append(f"| SQLite | `{search_index.ENTRIES_TABLE}` (written by triggers) and FTS5 "
                 f"`{search_index.FTS_TABLE}` over it | {sources} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
