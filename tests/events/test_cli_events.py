"""`agentfy events dead-letters | requeue` and the schema-revision guard of the database commands."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.events.admin import status_of
from agentfy.events.outbox import publish
from agentfy.events.worker import Worker
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from tests.store.helpers import new_tenant

runner = CliRunner()


def test_dead_letters_are_listed_and_can_be_requeued(db_url: str) -> None:
    db = Database(db_url)
    try:
        acme = new_tenant(db, "acme")
        with db.transaction() as tx:
            event = publish(tx, type="test.happened", tenant_id=acme.tenant_id, source_id="s",
                            agent_id="goctech-leader")
        assert event is not None
        Worker(db, {"test.happened": lambda tx, scope, e: None}).run_once()
        result = runner.invoke(app, ["events", "dead-letters", "--database-url", db_url, "--json"])
        assert result.exit_code == 0
        page = json.loads(result.stdout)
        [dead] = page["letters"]
        assert page["next_cursor"] is None
        assert dead["id"] == event.id and "invalid agent_id 'goctech-leader'" in dead["last_error"]
        assert runner.invoke(app, ["events", "requeue", event.id, "--database-url", db_url]).exit_code == 0
        assert status_of(db, event.id) == ("pending", 0, None)
        assert runner.invoke(app, ["events", "requeue", event.id, "--database-url", db_url]).exit_code == 1
        assert runner.invoke(app, ["events", "requeue", "nope", "--database-url", db_url]).exit_code == 2
    finally:
        db.dispose()


def test_commands_refuse_a_database_behind_the_migrations(tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = f"sqlite:///{tmp_path / 'old.db'}"
    db = Database(url)
    upgrade(db, "0001")
    db.dispose()
    result = runner.invoke(app, ["events", "dead-letters", "--database-url", url])
    assert result.exit_code == 1 and "run `agentfy db upgrade` first" in result.stderr
    assert runner.invoke(app, ["db", "current", "--database-url", url]).exit_code == 1
    assert runner.invoke(app, ["db", "upgrade", "--database-url", url]).exit_code == 0
    assert runner.invoke(app, ["events", "dead-letters", "--database-url", url]).exit_code == 0
