"""Which columns the cutover rewrites or scans, and how one primary key is translated.

The reference map must cover the whole schema (a column added later gets a conscious decision: reference,
JSON, scanned, history or user content), agree with the database's own catalog on both engines, and the
translation must follow the cutover's rules: UUID -> minted canonical ID, retired prefix -> same tail, canonical and
Agentfy's three-word legacy format -> unchanged, anything else -> refused with the value named.
"""

from __future__ import annotations

import string
import uuid

import pytest
import sqlalchemy as sa
from hypothesis import assume, given
from hypothesis import strategies as st

from agentfy.cutover.engines import open_engine
from agentfy.cutover.errors import IdConflictError
from agentfy.cutover.references import (
    DECLARED_ID_COLUMNS,
    ENTITY_TABLES,
    HISTORICAL_TABLES,
    JSON_COLUMNS,
    LEGACY_SHAPED,
    OPAQUE_COLUMNS,
    discover,
)
from agentfy.cutover.run import PLATFORM_LEGACY_UUID, translate
from agentfy.cutover.shapes import RETIRED_PREFIX
from agentfy.ids import AGENTFY_WORDS_LEGACY, format_id, is_canonical_id
from agentfy.store.db import Database
from agentfy.store.repos.orgs import PLATFORM_ORG_ID
from agentfy.store.schema import metadata


def metadata_foreign_keys() -> list[tuple[str, str, str, str]]:
    return [(fk.parent.table.name, fk.parent.name, fk.column.table.name, fk.column.name)
            for table in metadata.sorted_tables for fk in table.foreign_keys]


def test_every_text_column_has_a_decision() -> None:
    references = discover(metadata_foreign_keys())
    rewritten = {(c.table, c.column) for c in references.id_columns} | set(JSON_COLUMNS)
    for table in metadata.sorted_tables:
        for column in table.columns:
            if not isinstance(column.type, sa.Text | sa.String):
                continue
            key = (table.name, column.name)
            decided = (key in rewritten or key in references.scanned or key in OPAQUE_COLUMNS
                       or table.name in HISTORICAL_TABLES or column.name.endswith("_at"))
            assert decided, f"{table.name}.{column.name} is neither rewritten, scanned, history nor user content"
    assert not set(references.scanned) & rewritten


def test_every_entity_key_and_reference_is_rewritten() -> None:
    references = discover(metadata_foreign_keys())
    kinds = {(c.table, c.column): c.kind for c in references.id_columns}
    for table in ENTITY_TABLES:
        assert kinds[(table, "id")] == "primary key"
    assert kinds[("session_messages", "tenant_id")] == "foreign key"  # via sessions.tenant_id, transitively
    assert kinds[("organizations", "default_agent_id")] == "soft reference"
    assert kinds[("spans", "agent_id")] == "soft reference"
    for declared in DECLARED_ID_COLUMNS:
        assert declared in kinds
    assert ("session_messages", "session_key") not in kinds  # not an ID, though an FK column
    assert ("org_audit", "org_id") not in kinds  # history


def test_a_declared_column_missing_from_the_schema_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import agentfy.cutover.references as module

    monkeypatch.setattr(module, "DECLARED_ID_COLUMNS", (("agents", "renamed_away"),))
    with pytest.raises(ValueError, match=r"agents\.renamed_away"):
        discover([])


def test_the_catalog_agrees_with_the_schema(db_url: str) -> None:
    Database(db_url).dispose()
    engine = open_engine(db_url, 2.0)
    try:
        catalog = set(engine.foreign_keys())
    finally:
        engine.close()
    assert catalog == set(metadata_foreign_keys())


# -- translate -----------------------------------------------------------------------------------------------
def test_the_platform_uuid_becomes_the_platform_id() -> None:
    assert translate(PLATFORM_LEGACY_UUID, "organizations") == (PLATFORM_ORG_ID, "fixed")
    # In any other table the same UUID is an ordinary legacy ID.
    new_id, how = translate(PLATFORM_LEGACY_UUID, "agents") or ("", "")
    assert how == "minted" and is_canonical_id(new_id, "agent")


