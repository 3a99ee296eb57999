"""The Cron screen: an agent's jobs with their next run, a job's run history, run now (its run shown), pause and
resume; a member sees no actions and the API refuses them; another organization's jobs never appear; on both
engines."""

from __future__ import annotations

import re
from typing import Any

from fastapi.testclient import TestClient

from agentfy.store.db import Database
from agentfy.store.repos import agents
from tests.gateway.console.conftest import SignedIn
from tests.gateway.console.helpers import post_form
from tests.helpers.tenants import Tenant


def _job(client: TestClient, tenant: Tenant, agent_id: str, schedule: str = "@daily") -> dict[str, Any]:
    answer = client.post(f"/v1/agents/{agent_id}/cron-jobs", headers=tenant.headers("operator"),
                         json={"schedule": schedule, "payload": {"message": "report"}})
    assert answer.status_code == 201, answer.text
    job: dict[str, Any] = answer.json()
    return job


def test_jobs_show_their_next_run_and_run_now_adds_a_run(signed_in: SignedIn, db: Database, acme: Tenant,
                                                          globex: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
        other = agents.create_agent(tx, globex.scope, agent_key="support")
    client = signed_in("operator")
    job = _job(client, acme, agent.id)
    hidden = _job(client, globex, other.id, "0 9 * * 1")
    listed = client.get(f"/console/agents/{agent.id}/cron").text
    assert job["id"] in listed and job["next_run_at"] in listed and "@daily" in listed
    assert hidden["id"] not in listed and "0 9 * * 1" not in listed

    screen = f"/console/cron-jobs/{job['id']}"
    assert "No runs yet." in client.get(screen).text
    ran = post_form(client, screen, f"{screen}/run", {})
    assert ran.status_code == 303 and ran.headers["location"] == f"{screen}?ran=ok"
    page = client.get(ran.headers["location"]).text
    assert "Ran now: ok." in page
    assert re.findall(r'<span class="outcome">(\w+)</span>', page) == ["ok"]
    assert f"/console/agents/{agent.id}/conversations?session=" in page  # the session the run spoke in
    assert f'<dd id="next-run">{job["next_run_at"]}</dd>' in page  # a manual run leaves the schedule alone


def test_pause_and_resume(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("operator")
    job = _job(client, acme, agent.id)
    screen = f"/console/cron-jobs/{job['id']}"
    assert post_form(client, screen, f"{screen}/pause", {}).status_code == 303
    page = client.get(screen).text
    assert '<dd id="job-state">paused</dd>' in page and ">Resume</button>" in page
    assert post_form(client, screen, f"{screen}/resume", {}).status_code == 303
    assert '<dd id="job-state">active</dd>' in client.get(screen).text


def test_a_member_sees_no_other_scopes_job_and_cannot_run_one(signed_in: SignedIn, db: Database, acme: Tenant,
                                                  globex: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
        other = agents.create_agent(tx, globex.scope, agent_key="support")
    member = signed_in("member")
    job = _job(member, acme, agent.id)
    screen = f"/console/cron-jobs/{job['id']}"
    page = member.get(screen)
    assert page.status_code == 404  # an operator key's job runs in the agent's own scope, which a member cannot see
    owner = signed_in("owner")
    assert "Run now" in owner.get(screen).text
    refused = post_form(member, f"/console/agents/{agent.id}/cron", f"{screen}/run", {})
    assert refused.status_code == 403 and "needs the operator role or higher" in refused.text
    foreign = _job(owner, globex, other.id)
    answer = owner.get(f"/console/cron-jobs/{foreign['id']}")
    assert answer.status_code == 404 and "not_found" in answer.text


def test_run_now_needs_the_csrf_token(signed_in: SignedIn, db: Database, acme: Tenant) -> None:
    with db.transaction() as tx:
        agent = agents.create_agent(tx, acme.scope, agent_key="support")
    client = signed_in("operator")
    job = _job(client, acme, agent.id)
    answer = client.post(f"/console/cron-jobs/{job['id']}/run", data={}, follow_redirects=False)
    assert answer.status_code == 403 and "csrf_token_invalid" in answer.text
    assert client.get(f"/v1/cron-jobs/{job['id']}/runs", headers=acme.headers()).json()["items"] == []
