"""Cron: an agent's jobs with their next run, one job's run history, run now, pause and resume.

Each is the cron API (``GET /v1/agents/{id}/cron-jobs``, ``GET /v1/cron-jobs/{id}`` and its ``/runs``,
``POST …/run``, ``PATCH`` with ``enabled``).  Running now answers the ended run, shown on the job's page with
the history.  Jobs are addressed by ID.
"""

from __future__ import annotations

from typing import Any, Final

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from agentfy.gateway.console.api import segment
from agentfy.gateway.console.layout import copyable, esc, json_block, notice, page, post_form, table
from agentfy.gateway.console.responses import html, redirect
from agentfy.gateway.console.screens.agents import agent_url
from agentfy.gateway.console.screens.conversations import conversation_url
from agentfy.gateway.console.visit import Visit, checked_form, visit

router = APIRouter()
PAGE_SIZE: Final = 100


def job_url(job_id: str, tail: str = "") -> str:
    return f"/console/cron-jobs/{segment(job_id)}{tail}"


def _state(job: dict[str, Any]) -> str:
    return "active" if job["enabled"] else "paused"


def _job_row(job: dict[str, Any]) -> list[str]:
    return [f'<a href="{esc(job_url(job["id"]))}">{esc(job["schedule"])}</a>', esc(job["timezone"]),
            esc(_state(job)), esc(job["next_run_at"] or "none"), esc(job["last_run_at"] or "never"),
            copyable(job["id"])]


@router.get("/agents/{agent_id}/cron")
async def agent_jobs(request: Request, agent_id: str) -> Response:
    current = await visit(request)
    request.state.back = agent_url(agent_id)
    agent = await current.api.get(f"/agents/{segment(agent_id)}")
    found = await current.api.get(f"/agents/{segment(agent['id'])}/cron-jobs", limit=str(PAGE_SIZE))
    body = (f'<p><a href="{esc(agent_url(agent["id"]))}">Agent {esc(agent["agent_key"])}</a></p>'
            + table(("Schedule", "Time zone", "State", "Next run", "Last run", "ID"),
                    (_job_row(job) for job in found["items"]), table_id="jobs", empty="No cron jobs."))
    return html(page(f"Cron jobs of {agent['agent_key']}", body, viewer=current.viewer, section="agents"))


def _run_row(run: dict[str, Any], agent_id: str) -> list[str]:
    session = run.get("session_key")
    spoke = ("" if not session else
             f'<a href="{esc(conversation_url(agent_id, session))}"><code>{esc(session)}</code></a>')
    return [esc(run["due_at"]), esc(run["cause"]), f'<span class="outcome">{esc(run["outcome"])}</span>',
            esc(run["error"] or ""), esc(run["started_at"]), esc(run["ended_at"] or ""), spoke]


def _job_actions(current: Visit, job: dict[str, Any]) -> str:
    parts = []
    if current.may("cron.run"):
        parts.append(post_form(job_url(job["id"], "/run"), current.viewer.csrf, "", label="Run now",
                               extra=' class="inline" id="run-now"'))
    if current.may("cron.update"):
        label = "Pause" if job["enabled"] else "Resume"
        parts.append(post_form(job_url(job["id"], "/pause" if job["enabled"] else "/resume"), current.viewer.csrf,
                               "", label=label, extra=' class="inline" id="toggle"'))
    return f'<div class="actions">{"".join(parts)}</div>' if parts else ""


@router.get("/cron-jobs/{job_id}")
async def show_job(request: Request, job_id: str, ran: str | None = None) -> Response:
    current = await visit(request)
    job = await current.api.get(f"/cron-jobs/{segment(job_id)}")
    runs = await current.api.get(f"/cron-jobs/{segment(job['id'])}/runs", limit=str(PAGE_SIZE))
    history = list(reversed(runs["items"]))  # newest first
    facts = (f'<dl class="facts"><dt>Schedule</dt><dd>{esc(job["schedule"])} ({esc(job["timezone"])})</dd>'
             f'<dt>State</dt><dd id="job-state">{esc(_state(job))}</dd>'
             f'<dt>Next run</dt><dd id="next-run">{esc(job["next_run_at"] or "none")}</dd>'
             f'<dt>Last run</dt><dd>{esc(job["last_run_at"] or "never")}</dd>'
             f'<dt>ID</dt><dd>{copyable(job["id"])}</dd><dt>Agent</dt>'
             f'<dd><a href="{esc(agent_url(job["agent_id"], "/cron"))}"><code>{esc(job["agent_id"])}</code></a></dd>'
             f'<dt>Scope</dt><dd><code>{esc(job["user_id"] or "none")}</code></dd></dl>'
             f"<h2>Payload</h2>{json_block(job['payload'])}")
    body = ((notice(f"Ran now: {ran}.") if ran else "") + facts + _job_actions(current, job) + "<h2>Runs</h2>"
            + table(("Due", "Cause", "Outcome", "Error", "Started", "Ended", "Session"),
                    (_run_row(run, job["agent_id"]) for run in history), table_id="runs", empty="No runs yet."))
    return html(page(f"Cron job {job['schedule']}", body, viewer=current.viewer, section="agents"))


@router.post("/cron-jobs/{job_id}/run")
async def run_now(request: Request, job_id: str) -> Response:
    current = await visit(request)
    await checked_form(request, current.session)
    request.state.back = job_url(job_id)
    run = await current.api.post(f"/cron-jobs/{segment(job_id)}/run")
    return redirect(request, job_url(job_id, f"?ran={segment(run['outcome'])}"))


async def _set_enabled(request: Request, job_id: str, *, enabled: bool) -> Response:
    current = await visit(request)
    await checked_form(request, current.session)
    request.state.back = job_url(job_id)
    await current.api.patch(f"/cron-jobs/{segment(job_id)}", {"enabled": enabled})
    return redirect(request, job_url(job_id))


@router.post("/cron-jobs/{job_id}/pause")
async def pause(request: Request, job_id: str) -> Response:
    return await _set_enabled(request, job_id, enabled=False)


@router.post("/cron-jobs/{job_id}/resume")
async def resume(request: Request, job_id: str) -> Response:
    return await _set_enabled(request, job_id, enabled=True)
