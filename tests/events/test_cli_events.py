"""`agentfy events dead-letters | requeue | stats | prune`, `agentfy worker` and the bus options of `agentfy
serve`, and the schema-revision guard of the database commands."""

from __future__ import annotations

import base64
import json
import os

import pytest
from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.events.admin import status_of
from agentfy.events.consolidation import publish_session_completed
from agentfy.events.outbox import publish
from agentfy.events.settings import BusSettings
from agentfy.events.worker import Worker
from agentfy.settings import Settings, inherited_settings
from agentfy.store.db import Database
from agentfy.store.migrate import upgrade
from agentfy.store.repos import sessions
from tests.helpers.tenants import make_tenant
from tests.store.helpers import new_agent

runner = CliRunner()


def test_dead_letters_are_listed_and_can_be_requeued(db_url: str) -> None:
    db = Database(db_url)
    try:
        acme = make_tenant(db, "acme").scope
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
    assert result.exit_code == 4 and "run `agentfy db upgrade` first" in result.stderr  # 4: schema outdated
    assert runner.invoke(app, ["db", "current", "--database-url", url]).exit_code == 1  # a predicate: behind
    assert runner.invoke(app, ["db", "upgrade", "--database-url", url]).exit_code == 0
    assert runner.invoke(app, ["events", "dead-letters", "--database-url", url]).exit_code == 0


def _dead_letters(db: Database, n: int, type_: str = "test.happened") -> list[str]:
    acme = make_tenant(db, f"t{n}-{type_.split('.')[0]}").scope
    ids = []
    with db.transaction() as tx:
        for i in range(n):
            event = publish(tx, type=type_, tenant_id=acme.tenant_id, source_id=f"s{i}", agent_id="goctech-leader")
            assert event is not None
            ids.append(event.id)
    Worker(db, {type_: lambda tx, scope, e: None}).run_once()
    return ids


def test_dead_letters_are_paged_and_filtered(db_url: str) -> None:
    db = Database(db_url)
    try:
        ids = _dead_letters(db, 3)
        other = _dead_letters(db, 1, "other.happened")
        base = ["events", "dead-letters", "--database-url", db_url]
        first = runner.invoke(app, [*base, "--limit", "2"])
        assert first.exit_code == 0 and "more: --after " in first.stdout
        cursor = first.stdout.split("more: --after ")[1].split()[0]
        rest = json.loads(runner.invoke(app, [*base, "--limit", "2", "--after", cursor, "--json"]).stdout)
        assert len(rest["letters"]) == 2 and rest["next_cursor"] is None
        typed = json.loads(runner.invoke(app, [*base, "--type", "other.happened", "--json"]).stdout)
        assert [d["id"] for d in typed["letters"]] == other
        assert json.loads(runner.invoke(app, [*base, "--reason", "GOCTECH", "--newer-than", "1h", "--json"])
                          .stdout)["letters"].__len__() == 4
        assert "no dead letters match" in runner.invoke(app, [*base, "--older-than", "1d"]).stdout
        bad = runner.invoke(app, [*base, "--tenant", "acme"])
        assert bad.exit_code == 2 and "invalid tenant_id 'acme'" in bad.stderr
        bad = runner.invoke(app, [*base, "--older-than", "3 days"])
        assert bad.exit_code == 2 and "--older-than '3 days' is not a duration" in bad.stderr
        assert runner.invoke(app, [*base, "--after", "nope"]).exit_code == 2
        assert len(ids) == 3
    finally:
        db.dispose()


def test_requeue_takes_a_filter_and_refuses_to_requeue_everything_by_accident(db_url: str) -> None:
    db = Database(db_url)
    try:
        ids = _dead_letters(db, 2)
        [other] = _dead_letters(db, 1, "other.happened")
        base = ["events", "requeue", "--database-url", db_url]
        bare = runner.invoke(app, base)
        assert bare.exit_code == 2 and "--all" in bare.stderr
        result = runner.invoke(app, [*base, "--type", "test.happened"])
        assert result.exit_code == 0 and "requeued 2 dead letters" in result.stdout
        assert [status_of(db, i) for i in ids] == [("pending", 0, None)] * 2
        assert runner.invoke(app, [*base, "--type", "test.happened"]).exit_code == 1  # none left
        assert runner.invoke(app, [*base, other, "--type", "test.happened"]).exit_code == 1  # ID and filter: AND
        assert runner.invoke(app, [*base, "--all"]).exit_code == 0
        assert status_of(db, other) == ("pending", 0, None)
    finally:
        db.dispose()


