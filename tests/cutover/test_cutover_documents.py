"""JSON documents keep their bytes except the ID tokens, and old IDs written after an earlier cutover are
rewritten by the next one (both engines)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentfy.cutover.hops import record_hops
from agentfy.cutover.run import rewrite_json_text
from agentfy.store.db import Database
from tests.cutover.test_cutover_run import cutover, execute, generate, scalar

OLD, NEW = "5b0c1e2a-3d4f-4a5b-8c6d-7e8f9a0b1c2d", "agent-calm-rivers-k8m4p2d7n9x3"


def test_only_the_id_tokens_change_in_a_document() -> None:
    text = ('{\n    "delegate_to": "' + OLD + '",\n    "caf\\u00e9": ["\\u2603", "' + OLD + '"],\n'
            '    "quoted": "say \\"' + OLD + '\\"",\n    "' + OLD + '": {"escaped": "\\u0035b0c1e2a-3d4f-4a5b-8c6d-'
            '7e8f9a0b1c2d"}\n}\n')
    assert rewrite_json_text(text, {OLD: NEW}) == text.replace(f'"{OLD}"', f'"{NEW}"').replace(
        '"\\u0035b0c1e2a-3d4f-4a5b-8c6d-7e8f9a0b1c2d"', f'"{NEW}"')
    assert rewrite_json_text(text, {"other": NEW}) is None


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text() | st.just(OLD),
                    lambda inner: st.lists(inner) | st.dictionaries(st.text() | st.just(OLD), inner), max_leaves=20),
       st.sampled_from([None, 2]), st.booleans())
@pytest.mark.slow
def test_a_rewritten_document_parses_to_the_translated_document(document: object, indent: int | None,
                                                                ascii_only: bool) -> None:
    import json

    def translated(node: object) -> object:
        if isinstance(node, str):
            return NEW if node == OLD else node
        if isinstance(node, list):
            return [translated(item) for item in node]
        if isinstance(node, dict):
            return {translated(key): translated(value) for key, value in node.items()}
        return node

    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only)
    rewritten = rewrite_json_text(text, {OLD: NEW})
    assert json.loads(rewritten if rewritten is not None else text) == translated(document)
    if rewritten is not None:
        assert len(rewritten) - len(text) == (len(NEW) - len(OLD)) * rewritten.count(NEW)  # nothing else moved


RETIRED = "organization-calm-rivers-k8m4p2d7n9x3"
_IDS = st.sampled_from([OLD, RETIRED, "0193a5b0-7000-7000-8000-000000000001"])
_STRINGS = st.text() | _IDS | st.builds("{} {}".format, st.text(), _IDS)  # an ID alone, or inside a longer string


@given(st.recursive(st.none() | st.booleans() | st.integers() | _STRINGS,
                    lambda inner: st.lists(inner) | st.dictionaries(st.text() | _IDS, inner), max_leaves=20),
       st.sampled_from([None, 2]), st.booleans())
@pytest.mark.slow
def test_the_plain_text_search_finds_what_the_parsed_document_holds(document: object, indent: int | None,
                                                                    ascii_only: bool) -> None:
    """Without a backslash in the text, the legacy-shaped string tokens are found and rewritten by a search of
    the text; with or without, it is the same as walking the parsed document and rewriting every token."""
    import json

    from agentfy.cutover.run import _json_ids, _strings

    text = json.dumps(document, indent=indent, ensure_ascii=ascii_only)
    assert _json_ids(text) == set(_strings(json.loads(text)))
    mapping = {OLD: NEW, RETIRED: "org-calm-rivers-k8m4p2d7n9x3"}
    assert rewrite_json_text(text, mapping, legacy_only=True) == rewrite_json_text(text, mapping)


@pytest.mark.slow
def test_documents_keep_their_formatting_and_escapes(db: Database, tmp_path: Path) -> None:
    manifest = generate(db)
    agent = next(a for a in manifest.identities["agents"] if len(a) == 36)
    config = ('{\n  "delegate_to": "' + agent + '",\n  "greeting": "caf\\u00e9 \\u2603",\n  "emoji": "\\ud83d\\ude00",'
              '\n  "count": 1.50\n}')
    execute(db, "UPDATE agents SET config = :config WHERE id = :id", {"config": config, "id": agent})

    cutover(db, tmp_path)

    new_agent = scalar(db, "SELECT new_id FROM id_migrations WHERE old_id = :old", {"old": agent})
    assert scalar(db, "SELECT config FROM agents WHERE id = :id", {"id": new_agent}) == config.replace(agent, new_agent)


# -- old IDs written after an earlier cutover ---------------------------------------------------------------------
@pytest.mark.slow
def test_old_ids_written_after_a_cutover_are_rewritten_by_the_next_run(db: Database, tmp_path: Path) -> None:
    manifest = generate(db, "mixed")
    uuid_era = "7c0c1e2a-3d4f-4a5b-8c6d-7e8f9a0b1c2d"
    prefixed_org = next(org for org, style in manifest.org_styles.items() if style == "prefixed")
    with db.transaction() as tx:  # an earlier run's hop: UUID -> organization-… (renamed by the first run below)
        record_hops(tx, [(uuid_era, prefixed_org, "Organization")], run_id="earlier")
    first = cutover(db, tmp_path, backup=tmp_path / "first")
    old_agent = next(a for a in manifest.identities["agents"] if len(a) == 36)
    old_org = manifest.platform_org_id
    new_agent, new_org, renamed_org = (scalar(db, "SELECT new_id FROM id_migrations WHERE old_id = :old",
                                              {"old": old}) for old in (old_agent, old_org, prefixed_org))
    # Written afterwards by something other than the API: old IDs in references and in a document.
    execute(db, "UPDATE traces SET agent_id = :old", {"old": old_agent})
    execute(db, "UPDATE event_outbox SET tenant_id = :old WHERE tenant_id = :new", {"old": old_org, "new": new_org})
    execute(db, "UPDATE organizations SET settings = :doc WHERE id = :id",
            {"doc": f'{{"partner": "{uuid_era}", "self": "{old_org}"}}', "id": new_org})
    traces = scalar(db, "SELECT count(*) FROM traces")

    second = cutover(db, tmp_path, backup=tmp_path / "second")

    assert second.changed_identities == second.hops == 0 and first.changed_identities > 0
    assert second.changes["traces.agent_id"] == traces
    assert scalar(db, "SELECT count(*) FROM traces WHERE agent_id = :new", {"new": new_agent}) == traces
    assert scalar(db, "SELECT count(*) FROM event_outbox WHERE tenant_id = :old", {"old": old_org}) == 0
    assert scalar(db, "SELECT settings FROM organizations WHERE id = :id", {"id": new_org}) \
        == f'{{"partner": "{renamed_org}", "self": "{new_org}"}}'  # two hops followed to the current ID
    assert (tmp_path / "second").exists()  # a real rewrite: backed up first
    third = cutover(db, tmp_path, backup=tmp_path / "third")
    assert not third.changed_anything and not (tmp_path / "third").exists()
