"""``search_vault`` and ``read_vault``: the agent's own text documents, by search and by path or ID (both
engines); another agent's or tenant's document is not found, a binary one is refused."""

from __future__ import annotations

from agentfy.permissions.channels import telegram_context
from agentfy.runtime.runner import Runtime
from agentfy.runtime.tools.vault import READ_MAX_CHARS
from agentfy.store.db import Database
from agentfy.store.repos import vault
from agentfy.store.repos.vault import VaultUpload
from tests.helpers.tenants import Tenant
from tests.runtime.helpers import inbound, send
from tests.store.helpers import new_agent


def _upload(db: Database, org: Tenant, path: str, content: bytes, content_type: str = "text/plain",
            agent_id: str | None = None) -> str:
    assert org.bot is not None
    with db.transaction() as tx:
        [document_id] = vault.upload_documents(tx, org.scope, [VaultUpload(
            agent_id=agent_id or org.bot.id, path=path, content_type=content_type, content=content)])
    return document_id


def _ask(runtime: Runtime, org: Tenant, command: str) -> str:
    reply = send(runtime, inbound(org, telegram_context(1001, 1001, is_group=False, tenant_id=org.id), command))
    assert reply.text is not None
    return reply.text


def test_search_vault_finds_the_agents_text_documents_only(db: Database, runtime: Runtime, acme: Tenant,
                                                           globex: Tenant) -> None:
    _upload(db, acme, "guides/onboarding.md", b"Onboarding: the badge office opens at nine", "text/markdown")
    _upload(db, acme, "badge.png", b"\x89PNG badge", "image/png")
    _upload(db, acme, "helper.txt", b"badge rules", agent_id=new_agent(db, acme.scope, "helper").id)
    _upload(db, globex, "badge.txt", b"globex badge policy")
    assert _ask(runtime, acme, "/tool search_vault query=badge") == (
        "search_vault: [vault] guides/onboarding.md: Onboarding: the badge office opens at nine")
    assert _ask(runtime, acme, "/tool search_vault query=policy") == "search_vault: no vault document matches 'policy'"


def test_a_blank_query_is_the_tools_error(runtime: Runtime, acme: Tenant) -> None:
    answer = _ask(runtime, acme, "/tool search_vault query='   '")
    assert answer.startswith("search_vault: error: search_vault: invalid query '   '"), answer
    assert "expected words to search for" in answer


def test_read_vault_by_path_and_by_id(db: Database, runtime: Runtime, acme: Tenant) -> None:
    document_id = _upload(db, acme, "notes/today.txt", "café at noon".encode())
    expected = "read_vault: notes/today.txt (text/plain, 13 bytes):\ncafé at noon"
    assert _ask(runtime, acme, "/tool read_vault document=notes/today.txt") == expected
    assert _ask(runtime, acme, f"/tool read_vault document={document_id}") == expected


def test_read_vault_bounds_a_long_document(db: Database, runtime: Runtime, acme: Tenant) -> None:
    _upload(db, acme, "long.txt", b"x" * (READ_MAX_CHARS + 5))
    answer = _ask(runtime, acme, "/tool read_vault document=long.txt")
    header, body = answer.split("\n", 1)
    assert header == f"read_vault: long.txt (text/plain, {READ_MAX_CHARS + 5} bytes), the first {READ_MAX_CHARS} " \
                     "characters:"
    assert body == "x" * READ_MAX_CHARS


def test_another_agents_or_tenants_document_is_not_found(db: Database, runtime: Runtime, acme: Tenant,
                                                         globex: Tenant) -> None:
    theirs = _upload(db, globex, "secret.txt", b"globex secret")
    helper = _upload(db, acme, "helper.txt", b"helper notes", agent_id=new_agent(db, acme.scope, "helper").id)
    for document in (theirs, helper, "secret.txt", "helper.txt", "missing.txt"):
        answer = _ask(runtime, acme, f"/tool read_vault document={document}")
        assert answer == (f"read_vault: error: read_vault: there is no vault document {document!r} (a path or "
                          "document ID of this agent's vault; search_vault finds them)")


def test_a_binary_document_is_refused_with_its_media_type(db: Database, runtime: Runtime, acme: Tenant) -> None:
    _upload(db, acme, "scan.pdf", b"%PDF-1.7", "application/pdf")
    assert _ask(runtime, acme, "/tool read_vault document=scan.pdf") == (
        "read_vault: error: read_vault: scan.pdf is application/pdf (8 bytes), not text; only text documents can "
        "be read")
