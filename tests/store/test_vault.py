"""Vault: fail-fast bulk upload, (agent, path) conflicts, tenant isolation (both engines)."""

from __future__ import annotations

from typing import Any

import pytest

from agentfy.identity import InvalidIdError
from agentfy.ids import format_id, is_canonical_id
from agentfy.store.db import Database
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, StoreError
from agentfy.store.repos import agents, vault
from agentfy.store.repos.vault import VaultUpload
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count, new_agent


def _upload(agent_id: str, path: str, content: bytes = b"data", content_type: str = "text/plain") -> VaultUpload:
    return VaultUpload(agent_id=agent_id, path=path, content_type=content_type, content=content)


def test_upload_returns_ids_in_order_and_keeps_the_bytes(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot, helper = new_agent(db, acme, "bot"), new_agent(db, acme, "helper")
    payload = bytes(range(256)) * 4
    with db.transaction() as tx:
        ids = vault.upload_documents(tx, acme, [
            _upload(bot.id, "b/report.pdf", payload, "application/pdf"),
            _upload(bot.id, "a/notes.txt", b""),
            _upload(helper.id, "b/report.pdf", b"same path, other agent"),
        ])
    assert len(ids) == 3 and all(is_canonical_id(i, "vault-document") for i in ids)
    with db.transaction() as tx:
        report = vault.get_vault_document(tx, acme, ids[0])
        listing = vault.list_vault_documents(tx, acme, bot.id)
    assert report.content == payload and report.size == len(payload) and report.content_type == "application/pdf"
    assert report.agent_id == bot.id and report.tenant_id == acme.tenant_id
    assert [(d.id, d.path, d.size) for d in listing] == [(ids[1], "a/notes.txt", 0), (ids[0], "b/report.pdf", 1024)]


BAD_UPLOADS: dict[str, tuple[dict[str, Any], type[StoreError] | type[ValueError], str, str]] = {
    "agent_key": ({"agent_id": "goctech-leader"}, InvalidIdError, "agent_id", "'goctech-leader'"),
    "nil uuid": ({"agent_id": "00000000-0000-0000-0000-000000000000"}, InvalidIdError, "agent_id",
                 "'00000000-0000-0000-0000-000000000000'"),
    "other tenant's agent": ({"agent_id": "{theirs}"}, NotFoundError, "agent_id", "not found"),
    "archived agent": ({"agent_id": "{archived}"}, NotFoundError, "agent_id", "not found"),
    "empty path": ({"path": ""}, InvalidInputError, "path", "''"),
    "path with NUL": ({"path": "a\x00"}, InvalidInputError, "path", "NUL"),
    "empty content type": ({"content_type": ""}, InvalidInputError, "content_type", "''"),
    "text content": ({"content": "not bytes"}, InvalidInputError, "content", "expected bytes, got str"),
    "path already taken": ({"path": "taken.txt"}, ConflictError, "path", "already has a vault document at path "
                                                                         "'taken.txt'"),
    "path twice in the batch": ({"path": "good-0"}, ConflictError, "path", "'good-0' are already uploads[0]"),
}


@pytest.mark.parametrize("position", ["first", "middle", "last"])
@pytest.mark.parametrize("case", list(BAD_UPLOADS))
def test_one_bad_upload_fails_the_whole_batch_and_writes_nothing(db: Database, case: str, position: str) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    bot, theirs, archived = new_agent(db, acme, "bot"), new_agent(db, globex, "bot"), new_agent(db, acme, "old")
    with db.transaction() as tx:
        vault.upload_documents(tx, acme, [_upload(bot.id, "taken.txt")])
        agents.archive_agent(tx, acme, archived.id)
    overrides, error, field, fragment = BAD_UPLOADS[case]
    names = {"{theirs}": theirs.id, "{archived}": archived.id}
    values: dict[str, Any] = {"agent_id": bot.id, "path": "bad", "content_type": "text/plain", "content": b"x"}
    values.update({k: names.get(v, v) if isinstance(v, str) else v for k, v in overrides.items()})
    good = [_upload(bot.id, f"good-{i}") for i in range(4)]
    index = {"first": 0, "middle": 2, "last": len(good)}[position]
    if case == "path twice in the batch" and position == "first":
        index = 1
    with pytest.raises(error) as caught, db.transaction() as tx:
        vault.upload_documents(tx, acme, [*good[:index], VaultUpload(**values), *good[index:]])
    where = f"uploads[{index}].{field}"
    assert getattr(caught.value, "field", None) == where
    assert where in str(caught.value) and fragment in str(caught.value)
    if error is ConflictError:
        assert bot.id in str(caught.value)  # names the agent and the path
    assert count(db, "vault_documents") == 1


def test_documents_of_another_tenant_are_not_found(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    theirs = new_agent(db, globex, "bot")
    with db.transaction() as tx:
        (doc_id,) = vault.upload_documents(tx, globex, [_upload(theirs.id, "secret.txt", b"secret")])
    with db.transaction() as tx:
        for ref in (doc_id, format_id("vault-document")):
            with pytest.raises(NotFoundError, match=f"vault document '{ref}' not found"):
                vault.get_vault_document(tx, acme, ref)
            with pytest.raises(NotFoundError, match=f"vault document '{ref}' not found"):
                vault.delete_vault_document(tx, acme, ref)
        with pytest.raises(NotFoundError, match=f"agent '{theirs.id}' not found"):
            vault.list_vault_documents(tx, acme, theirs.id)
        with pytest.raises(InvalidIdError):
            vault.get_vault_document(tx, acme, "memory-document-calm-rivers-k8m4p2d7n9x3")
    with db.transaction() as tx:
        assert vault.get_vault_document(tx, globex, doc_id).content == b"secret"


def test_delete_frees_the_path(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        (first,) = vault.upload_documents(tx, acme, [_upload(bot.id, "a.txt")])
        vault.delete_vault_document(tx, acme, first)
        (second,) = vault.upload_documents(tx, acme, [_upload(bot.id, "a.txt", b"again")])
        assert vault.get_vault_document(tx, acme, second).content == b"again"
        assert vault.upload_documents(tx, acme, []) == []
    assert count(db, "vault_documents") == 1


def test_a_path_taken_between_the_check_and_the_insert_is_still_a_named_conflict(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    acme = make_tenant(db, "acme").scope
    bot = new_agent(db, acme, "bot")
    with db.transaction() as tx:
        vault.upload_documents(tx, acme, [_upload(bot.id, "raced.txt")])
    real, calls = vault._refuse_taken_paths, []

    def blind_first_time(*args: Any) -> None:  # as if a concurrent upload committed right after the check
        calls.append(1)
        if len(calls) > 1:
            real(*args)

    monkeypatch.setattr(vault, "_refuse_taken_paths", blind_first_time)
    with pytest.raises(ConflictError, match=rf"uploads\[1\].path: agent {bot.id} already has a vault document at "
                                            "path 'raced.txt'"), db.transaction() as tx:
        vault.upload_documents(tx, acme, [_upload(bot.id, "fresh.txt"), _upload(bot.id, "raced.txt")])
    assert count(db, "vault_documents") == 1