def test_stats_and_prune(db_url: str) -> None:
    db = Database(db_url)
    try:
        _dead_letters(db, 2)
        acme = make_tenant(db, "acme").scope
        with db.transaction() as tx:
            publish(tx, type="test.happened", tenant_id=acme.tenant_id, source_id="ok")
        Worker(db, {"test.happened": lambda tx, scope, e: None}).run_once()
        stats = json.loads(runner.invoke(app, ["events", "stats", "--database-url", db_url, "--json"]).stdout)
        assert (stats["lag"], stats["pending"], stats["processing"], stats["dead"], stats["done"]) == (0, 0, 0, 2, 1)
        [(day, counts)] = stats["daily"].items()
        assert counts == {"eventbus.dead_letter": 2, "eventbus.non_id_agent_id": 2}
        table = runner.invoke(app, ["events", "stats", "--database-url", db_url]).stdout
        assert "lag (due, waiting)" in table and day in table and "eventbus.dead_letter" in table
        pruned = runner.invoke(app, ["events", "prune", "--database-url", db_url, "--older-than-days", "0"])
        assert pruned.exit_code == 0 and "pruned 1 events" in pruned.stdout
        assert json.loads(runner.invoke(app, ["events", "stats", "--database-url", db_url, "--json"])
                          .stdout)["done"] == 0
    finally:
        db.dispose()


def test_worker_once_drains_the_pipeline_with_settings_from_options(db_url: str) -> None:
    db = Database(db_url)
    try:
        acme = make_tenant(db, "acme").scope
        agent = new_agent(db, acme, "bot")
        with db.transaction() as tx:
            sessions.open_session(tx, acme, "s-1", agent.id, "")
            sessions.append_message(tx, acme, "s-1", "user", "Alice met Bob in Paris.")
            sessions.complete_session(tx, acme, "s-1")
            publish_session_completed(tx, acme, "s-1")
        result = runner.invoke(app, ["worker", "--database-url", db_url, "--once", "--batch-size", "1",
                                     "--lease-seconds", "30"])
        assert result.exit_code == 0, result.output
        assert "lease 30 s, batch 1" in result.stderr
        with db.transaction(write=False) as tx:
            assert tx.all("SELECT type, status FROM event_outbox WHERE status != 'done'") == [
                ("dreaming.due", "pending")]  # the dreaming debounce's timer, due in 10 minutes
            assert tx.scalar("SELECT count(*) FROM episodic_summaries") == 1
    finally:
        db.dispose()


@pytest.mark.parametrize(("args", "env", "message"), [
    (["--lease-seconds", "0"], {}, "events.lease_seconds 0.0: Input should be greater than 0"),
    (["--renew-seconds", "90"], {}, "events: renew_seconds 90.0 must be shorter than lease_seconds 60.0"),
    ([], {"AGENTFY_EVENTS_MAX_ATTEMPTS": "many"}, "events.max_attempts 'many'"),
])
def test_worker_refuses_a_bad_setting_naming_it(db_url: str, monkeypatch: pytest.MonkeyPatch, args: list[str],
                                                env: dict[str, str], message: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = runner.invoke(app, ["worker", "--database-url", db_url, "--once", *args])
    assert result.exit_code == 2 and f"error: invalid setting: {message}" in " ".join(result.stderr.split())


def test_serve_hands_its_bus_settings_to_the_server_processes(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    seen: list[Settings | None] = []
    monkeypatch.setattr(uvicorn, "run", lambda *args, **kwargs: seen.append(inherited_settings()))
    saved = dict(os.environ)
    os.environ["AGENTFY_SIGNING_KEY"] = base64.b64encode(b"k" * 32).decode()  # PostgreSQL needs a shared one
    try:
        result = runner.invoke(app, ["serve", "--database-url", db_url, "--lease-seconds", "90", "--concurrency", "2"])
        assert result.exit_code == 0, result.output
        handed = seen[0]
        assert handed is not None and (handed.events.lease_seconds, handed.events.concurrency) == (90.0, 2)
        assert handed.events.max_attempts == 5 and handed.database_url == db_url
        refused = runner.invoke(app, ["serve", "--database-url", db_url, "--concurrency", "0"])
        assert refused.exit_code == 2 and "concurrency 0: Input should be greater than or equal to 1" in " ".join(
            refused.stderr.split())
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_the_gateway_runs_as_many_worker_threads_as_the_settings_say(db: Database) -> None:
    from fastapi.testclient import TestClient

    from agentfy.gateway.app import create_app

    settings = Settings(events=BusSettings(concurrency=2))
    application = create_app(db, signing_secret=b"s" * 32, run_workers=True, settings=settings)
    with TestClient(application):
        threads = application.state.gateway.worker_threads
        assert len(threads) == 2 and all(t.is_alive() for t in threads)
    assert not any(t.is_alive() for t in threads)
