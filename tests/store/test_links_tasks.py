"""Agent links, MCP servers, team tasks and attachments: same-tenant references, scoping (both engines)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentfy.identity import InvalidIdError, Scope
from agentfy.ids import is_canonical_id
from agentfy.store.db import Database, Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError
from agentfy.store.repos import links, tasks, teams
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count, new_agent, not_found_like_missing


def _vault_document(db: Database, scope: Scope, agent_id: str, path: str) -> str:
    """A vault document row (the vault repository is not this module's)."""
    with db.transaction() as tx:
        document_id = tx.db.mint("vault-document")
        tx.execute("INSERT INTO vault_documents (id, tenant_id, agent_id, path, content_type, size, content, "
                   "created_at) VALUES (:id, :tenant_id, :agent_id, :path, 'text/plain', 2, :content, :now)",
                   {"id": document_id, "tenant_id": scope.tenant_id, "agent_id": agent_id, "path": path,
                    "content": b"hi", "now": now()})
    return document_id


# -- links ------------------------------------------------------------------------------------------------
def test_links_create_list_get_delete_and_duplicates(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    a, b, c = new_agent(db, acme, "a"), new_agent(db, acme, "b"), new_agent(db, acme, "c")
    with db.transaction() as tx:
        ab = links.create_link(tx, acme, a.id, b.id)
        ba = links.create_link(tx, acme, b.id, a.id, kind="handoff")
        bc = links.create_link(tx, acme, b.id, c.id)
    assert is_canonical_id(ab.id, "agent-link") and ab.kind == "delegate" and ba.kind == "handoff"
    with pytest.raises(ConflictError, match="already exists") as caught, db.transaction() as tx:
        links.create_link(tx, acme, a.id, b.id)
    assert caught.value.field == "target_agent_id" and caught.value.value == b.id
    with db.transaction() as tx:
        assert links.create_link(tx, acme, a.id, b.id, kind="handoff").kind == "handoff"  # another kind is fine
        assert links.get_link(tx, acme, ab.id) == ab
        assert {x.id for x in links.list_links(tx, acme, c.id)} == {bc.id}
        assert len(links.list_links(tx, acme, a.id)) == 3 and len(links.list_links(tx, acme)) == 4
        links.delete_link(tx, acme, ab.id)
        with pytest.raises(NotFoundError):
            links.delete_link(tx, acme, ab.id)
    assert count(db, "agent_links") == 3


def test_self_links_are_refused(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    a = new_agent(db, acme, "a")
    with pytest.raises(InvalidInputError, match="itself"), db.transaction() as tx:
        links.create_link(tx, acme, a.id, a.id)
    assert count(db, "agent_links") == 0


def test_links_to_or_from_another_tenants_agent_are_not_found(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    mine, theirs = new_agent(db, acme, "a"), new_agent(db, globex, "a")
    not_found_like_missing(db, "agent", "agent", lambda tx, ref: links.create_link(tx, acme, mine.id, ref),
                           theirs.id)
    not_found_like_missing(db, "agent", "agent", lambda tx, ref: links.create_link(tx, acme, ref, mine.id),
                           theirs.id)
    not_found_like_missing(db, "agent", "agent", lambda tx, ref: links.list_links(tx, acme, ref), theirs.id)
    assert count(db, "agent_links") == 0
    other = new_agent(db, globex, "b")
    with db.transaction() as tx:
        their_link = links.create_link(tx, globex, theirs.id, other.id)
    for call in (lambda tx, ref: links.get_link(tx, acme, ref), lambda tx, ref: links.delete_link(tx, acme, ref)):
        not_found_like_missing(db, "agent link", "agent-link", call, their_link.id)
    assert count(db, "agent_links") == 1


def test_link_ids_are_parsed_before_sql(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    a = new_agent(db, acme, "a")
    with pytest.raises(InvalidIdError) as caught, db.transaction() as tx:
        links.create_link(tx, acme, a.id, "b")
    assert caught.value.field == "target_agent_id"
    with pytest.raises(InvalidIdError) as caught, db.transaction() as tx:
        links.create_link(tx, acme, "team-calm-rivers-k8m4p2d7n9x3", a.id)
    assert caught.value.field == "source_agent_id"
    with pytest.raises(InvalidIdError), db.transaction() as tx:
        links.delete_link(tx, acme, a.id)
    assert count(db, "agent_links") == 0


# -- MCP servers ------------------------------------------------------------------------------------------
def test_mcp_servers_per_agent(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    a, b = new_agent(db, acme, "a"), new_agent(db, acme, "b")
    with db.transaction() as tx:
        server = links.add_mcp_server(tx, acme, a.id, name="github", url="https://mcp.example/github",
                                      config={"token_ref": "gh"})
        links.add_mcp_server(tx, acme, b.id, name="github", url="https://mcp.example/github")  # per agent
    assert is_canonical_id(server.id, "agent-mcp-server") and server.config == {"token_ref": "gh"}
    with pytest.raises(ConflictError, match="name 'github'") as caught, db.transaction() as tx:
        links.add_mcp_server(tx, acme, a.id, name="github", url="https://other")
    assert caught.value.field == "name"
    with db.transaction() as tx:
        assert links.get_mcp_server(tx, acme, server.id) == server
        assert links.list_mcp_servers(tx, acme, a.id) == [server]
    not_found_like_missing(db, "MCP server", "agent-mcp-server",
                           lambda tx, ref: links.get_mcp_server(tx, globex, ref), server.id)
    not_found_like_missing(db, "MCP server", "agent-mcp-server",
                           lambda tx, ref: links.delete_mcp_server(tx, globex, ref), server.id)
    not_found_like_missing(db, "agent", "agent",
                           lambda tx, ref: links.add_mcp_server(tx, globex, ref, name="x", url="https://x"), a.id)
    not_found_like_missing(db, "agent", "agent", lambda tx, ref: links.list_mcp_servers(tx, globex, ref), a.id)
    with pytest.raises(InvalidInputError, match="control character"), db.transaction() as tx:
        links.add_mcp_server(tx, acme, a.id, name="x", url="https://x\n")
    with pytest.raises(InvalidIdError), db.transaction() as tx:
        links.add_mcp_server(tx, acme, "a", name="x", url="https://x")
    with db.transaction() as tx:
        links.delete_mcp_server(tx, acme, server.id)
    assert count(db, "agent_mcp_servers") == 1


# -- tasks and attachments --------------------------------------------------------------------------------
def test_tasks_create_list_status_assign_delete(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    a, b = new_agent(db, acme, "a"), new_agent(db, acme, "b")
    with db.transaction() as tx:
        team = teams.create_team(tx, acme, name="T", lead_agent_id=a.id)
        teams.add_member(tx, acme, team.id, b.id)
        task = tasks.create_task(tx, acme, team.id, title="Write docs", created_by_agent_id=a.id,
                                 assignee_agent_id=b.id)
        loose = tasks.create_task(tx, acme, team.id, title="Anything")
    assert is_canonical_id(task.id, "team-task") and task.status == "open"
    assert (task.created_by_agent_id, task.assignee_agent_id) == (a.id, b.id)
    assert loose.created_by_agent_id is None and loose.assignee_agent_id is None
    with db.transaction() as tx:
        assert tasks.get_task(tx, acme, task.id) == task
        assert [t.id for t in tasks.list_tasks(tx, acme, team.id)] == [task.id, loose.id]
        assert tasks.assign_task(tx, acme, task.id, None).assignee_agent_id is None
        assert tasks.assign_task(tx, acme, task.id, a.id).assignee_agent_id == a.id
        assert tasks.claim_task(tx, acme, task.id, b.id).status == "claimed"
        assert [t.id for t in tasks.list_tasks(tx, acme, team.id, status="open")] == [loose.id]
        tasks.delete_task(tx, acme, loose.id)
        assert [t.id for t in tasks.list_tasks(tx, acme, team.id)] == [task.id]
    for bad in ("", "Done", "in progress", "x" * 40, "finished"):
        with pytest.raises(InvalidInputError, match="status") as caught, db.transaction() as tx:
            tasks.list_tasks(tx, acme, team.id, status=bad)
        assert "open, claimed, in_progress" in str(caught.value)


def test_task_references_must_be_in_the_tenant(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    mine, theirs = new_agent(db, acme, "a"), new_agent(db, globex, "a")
    with db.transaction() as tx:
        team = teams.create_team(tx, acme, name="T")
        their_team = teams.create_team(tx, globex, name="G")
        task = tasks.create_task(tx, acme, team.id, title="t")
    for call in (lambda tx, ref: tasks.create_task(tx, acme, team.id, title="x", created_by_agent_id=ref),
                 lambda tx, ref: tasks.create_task(tx, acme, team.id, title="x", assignee_agent_id=ref),
                 lambda tx, ref: tasks.assign_task(tx, acme, task.id, ref),
                 lambda tx, ref: tasks.add_attachment(tx, acme, task.id, name="x", created_by_agent_id=ref)):
        not_found_like_missing(db, "agent", "agent", call, theirs.id)
    not_found_like_missing(db, "team", "team", lambda tx, ref: tasks.create_task(tx, acme, ref, title="x"),
                           their_team.id)
    not_found_like_missing(db, "team", "team", lambda tx, ref: tasks.list_tasks(tx, acme, ref), their_team.id)
    task_calls: list[Callable[[Tx, str], Any]] = [
        lambda tx, ref: tasks.get_task(tx, globex, ref),
        lambda tx, ref: tasks.cancel_task(tx, globex, ref),
        lambda tx, ref: tasks.retry_task(tx, globex, ref),
        lambda tx, ref: tasks.complete_task(tx, globex, ref, "r"),
        lambda tx, ref: tasks.assign_task(tx, globex, ref, None),
        lambda tx, ref: tasks.delete_task(tx, globex, ref),
        lambda tx, ref: tasks.list_attachments(tx, globex, ref),
        lambda tx, ref: tasks.add_attachment(tx, globex, ref, name="x"),
    ]
    for task_call in task_calls:
        not_found_like_missing(db, "team task", "team-task", task_call, task.id)
    their_document = _vault_document(db, globex, theirs.id, "notes.md")
    not_found_like_missing(db, "vault document", "vault-document",
                           lambda tx, ref: tasks.add_attachment(tx, acme, task.id, name="x", vault_document_id=ref),
                           their_document)
    assert count(db, "team_tasks") == 1 and count(db, "team_task_attachments") == 0
    with db.transaction() as tx:
        assert tasks.get_task(tx, acme, task.id) == task
    assert mine.id != theirs.id


def test_task_ids_are_parsed_before_sql(db: Database) -> None:
    acme = make_tenant(db, "acme").scope
    a = new_agent(db, acme, "a")
    with db.transaction() as tx:
        team = teams.create_team(tx, acme, name="T")
        task = tasks.create_task(tx, acme, team.id, title="t")
    cases: list[tuple[Callable[[Tx], Any], str]] = [
        (lambda tx: tasks.create_task(tx, acme, a.id, title="x"), "team_id"),
        (lambda tx: tasks.create_task(tx, acme, team.id, title="x", created_by_agent_id="a"), "created_by_agent_id"),
        (lambda tx: tasks.create_task(tx, acme, team.id, title="x", assignee_agent_id=team.id), "assignee_agent_id"),
        (lambda tx: tasks.add_attachment(tx, acme, team.id, name="x"), "task_id"),
        (lambda tx: tasks.add_attachment(tx, acme, task.id, name="x", vault_document_id="notes.md"),
         "vault_document_id"),
        (lambda tx: tasks.delete_attachment(tx, acme, task.id), "attachment_id"),
    ]
    for call, field in cases:
        with pytest.raises(InvalidIdError) as caught, db.transaction() as tx:
            call(tx)
        assert caught.value.field == field
    assert count(db, "team_tasks") == 1 and count(db, "team_task_attachments") == 0


def test_attachments_with_and_without_a_vault_document(db: Database) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    a = new_agent(db, acme, "a")
    document = _vault_document(db, acme, a.id, "spec.md")
    with db.transaction() as tx:
        task = tasks.create_task(tx, acme, teams.create_team(tx, acme, name="T").id, title="t")
        linked = tasks.add_attachment(tx, acme, task.id, name="spec", created_by_agent_id=a.id,
                                      vault_document_id=document)
        note = tasks.add_attachment(tx, acme, task.id, name="note")
    assert is_canonical_id(linked.id, "team-task-attachment") and linked.vault_document_id == document
    assert note.vault_document_id is None and note.created_by_agent_id is None
    with db.transaction() as tx:
        assert tasks.get_attachment(tx, acme, linked.id) == linked
        assert tasks.list_attachments(tx, acme, task.id) == [linked, note]
    for call in (lambda tx, ref: tasks.get_attachment(tx, globex, ref),
                 lambda tx, ref: tasks.delete_attachment(tx, globex, ref)):
        not_found_like_missing(db, "team task attachment", "team-task-attachment", call, linked.id)
    with db.transaction() as tx:
        tasks.delete_task(tx, acme, task.id)
    assert count(db, "team_task_attachments") == 0 and count(db, "vault_documents") == 1
