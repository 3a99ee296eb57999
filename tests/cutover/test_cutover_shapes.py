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
from tests.cutover.test_cutover_run import alone, cutover, entity_ids, execute, hops_of, scalar

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
