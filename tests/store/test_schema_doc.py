"""docs/schema.md is generated from the models and must match them."""

from __future__ import annotations

from pathlib import Path

from agentfy.store.schema import metadata
from agentfy.store.schema_doc import render

DOC = Path(__file__).resolve().parents[2] / "docs" / "schema.md"


def test_docs_schema_md_matches_the_models() -> None:
    assert DOC.read_text() == render(), "run: python -m agentfy.store.schema_doc > docs/schema.md"


def test_every_foreign_key_states_on_delete() -> None:
    for table in metadata.sorted_tables:
        for fk in table.foreign_key_constraints:
            assert fk.ondelete in ("CASCADE", "SET NULL"), (table.name, fk.column_keys)
            if fk.ondelete == "SET NULL":
                assert all(table.c[c].nullable for c in fk.column_keys), (table.name, fk.column_keys)


def test_constraint_names_fit_postgresqls_identifier_limit() -> None:
    # PostgreSQL reports a violated constraint by name; a truncated name would not map back to its columns.
    for table in metadata.sorted_tables:
        for item in [*table.constraints, *table.indexes]:
            assert item.name is None or len(str(item.name)) <= 63, (table.name, item.name)
