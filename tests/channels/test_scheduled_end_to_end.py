"""Cron jobs and delegation end to end: a job made in a Telegram chat fires **on its schedule** — the real
scheduler (:class:`~agentfy.runtime.scheduler.Scheduler` with :class:`~agentfy.runtime.scheduler.Firing`) on
the app's own runtime, driven by a clock the test moves, never the wall clock — and what the chat's people
see is what the fake Bot API received; what the operator sees is what the HTTP API answers.  On SQLite and
PostgreSQL.

The rules checked where a user would see them break: a run acts as the job's creator (their grant, checked
at every fire), answers in the chat it was made in (a group, or the person's own DM scope), never in another
tenant's chat of the same ID, fires once for slots missed while nothing ran; and a delegate is reached only
through a ``delegate`` link (or a shared team), acting for the person who asked; a team task dispatched from
the chat runs as its teammate for that person and its result comes back to the chat.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentfy.identity.roles import ROLES
from agentfy.runtime.scheduler import Firing, Scheduler
from agentfy.schedule import from_utc_text, utc_text
from agentfy.store.db import Database
from agentfy.store.repos.cron import CronRun
from tests.channels.helpers import (
    ALICE,
    BOT_TOKEN,
    GROUP_CHAT,
    SCOPE,
    TELEGRAM_API,
    Live,
    agent_id_of,
    messages_of,
    sessions_of,
)
from tests.helpers.tenants import Tenant, make_tenant

BOT, SECRET = "SupportBot", "acme-secret-0123456789-abcdefgh"
HOUR = timedelta(hours=1)


class Ticker:
    """The cron scheduler on the app's runtime, at the moment the test sets: :meth:`at` claims what is due
    then and fires it on the app's event loop, exactly as the server's own scheduler loop would."""

    def __init__(self, db: Database, live: Live) -> None:
        self.live = live
        self.now = datetime.now(UTC)
        self.scheduler = Scheduler(db, Firing(db, live.runtime, clock=self.clock), clock=self.clock)

    def clock(self) -> datetime:
        return self.now

    def at(self, moment: datetime) -> list[CronRun]:
        """One scheduler pass at ``moment``; the runs it ended."""
        self.now = moment
        runs: list[CronRun] = self.live.client.portal.call(self.scheduler.tick)  # type: ignore[union-attr]
        return runs


@pytest.fixture
def acme(db: Database) -> Tenant:
    return make_tenant(db, "acme", keys=ROLES, agent_key="support")


@pytest.fixture
def globex(db: Database) -> Tenant:
    return make_tenant(db, "globex", keys=ROLES, agent_key="support")  # the same key, another tenant


@pytest.fixture
def ticker(db: Database, live: Live) -> Ticker:
    return Ticker(db, live)


def _grant_cron(live: Live, tenant: Tenant, sender: int) -> str:
    """Give ``sender`` the ``cron`` grant of the support agent in the group (through the API); its ID."""
    answer = live.client.post("/v1/agents/support/grants", headers=tenant.headers("admin"),
                              json={"chat_scope": SCOPE, "config_type": "cron", "sender_id": str(sender)})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def _schedule(live: Live, tenant: Tenant, *, bot: str = BOT, secret: str = SECRET, chat: int = GROUP_CHAT,
              chat_type: str = "supergroup") -> dict[str, Any]:
    """Alice makes an hourly job in the chat with ``/tool create_cron``; the job as the API shows it."""
    made = live.say(bot, secret, "/tool create_cron schedule='every 1h' message='daily report'", chat=chat,
                    chat_type=chat_type)
    found = re.search(r"scheduled (cron-job-\S+) ", made)
    assert found is not None, made
    job = live.client.get(f"/v1/cron-jobs/{found[1]}", headers=tenant.headers())
    assert job.status_code == 200, job.text
    body: dict[str, Any] = job.json()
    assert body["created_by"] == str(ALICE) and body["next_run_at"] is not None, body
    return body


def _due(job: dict[str, Any]) -> datetime:
    return from_utc_text(job["next_run_at"])


def _runs(live: Live, tenant: Tenant, job_id: str) -> list[dict[str, Any]]:
    answer = live.client.get(f"/v1/cron-jobs/{job_id}/runs", headers=tenant.headers())
    assert answer.status_code == 200, answer.text
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def _said(db: Database, tenant: Tenant, text: str) -> list[tuple[str, str | None]]:
    """``(role, sender_id)`` of each stored message of the tenant's that says ``text``."""
    return [(role, sender) for role, sender, content in messages_of(db, tenant) if content == text]