@given(st.uuids(), st.sampled_from(sorted(ENTITY_TABLES)))
def test_a_uuid_gets_a_freshly_minted_id_of_its_table(value: uuid.UUID, table: str) -> None:
    decision = translate(str(value), table)
    assert decision is not None
    new_id, how = decision
    if table == "organizations" and str(value) == PLATFORM_LEGACY_UUID:
        return
    assert how == "minted" and is_canonical_id(new_id, ENTITY_TABLES[table])


@given(st.sampled_from(sorted(RETIRED_PREFIX)))
def test_a_retired_prefix_keeps_its_tail(prefix: str) -> None:
    table = next(t for t, p in ENTITY_TABLES.items() if p == prefix)
    canonical = format_id(prefix)
    legacy = RETIRED_PREFIX[prefix] + canonical[len(prefix):]
    assert translate(legacy, table) == (canonical, "renamed")
    assert LEGACY_SHAPED.fullmatch(legacy)


@given(st.sampled_from(sorted(ENTITY_TABLES)))
def test_a_canonical_id_stays(table: str) -> None:
    assert translate(format_id(ENTITY_TABLES[table]), table) is None


def test_agentfys_three_word_legacy_format_stays() -> None:
    words = [sorted(d)[0] if d is not None else "word" for d in AGENTFY_WORDS_LEGACY.dictionaries]
    example = "-".join(["agent", *words, AGENTFY_WORDS_LEGACY.suffix_alphabet[:20]])
    assert AGENTFY_WORDS_LEGACY.match(example, frozenset({"agent"})), "fixture must be the three-word format"
    assert translate(example, "agents") is None


@given(st.text(alphabet=string.ascii_lowercase + string.digits + "-", min_size=1, max_size=80))
def test_anything_else_is_refused_with_the_value_named(value: str) -> None:
    table = "agents"
    try:
        decision = translate(value, table)
    except IdConflictError as error:
        assert repr(value) in str(error) and "agents.id" in str(error)
        return
    # Accepted only if it is one of the shapes the cutover knows.
    assert (decision is None and (is_canonical_id(value, "agent")
                                  or AGENTFY_WORDS_LEGACY.match(value, frozenset({"agent"}))))\
        or (decision is not None and LEGACY_SHAPED.fullmatch(value))


def test_a_wrong_entitys_retired_prefix_is_refused() -> None:
    org_member = format_id("org-member")
    legacy = "organization-member" + org_member[len("org-member"):]
    with pytest.raises(IdConflictError, match=r"organizations\.id"):
        translate(legacy, "organizations")  # an organization-member ID as an organization's key


#: Text around an ID; no NUL, where SQLite's GLOB (any pattern) stops reading a text value.
_AROUND = st.text(st.characters(blacklist_characters="\x00"), max_size=40)


@given(_AROUND, st.sampled_from(["uuid", *sorted(RETIRED_PREFIX)]), _AROUND)
def test_the_sqlite_prefilter_lets_every_legacy_shaped_value_through(before: str, kind: str, after: str) -> None:
    """The GLOB prefilter may let more through (Python decides), never less: any value holding a legacy-shaped
    ID matches one of its patterns."""
    import sqlite3

    from agentfy.cutover.references import LEGACY_SHAPED_GLOBS

    legacy = str(uuid.uuid4()) if kind == "uuid" else RETIRED_PREFIX[kind] + format_id(kind)[len(kind):]
    value = before + legacy + after
    assume(LEGACY_SHAPED.search(value))  # (an ID followed by more letters or digits is not one)
    with sqlite3.connect(":memory:") as connection:
        assert any(connection.execute("SELECT ? GLOB ?", (value, pattern)).fetchone()[0]
                   for pattern in LEGACY_SHAPED_GLOBS)
