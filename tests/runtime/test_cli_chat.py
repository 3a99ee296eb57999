"""``agentfy chat``: the terminal channel on a database, one line in, the reply out."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.identity import Scope
from agentfy.runtime import terminal
from agentfy.store.db import Database
from agentfy.store.repos import agents, orgs, sessions

runner = CliRunner()


def test_chat_creates_talks_and_ends_a_conversation(db: Database, db_url: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_WORKSPACE_ROOT", str(tmp_path / "ws"))
    missing = runner.invoke(app, ["chat", "helper", "--org", "demo", "--database-url", db_url])
    assert missing.exit_code == 2 and "add --create" in missing.output
    result = runner.invoke(app, ["chat", "helper", "--org", "demo", "--create", "--database-url", db_url],
                           input="hello\n/tool write_file path=a.txt content=hi\n/end\n")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "@helper heard: hello"
    assert lines[1].startswith("write_file: wrote a.txt (2 bytes) for terminal:")
    assert lines[2].startswith("(conversation ended: agent-")
    with db.transaction(write=False) as tx:
        scope = Scope(orgs.get_organization_by_slug(tx, "demo").id)
        key = lines[2].removeprefix("(conversation ended: ").removesuffix(")")
        assert sessions.get_session(tx, scope, key).status == "completed"
    # the only organization is found without --org; the next start opens the conversation's next session
    again = runner.invoke(app, ["chat", "helper", "--database-url", db_url], input="again\n")
    assert again.exit_code == 0 and again.stdout.strip() == "@helper heard: again"


def test_chat_prints_the_reply_as_it_streams(db: Database, tmp_path: Path) -> None:
    target = terminal.find_target(db, "helper", "demo", create=True)
    lines, pieces = iter(["hello there you"]), []
    replies = asyncio.run(terminal.chat(db, target, workspace_root=tmp_path, conversation="default",
                                        read=lambda: next(lines, None), write=pieces.append,
                                        write_piece=pieces.append))
    assert replies == 1 and len(pieces) > 2  # word by word, then the line's end
    assert "".join(pieces) == "@helper heard: hello there you\n"


def test_a_failed_run_prints_what_failed_and_the_chat_goes_on(db: Database, db_url: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTFY_WORKSPACE_ROOT", str(tmp_path / "ws"))
    with db.transaction() as tx:
        org = orgs.create_organization(tx, slug="demo", name="demo")
        agents.create_agent(tx, Scope(org.id), agent_key="helper", config={"model": {"provider": "nope"}})
    result = runner.invoke(app, ["chat", "helper", "--database-url", db_url], input="hello\nagain\n")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    assert lines[0].startswith("The agent's model is not configured correctly (agent helper: config.model.provider "
                               "'nope' is unknown") and "ask an admin" in lines[0]