def test_a_group_job_fires_on_schedule_as_its_creator_into_the_group(
        db: Database, live: Live, acme: Tenant, ticker: Ticker) -> None:
    live.bind(acme, BOT, SECRET)
    _grant_cron(live, acme, ALICE)
    job = _schedule(live, acme)
    before = len(live.platforms.requests)
    assert ticker.at(_due(job) - timedelta(seconds=1)) == []  # not due yet: nothing runs, nothing is sent
    assert live.platforms.requests[before:] == [] and _runs(live, acme, job["id"]) == []
    (ended,) = ticker.at(_due(job))
    assert ended.outcome == "ok", ended
    (sent,) = live.platforms.shown(before)  # a new message in the group, not a reply to anyone
    assert sent["chat_id"] == GROUP_CHAT and sent["text"] == "@support heard: daily report"
    assert "reply_parameters" not in sent
    (run,) = _runs(live, acme, job["id"])
    assert (run["outcome"], run["cause"], run["due_at"], run["error"]) == ("ok", "schedule", job["next_run_at"], None)
    session = live.client.get(f"/v1/sessions/{run['session_key']}", headers=acme.headers()).json()
    assert (session["user_id"], session["conversation"]) == (SCOPE, f"telegram:{GROUP_CHAT}")  # the group's own
    assert _said(db, acme, "daily report") == [("user", str(ALICE))]  # the creator, not the ticker
    # the schedule moved on by one slot
    following = live.client.get(f"/v1/cron-jobs/{job['id']}", headers=acme.headers()).json()["next_run_at"]
    assert following == utc_text(_due(job) + HOUR)


def test_a_revoked_grant_refuses_the_next_fire_and_nothing_reaches_the_group(
        db: Database, live: Live, acme: Tenant, ticker: Ticker) -> None:
    live.bind(acme, BOT, SECRET)
    grant = _grant_cron(live, acme, ALICE)
    job = _schedule(live, acme)
    assert [run.outcome for run in ticker.at(_due(job))] == ["ok"]
    revoked = live.client.delete(f"/v1/grants/{grant}", headers=acme.headers("admin"))
    assert revoked.status_code == 204, revoked.text
    before = len(live.platforms.requests)
    (denied,) = ticker.at(_due(job) + HOUR)
    assert live.platforms.requests[before:] == []  # nothing posted to the group
    first, second = _runs(live, acme, job["id"])
    assert first["outcome"] == "ok"
    assert second["outcome"] == "denied" and second["session_key"] is None, second
    assert second["error"] == (f"no_grant: sender {ALICE} has no cron (or file_writer, which cron falls back to) "
                               f"grant in {SCOPE}")  # the reason, naming who and where
    assert denied.error == second["error"]
    assert _said(db, acme, "daily report") == [("user", str(ALICE))]  # the first fire's only: none for this one


def test_a_dm_job_fires_in_that_dm_in_the_persons_scope(
        db: Database, live: Live, acme: Tenant, ticker: Ticker) -> None:
    live.bind(acme, BOT, SECRET)
    job = _schedule(live, acme, chat=ALICE, chat_type="private")  # no grant: in their own DM it is theirs
    assert job["user_id"] == str(ALICE)
    before = len(live.platforms.requests)
    assert [run.outcome for run in ticker.at(_due(job))] == ["ok"]
    (sent,) = live.platforms.shown(before)
    assert sent["chat_id"] == ALICE and sent["text"] == "@support heard: daily report"
    (run,) = _runs(live, acme, job["id"])
    session = live.client.get(f"/v1/sessions/{run['session_key']}", headers=acme.headers()).json()
    assert (session["user_id"], session["conversation"]) == (str(ALICE), f"telegram:{ALICE}")
    assert {(key, scope) for key, scope, _ in sessions_of(db, acme)} == {(run["session_key"], str(ALICE))}
    assert _said(db, acme, "daily report") == [("user", str(ALICE))]


