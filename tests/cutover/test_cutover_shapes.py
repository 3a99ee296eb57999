"""Retired prefixes keep their whole tail, whatever word/suffix format it has (both engines), and the nil UUID
is never treated as an identity.

The ID format's rename of ``organization-…`` to ``org-…`` keeps the tail as it was minted: two words and 12
Crockford characters, or — the development rows of the three-word era — three words and 20 characters whose
first two words may both be adjectives.  Such an organization must be renamed (with its hop recorded), not
block the whole run; its renamed ID must then stay on every later run and pass the start-up check.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.cutover.detect import has_legacy_identities, legacy_identities
from agentfy.cutover.errors import IdConflictError
from agentfy.cutover.run import translate
from agentfy.cutover.shapes import RETIRED_PREFIX, stays
from agentfy.ids import ID_SUFFIX_ALPHABET, NIL_UUID, format_id
from agentfy.ids.words import ADJECTIVES, NOUNS, VERBS
from agentfy.store.db import Database
from tests.cutover.test_cutover_run import alone, cutover, entity_ids, execute, generate, hops_of, refused, scalar

runner = CliRunner()
ADJ = sorted(ADJECTIVES)
NOUN = sorted(NOUNS)
#: organization-<adjective>-<adjective>-<noun>-<20 characters>: a development row of the three-word era.
DEV_TAIL = f"{ADJ[3]}-{ADJ[7]}-{NOUN[11]}-0123456789abcdefghjk"
DEV_ORG = f"organization-{DEV_TAIL}"
DEV_MEMBER = f"organization-member-{ADJ[1]}-{NOUN[2]}-{sorted(VERBS)[3]}-abcdefghjkmnpqrstvwx"


def tails() -> st.SearchStrategy[str]:
    words = st.sampled_from(sorted(ADJECTIVES | NOUNS | VERBS))
    suffix = st.text(alphabet=ID_SUFFIX_ALPHABET, min_size=20, max_size=20)
    two = st.tuples(words, words, suffix).map(lambda t: f"{t[0]}-{t[1]}-{t[2][:12]}")
    three = st.tuples(words, words, words, suffix).map("-".join)
    return two | three


@given(st.sampled_from(sorted(RETIRED_PREFIX)), tails())
def test_every_tail_a_retired_prefix_was_minted_with_is_kept(prefix: str, tail: str) -> None:
    table = {"org": "organizations", "org-member": "org_members", "org-credential": "org_credentials",
             "org-policy": "org_policies"}[prefix]
    assert translate(f"{RETIRED_PREFIX[prefix]}-{tail}", table) == (f"{prefix}-{tail}", "renamed")
    assert stays(f"{prefix}-{tail}", prefix)  # and the renamed ID stays on the next run
    assert translate(f"{prefix}-{tail}", table) is None


@pytest.mark.parametrize("tail", [f"{ADJ[0]}-{NOUN[0]}-0123456789abcdefghjk",  # 2 words, 20 characters
                                  f"{ADJ[0]}-{NOUN[0]}-{ADJ[1]}-0123456789ab",  # 3 words, 12 characters
                                  f"{ADJ[0]}-{NOUN[0]}-{NOUN[1]}-{ADJ[2]}-0123456789abcdefghjk",
                                  f"{ADJ[0]}-notaword-0123456789ab", f"{ADJ[0]}-{NOUN[0]}-0123456789ai"])
def test_a_tail_no_retired_prefix_was_minted_with_is_refused(tail: str) -> None:
    with pytest.raises(IdConflictError, match=r"organizations\.id holds"):
        translate(f"organization-{tail}", "organizations")


def test_the_nil_uuid_in_a_primary_key_is_refused_never_minted() -> None:
    for table in ("organizations", "agents"):
        with pytest.raises(IdConflictError, match=rf"{table}\.id holds the nil UUID"):
            translate(NIL_UUID, table)


def _insert_dev_rows(db: Database) -> str:
    user = format_id("user")
    execute(db, "INSERT INTO organizations (id, slug, name, settings, created_at) VALUES (:id, 'dev', 'Dev', "
                ":settings, 'now')", {"id": DEV_ORG, "settings": f'{{"owner": "{DEV_ORG}"}}'})
    execute(db, "INSERT INTO users (id, email, display_name, created_at) VALUES (:id, 'u@x.example', 'U', 'now')",
            {"id": user})
    execute(db, "INSERT INTO org_members (id, org_id, user_id, role, created_at) VALUES (:id, :org, :user, "
                "'owner', 'now')", {"id": DEV_MEMBER, "org": DEV_ORG, "user": user})
    return user


def test_a_three_word_organization_is_renamed_by_the_command(db: Database, db_url: str, tmp_path: Path) -> None:
    _insert_dev_rows(db)
    assert legacy_identities(db) == {"organizations": 1, "org_members": 1}
    alone(db)
    result = runner.invoke(app, ["cutover", "run", "--database-url", db_url, "--backup", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    new_org, new_member = f"org-{DEV_TAIL}", "org-member" + DEV_MEMBER.removeprefix("organization-member")
    assert entity_ids(db, "organizations") == [new_org]
    assert entity_ids(db, "org_members") == [new_member]
    assert scalar(db, "SELECT org_id FROM org_members") == new_org
    assert scalar(db, "SELECT settings FROM organizations") == f'{{"owner": "{new_org}"}}'
    assert hops_of(db, [DEV_ORG, DEV_MEMBER]) == {DEV_ORG: new_org, DEV_MEMBER: new_member}
    assert not has_legacy_identities(db) and legacy_identities(db) == {}
    again = cutover(db, tmp_path, backup=tmp_path / "again")
    assert again.changed_identities == 0 and not (tmp_path / "again").exists()


# -- the nil UUID -----------------------------------------------------------------------------------------------
def test_nil_uuid_references_are_set_to_null_never_re_pointed(db: Database, tmp_path: Path) -> None:
    manifest = generate(db)
    tenant = manifest.platform_org_id
    for table in ("traces", "spans", "usage_snapshots"):
        execute(db, f"UPDATE {table} SET agent_id = :nil WHERE tenant_id = :org", {"nil": NIL_UUID, "org": tenant})
    nil_rows = {table: scalar(db, f"SELECT count(*) FROM {table} WHERE agent_id = :nil", {"nil": NIL_UUID})
                for table in ("traces", "spans", "usage_snapshots")}
    execute(db, "UPDATE event_outbox SET source_id = :nil WHERE tenant_id = :org", {"nil": NIL_UUID, "org": tenant})
    kept = scalar(db, "SELECT count(*) FROM event_outbox WHERE source_id = :nil", {"nil": NIL_UUID})
    assert all(nil_rows.values()) and kept

    report = cutover(db, tmp_path)

    assert report.nil_cleared == {f"{table}.agent_id": count for table, count in nil_rows.items()}
    assert report.nil_kept == {"event_outbox.source_id": kept}  # NOT NULL: left as it was, and reported
    for table in nil_rows:
        assert scalar(db, f"SELECT count(*) FROM {table} WHERE agent_id = :nil", {"nil": NIL_UUID}) == 0
    assert scalar(db, "SELECT count(*) FROM event_outbox WHERE source_id = :nil", {"nil": NIL_UUID}) == kept
    assert hops_of(db, [NIL_UUID]) == {}  # never an identity: no hop, nothing minted for it
    assert scalar(db, "SELECT count(*) FROM id_migrations WHERE old_id = :nil", {"nil": NIL_UUID}) == 0


def test_nil_uuid_references_alone_are_cleared_and_printed(db: Database, db_url: str, tmp_path: Path) -> None:
    execute(db, "INSERT INTO usage_snapshots (tenant_id, agent_id, model, input_tokens, output_tokens, recorded_at) "
                "VALUES (:nil, :nil, 'm', 1, 1, 'now')", {"nil": NIL_UUID})
    alone(db)
    result = runner.invoke(app, ["cutover", "run", "--database-url", db_url, "--backup", str(tmp_path / "b")])
    assert result.exit_code == 0, result.output
    assert "usage_snapshots.agent_id: 1 nil UUID(s) (no identity) set to NULL" in result.stdout
    assert "usage_snapshots.tenant_id: 1 nil UUID(s)" in result.stdout
    assert scalar(db, "SELECT count(*) FROM usage_snapshots WHERE agent_id IS NULL AND tenant_id IS NULL") == 1
    again = cutover(db, tmp_path, backup=tmp_path / "again")
    assert not again.changed_anything and not (tmp_path / "again").exists()


def test_a_nil_uuid_primary_key_is_refused_and_nothing_changes(db: Database, tmp_path: Path) -> None:
    manifest = generate(db)
    execute(db, "INSERT INTO agents (id, tenant_id, agent_key, display_name, config, created_at, updated_at) "
                "VALUES (:nil, :org, 'nil', 'Nil', '{}', 'now', 'now')",
                {"nil": NIL_UUID, "org": manifest.platform_org_id})
    execute(db, "UPDATE traces SET agent_id = :nil", {"nil": NIL_UUID})
    refused(db, tmp_path, IdConflictError, r"agents\.id holds the nil UUID")