def test_a_tenants_job_never_runs_in_another_tenant_with_the_same_agent_key_and_chat(
        db: Database, live: Live, acme: Tenant, globex: Tenant, ticker: Ticker) -> None:
    globex_bot, globex_secret = "GlobexHelpBot", "globex-secret-0123456789-abcdefg"
    globex_token = "987654321:AAGlobexTokenGlobexTokenGlobexTok"
    live.bind(acme, BOT, SECRET)
    live.bind(globex, globex_bot, globex_secret, token=globex_token)
    for tenant in (acme, globex):
        _grant_cron(live, tenant, ALICE)
    job = _schedule(live, acme)
    # globex's agent of the same key, in the same chat, has a job of its own (made later: not yet due)
    globex_job = _schedule(live, globex, bot=globex_bot, secret=globex_secret)
    assert _due(globex_job) > _due(job)
    globex_sessions, globex_messages = sessions_of(db, globex), messages_of(db, globex)
    globex_api = f"{TELEGRAM_API}/bot{globex_token}/"
    globex_sent = len(live.platforms.to(globex_api))
    before = len(live.platforms.requests)
    assert [run.job_id for run in ticker.at(_due(job))] == [job["id"]]
    (sent,) = live.platforms.shown(before)
    assert sent["chat_id"] == GROUP_CHAT and sent["text"] == "@support heard: daily report"
    assert live.platforms.requests[before:][0][1].startswith(f"{TELEGRAM_API}/bot{BOT_TOKEN}/")  # acme's bot
    assert len(live.platforms.to(globex_api)) == globex_sent  # globex's bot sent nothing more, in any chat
    assert _runs(live, globex, globex_job["id"]) == []
    assert (sessions_of(db, globex), messages_of(db, globex)) == (globex_sessions, globex_messages)
    hidden = live.client.get(f"/v1/cron-jobs/{job['id']}/runs", headers=globex.headers())
    assert hidden.status_code == 404, hidden.text  # acme's job and its runs do not exist for globex
    assert _said(db, acme, "daily report") == [("user", str(ALICE))]


def test_delegating_needs_a_link_then_acts_for_the_telegram_sender_and_announces_to_the_group(
        db: Database, live: Live, acme: Tenant) -> None:
    live.bind(acme, BOT, SECRET)
    helper = live.client.post("/v1/agents", json={"agent_key": "helper"}, headers=acme.headers("admin"))
    assert helper.status_code == 201, helper.text
    command = "/tool delegate agent=helper task='summarise the plan'"
    refused = live.say(BOT, SECRET, command)
    assert refused.startswith("delegate: error: ") and (  # the tool's refusal, as the offline model relays it
        "@helper is out of reach of @support: there is no 'delegate' link from @support to it and no team has "
        "both") in refused, refused
    live.wait_idle()
    assert {agent for _, _, agent in sessions_of(db, acme)} == {agent_id_of(db, acme)}  # nothing ran for helper
    link = live.client.post("/v1/agents/support/links", json={"target": "helper", "kind": "delegate"},
                            headers=acme.headers("admin"))
    assert link.status_code == 201, link.text
    before = len(live.platforms.requests)
    live.post(BOT, SECRET, command)
    live.wait_idle()
    # the turn's own reply (to message 42) and, later, the support agent's answer to the announced result
    shown = live.platforms.shown(before)
    assert all(body["chat_id"] == GROUP_CHAT for body in shown) and len(shown) == 2, shown
    (replied,) = [body["text"] for body in shown if body.get("reply_parameters", {}).get("message_id") == 42]
    assert replied.startswith("delegate: delegated task ") and "to @helper" in replied
    (announced,) = [body["text"] for body in shown if "reply_parameters" not in body]
    assert announced == "@support heard: @helper heard: summarise the plan"
    helper_id = agent_id_of(db, acme, "helper")
    (helper_session,) = [(key, scope) for key, scope, agent in sessions_of(db, acme) if agent == helper_id]
    assert helper_session[1] == SCOPE  # the group's scope, where Alice asked
    messages = live.client.get(f"/v1/sessions/{helper_session[0]}/messages", headers=acme.headers()).json()["items"]
    assert [(m["role"], m["sender_id"]) for m in messages if m["content"] == "summarise the plan"] == [
        ("user", str(ALICE))]  # the delegate acted for the Telegram sender, not for the support agent
    # the result came back into the group's conversation as Alice's (the helper's own answer aside)
    assert sorted(_said(db, acme, "@helper heard: summarise the plan"), key=str) == [
        ("assistant", None), ("user", str(ALICE))]


def test_slots_missed_while_the_server_was_down_fire_once(
        db: Database, live: Live, acme: Tenant, ticker: Ticker) -> None:
    live.bind(acme, BOT, SECRET)
    _grant_cron(live, acme, ALICE)
    job = _schedule(live, acme)
    before = len(live.platforms.requests)
    back = _due(job) + 2 * HOUR + timedelta(minutes=5)  # three slots passed while nothing ran
    assert [run.outcome for run in ticker.at(back)] == ["ok"]
    assert ticker.at(back) == []  # claimed once: the same moment again fires nothing
    (sent,) = live.platforms.shown(before)
    assert sent["chat_id"] == GROUP_CHAT and sent["text"] == "@support heard: daily report"
    (run,) = _runs(live, acme, job["id"])
    assert run["due_at"] == job["next_run_at"]  # for the oldest missed slot
    following = live.client.get(f"/v1/cron-jobs/{job['id']}", headers=acme.headers()).json()["next_run_at"]
    assert from_utc_text(following) == _due(job) + 3 * HOUR  # the first slot after the server came back
    assert [run.outcome for run in ticker.at(_due(job) + 3 * HOUR)] == ["ok"]
    assert len(live.platforms.shown(before)) == 2 and len(_runs(live, acme, job["id"])) == 2
    assert _said(db, acme, "daily report") == [("user", str(ALICE))] * 2


def test_a_task_dispatched_in_the_group_runs_as_the_telegram_sender_and_its_result_is_announced(
        db: Database, live: Live, acme: Tenant) -> None:
    live.bind(acme, BOT, SECRET)
    admin = acme.headers("admin")

    def made(path: str, body: dict[str, Any]) -> dict[str, Any]:
        answer = live.client.post(path, json=body, headers=admin)
        assert answer.status_code == 201, answer.text
        created: dict[str, Any] = answer.json()
        return created

    made("/v1/agents", {"agent_key": "helper"})
    team = made("/v1/teams", {"name": "Desk", "lead": "support"})
    made(f"/v1/teams/{team['id']}/members", {"agent": "helper"})
    task = made(f"/v1/teams/{team['id']}/tasks", {"title": "summarise the plan"})
    command = f"/tool task_dispatch task_id={task['id']} agent=helper"
    refused = live.say(BOT, SECRET, command)  # a write in the group: Alice needs the grant first
    assert refused.startswith("task_dispatch: ") and "denied (no_grant)" in refused, refused
    assert live.client.get(f"/v1/tasks/{task['id']}", headers=admin).json()["status"] == "open"
    made("/v1/agents/support/grants", {"chat_scope": SCOPE, "config_type": "file_writer", "sender_id": str(ALICE)})
    before = len(live.platforms.requests)
    live.post(BOT, SECRET, command)
    live.wait_idle()
    shown = live.platforms.shown(before)
    assert all(body["chat_id"] == GROUP_CHAT for body in shown) and len(shown) == 2, shown
    (announced,) = [body["text"] for body in shown if "reply_parameters" not in body]
    assert announced == "@support heard: @helper heard: summarise the plan"
    done = live.client.get(f"/v1/tasks/{task['id']}", headers=admin).json()
    assert (done["status"], done["result"]) == ("done", "@helper heard: summarise the plan"), done
    messages = live.client.get(f"/v1/sessions/{done['session_key']}/messages", headers=acme.headers()).json()["items"]
    assert [(m["role"], m["sender_id"]) for m in messages if m["content"] == "summarise the plan"] == [
        ("user", str(ALICE))]  # the teammate acted for the Telegram sender, not for the dispatching agent
    session = live.client.get(f"/v1/sessions/{done['session_key']}", headers=acme.headers()).json()
    assert session["user_id"] == SCOPE  # in the group's SCOPE, where Alice asked
