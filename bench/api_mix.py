"""A mix of the API's main routes: our gateway vs a bare FastAPI app doing the same SQL with the same driver.

Run: ``make bench`` (or ``.venv/bin/python -m bench.api_mix``; ``… sqlite`` or ``… postgresql`` for one engine;
``… counts`` prints the queries and transactions of each route; ``… profile KIND`` profiles one route in
process).  Both apps run under uvicorn, one process each, with the settings of :mod:`bench.gateway` (whose
``start`` and ``free_port`` this reuses), on 127.0.0.1, on the same database: an embedded SQLite file, then a
scratch PostgreSQL database (:func:`bench.store.databases`).  ``wrk`` drives them (``apt-get install wrk``)
with a Lua script cycling through the mix, one request of each kind in turn:

=============  ==================================================  ================================================
kind           our route                                           the bare app's SQL (one transaction)
=============  ==================================================  ================================================
``get``        ``GET /v1/agents/{id}``                             the agent by (tenant, id)
``list``       ``GET /v1/agents``                                  a page of 51 agents by key
``send``       ``POST /v1/agents/{id}/messages`` (offline model)   our runtime's statements, captured from it
                                                                   (:func:`send_statements`), in its two
                                                                   transactions: the credential, the agent, the
                                                                   session (opened on its first message, its row
                                                                   locked), its history, the skills, the recall
                                                                   (memory search, knowledge), the MCP servers,
                                                                   the user's message; then the status locked,
                                                                   the reply, the usage row; on PostgreSQL
                                                                   the run's advisory lock around both
``messages``   ``GET /v1/sessions/{key}/messages``                 the session, a page of its messages
``search``     ``GET /v1/agents/{id}/memory/search``               the agent, the full-text search of its memory
                                                                   (the statement of :mod:`agentfy.store.repos.
                                                                   search`, on the engine's index)
``open``       ``POST /v1/sessions``                               the agent, the session inserted
``delete``     ``DELETE /v1/sessions/{key}``                       the session read, the session deleted
=============  ==================================================  ================================================

``complete`` (``POST /v1/sessions/{key}/complete``: the status updated, the session read, its
``session.completed`` event inserted) is measured alone, not in the mix.  Conversations of ``send`` are ten
messages long, then a new one starts, so a session's history stays short.

"One transaction" is literal for writes; a read on PostgreSQL is its statements in autocommit in both apps,
since our store begins no transaction for a read there (``Database.transaction``: at READ COMMITTED a
``BEGIN``/``COMMIT`` around plain reads changes nothing a reader sees, and costs two round trips), and a
baseline still paying those would flatter ours.  On SQLite both apps' reads are one ``BEGIN``/``COMMIT``.

The bare app checks the bearer credential against the one it was given (in memory, as our principal cache
does for a warm credential), reads the credential's row in every writing transaction (ours confirms a cached
credential there, so that a key revoked a moment ago by another process writes nothing) and returns plain
dicts; our app does everything it always does (access policy,
request observation, response models, the runtime's whole loop for ``send``).  ``GET /v1/agents/{id}``
without a query string is answered by the warm-read layer (:mod:`agentfy.gateway.warm_reads`), so the mix is
measured twice: with it, and with ``?via=route`` on that read, which goes through the FastAPI route (the
figure that counts).  Then each kind alone, for where the time goes.  Each figure is the median of
alternating rounds (ours, bare, swapped every round): requests per second and wrk's p99.  Goals: at least
0.8x the bare rate, p99 within 1.5x the bare p99.
"""

from __future__ import annotations

import asyncio
import cProfile
import json
import os
import pstats
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
from fastapi.testclient import TestClient

from agentfy.gateway.app import create_app
from agentfy.identity import Scope
from agentfy.store.db import Database, Tx, now
from agentfy.store.repos import agents, api_keys, memory, orgs, search, sessions
from agentfy.store.repos.memory import MemoryDocumentInput
from bench.gateway import SIGNING_KEY, free_port, start
from bench.harness import alternate_rounds, header
from bench.store import databases
from bench.verdicts import record

#: The mix: get and list agents, send a message to an agent on the offline model, list a session's messages,
#: search memory, open and delete a session.
KINDS = ("get", "list", "send", "messages", "search", "open", "delete")
#: Measured alone after the mix's kinds.
ALONE = (*KINDS, "complete")
CONNECTIONS = 16
MIX_ROUNDS = 5
MIX_SECONDS = 3
ROUTE_ROUNDS = 3
ROUTE_SECONDS = 2
RATE_GOAL = 0.8
P99_GOAL = 1.5
#: How long a server may take to start: importing the app takes tens of seconds on a loaded machine.
START_SECONDS = 120
AGENTS = 10
DOCUMENTS = 20
LISTED_MESSAGES = 20
#: Open sessions made before each round for its ``complete`` and ``delete`` requests (a round asking for more
#: completes some twice: still a 200, but a shorter path; deletes one twice: a 404, and the round fails).
#: Ending what the round itself opened would race: an open can wait on SQLite's write lock while later
#: requests are answered.
MIX_POOL = 3000
ROUTE_POOL = 8000
#: A loaded machine may take long to import and start a server.
START_SECONDS = 300.0
_OPEN_MANY = ("INSERT INTO sessions (tenant_id, session_key, agent_id, user_id, status, compaction_count, created_at) "
              "VALUES (:tenant_id, :session_key, :agent_id, :user_id, 'open', 0, :created_at)")

LUA = r"""
local counter, sends, opens, completes, deletes = 0, 0, 0, 0, 0
local kinds = {}
function init(args)
  nonce, agent, listed, pool, suffix = args[1], args[2], args[3], tonumber(args[4]), args[5]
  for kind in string.gmatch(args[6], "[^,]+") do kinds[#kinds + 1] = kind end
  headers = {["Authorization"] = "Bearer " .. args[7], ["Content-Type"] = "application/json"}
end
function request()
  counter = counter + 1
  local kind = kinds[(counter % #kinds) + 1]
  if kind == "get" then
    return wrk.format("GET", "/v1/agents/" .. agent .. suffix, headers)
  elseif kind == "list" then
    return wrk.format("GET", "/v1/agents", headers)
  elseif kind == "send" then
    sends = sends + 1
    local body = '{"text":"hello there","conversation":"' .. nonce .. "-c" .. math.floor(sends / 10) .. '"}'
    return wrk.format("POST", "/v1/agents/" .. agent .. "/messages", headers, body)
  elseif kind == "messages" then
    return wrk.format("GET", "/v1/sessions/" .. listed .. "/messages", headers)
  elseif kind == "search" then
    return wrk.format("GET", "/v1/agents/" .. agent .. "/memory/search?query=note&scope=", headers)
  elseif kind == "open" then
    opens = opens + 1
    local body = '{"agent":"' .. agent .. '","session_key":"' .. nonce .. "-s" .. opens .. '"}'
    return wrk.format("POST", "/v1/sessions", headers, body)
  elseif kind == "delete" then
    deletes = deletes + 1
    return wrk.format("DELETE", "/v1/sessions/" .. nonce .. "-p" .. deletes, headers)
  else
    completes = completes + 1
    local key = nonce .. "-p" .. ((completes - 1) % pool + 1)
    return wrk.format("POST", "/v1/sessions/" .. key .. "/complete", headers)
  end
end
failures, first = 0, nil
local threads = {}
function setup(thread) table.insert(threads, thread) end
function response(status, headers, body)
  if status >= 300 then
    failures = failures + 1
    if first == nil then first = status .. " " .. string.sub(body, 1, 300) end
  end
end
function done(summary, latency, requests)
  for _, thread in ipairs(threads) do
    local seen = thread:get("first")
    if seen ~= nil then io.write("failed answers: " .. thread:get("failures") .. ", the first: " .. seen .. "\n") end
  end
end
"""

BARE_APP = r'''
"""The bare app: the mix's routes as FastAPI endpoints over the driver, the same SQL, no framework of ours."""
import hashlib, hmac, json, os, secrets, sqlite3, threading
from datetime import UTC, datetime
from fastapi import FastAPI, Header, HTTPException
from pydantic import BaseModel

URL, TOKEN = os.environ["BARE_DB"], os.environ["BARE_TOKEN"]
TENANT, USER = os.environ["BARE_TENANT"], os.environ["BARE_USER"]
SQLITE = not URL.startswith("postgresql")
P = "?" if SQLITE else "%s"
app = FastAPI()
local = threading.local()

def q(sql):
    return sql.replace("?", P)

def now():
    return datetime.now(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"

def connection():
    conn = getattr(local, "conn", None)
    if conn is None:
        if SQLITE:
            conn = sqlite3.connect(URL, isolation_level=None, check_same_thread=False)
            for pragma in ("foreign_keys = ON", "busy_timeout = 5000", "synchronous = NORMAL"):
                conn.execute("PRAGMA " + pragma)
        else:
            import psycopg
            conn = psycopg.connect(URL, autocommit=True)
        local.conn = conn
    return conn

class Tx:
    """One transaction; a read on PostgreSQL none (its statements in autocommit), as our store runs it."""
    def __init__(self, write):
        self.write = write
        self.begun = write or SQLITE
    def __enter__(self):
        self.cur = connection().cursor()
        if self.begun:
            self.cur.execute("BEGIN IMMEDIATE" if self.write and SQLITE else "BEGIN")
        return self.cur
    def __exit__(self, kind, *_):
        if self.begun:
            self.cur.execute("ROLLBACK" if kind else "COMMIT")

def tenant(authorization):
    if authorization is None or not hmac.compare_digest(authorization.encode(), ("Bearer " + TOKEN).encode()):
        raise HTTPException(401)
    return TENANT

def confirm_key(cur):
    """Ours confirms a cached credential in each writing transaction (a key revoked a moment ago by another
    process writes nothing): the same statement here, in every write."""
    run(cur, "key", {"hash": KEY_HASH}).fetchone()

AGENT = q("SELECT id, tenant_id, agent_key, display_name, config, created_at, updated_at FROM agents "
          "WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL")
SESSION = q("SELECT tenant_id, session_key, agent_id, user_id, status, compaction_count, created_at, "
            "completed_at, channel, conversation FROM sessions WHERE tenant_id = ? AND session_key = ?")
MESSAGES = q("SELECT session_key, seq, role, sender_id, content, created_at, tool_calls, tool_call_id "
             "FROM session_messages WHERE tenant_id = ? AND session_key = ? AND seq > ? ORDER BY seq LIMIT ?")
INSERT_SESSION = q("INSERT INTO sessions (tenant_id, session_key, agent_id, user_id, status, compaction_count, "
                   "created_at, channel, conversation) VALUES (?, ?, ?, ?, 'open', 0, ?, ?, ?)")

def agent_dict(row):
    return {"id": row[0], "tenant_id": row[1], "agent_key": row[2], "display_name": row[3],
            "config": json.loads(row[4]), "created_at": row[5], "updated_at": row[6]}

def session_dict(row):
    return {"session_key": row[1], "agent_id": row[2], "user_id": row[3], "status": row[4],
            "compaction_count": row[5], "created_at": row[6], "completed_at": row[7], "channel": row[8],
            "conversation": row[9]}

def the_agent(cur, tenant_id, agent_id):
    row = cur.execute(AGENT, (tenant_id, agent_id)).fetchone()
    if row is None:
        raise HTTPException(404)
    return row

@app.get("/v1/agents/{agent}")
def get_agent(agent: str, authorization: str | None = Header(None)):
    tenant_id = tenant(authorization)
    with Tx(False) as cur:
        return agent_dict(the_agent(cur, tenant_id, agent))

@app.get("/v1/agents")
def list_agents(limit: int = 50, authorization: str | None = Header(None)):
    tenant_id = tenant(authorization)
    with Tx(False) as cur:
        rows = cur.execute(q("SELECT id, tenant_id, agent_key, display_name, config, created_at, updated_at "
                             "FROM agents WHERE tenant_id = ? AND deleted_at IS NULL ORDER BY agent_key, id "
                             "LIMIT ?"), (tenant_id, limit + 1)).fetchall()
    return {"items": [agent_dict(row) for row in rows[:limit]], "next_cursor": None}

class MessageIn(BaseModel):
    text: str
    conversation: str = "default"
    stream: bool = False

# The statements our runtime runs for one message, captured from it (``send_statements``), by what each does.
SEND = {label: (sql, defaults) for label, (sql, defaults) in json.loads(os.environ["BARE_SEND_SQL"]).items()}
KEY_HASH = os.environ["BARE_KEY_HASH"]

def run(cur, label, params):
    sql, defaults = SEND[label]
    return cur.execute(sql, {**defaults, **params} if isinstance(params, dict) else params)

def run_lock(key, take):
    """The run lock our runtime takes on PostgreSQL around the run (a session-level advisory lock; ours tries
    and retries, one statement when it is free, as here, where a held lock is waited for instead): two messages
    of one conversation never run at once.  On SQLite, BEGIN IMMEDIATE serialises the writers."""
    if not SQLITE:
        number = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=8).digest(), "big", signed=True)
        connection().execute("SELECT pg_advisory_lock(%s)" if take else "SELECT pg_advisory_unlock(%s)",
                             (number,)).fetchone()

@app.post("/v1/agents/{agent}/messages")
def send_message(agent: str, body: MessageIn, authorization: str | None = Header(None)):
    """Our runtime's SQL for a message, statement for statement: the credential confirmed and the agent read
    in the writing transaction, the session locked (opened on the first message), its history, the skills,
    the recall (memory search, knowledge), the agent's MCP servers, the user's message; then a second
    transaction (ours calls the model between the two) with the session's status locked, the reply and the
    usage row.  The reply is the offline model's."""
    tenant_id = tenant(authorization)
    key = f"{agent}/{USER}/api:{body.conversation}"
    run_lock(key, True)
    try:
        with Tx(True) as cur:
            confirm_key(cur)
            row = the_agent_of(cur, tenant_id, agent)
            scope = {"tenant_id": tenant_id, "session_key": key}
            if run(cur, "session", scope).fetchone() is None:
                run(cur, "open", {**scope, "agent_id": agent, "user_id": USER, "status": "open",
                                  "compaction_count": 0, "created_at": now(), "channel": "api",
                                  "conversation": "api:" + body.conversation})
            run(cur, "history", {**scope, "limit": 1000}).fetchall()
            run(cur, "skills", {"tenant_id": tenant_id, "limit": 100}).fetchall()
            words = body.text.lower().split()
            mine = {"tenant_id": tenant_id, "agent_id": agent, "user_id": USER, "limit": 8}
            run(cur, "search", {**mine, **({"match": " OR ".join(f'"{w}"' for w in words)} if SQLITE
                                           else {"query": " or ".join(words)})}).fetchall()
            run(cur, "knowledge", {**mine, **{f"term{i}": f"%{words[i]}%" if i < len(words) else None
                                              for i in range(8)}}).fetchall()
            run(cur, "mcp", {"tenant_id": tenant_id, "agent_id": agent}).fetchall()
            message = {**scope, "sender_id": USER, "tool_calls": None, "tool_call_id": None}
            run(cur, "append", {**message, "role": "user", "content": body.text, "created_at": now()}).fetchone()
        reply = f"@{row[1]} heard: {body.text}"
        with Tx(True) as cur:
            run(cur, "status", scope).fetchone()
            run(cur, "append", {**message, "role": "assistant", "sender_id": None, "content": reply,
                                "created_at": now()}).fetchone()
            run(cur, "usage", {"tenant_id": tenant_id, "agent_id": agent, "model": "offline", "input_tokens": 1,
                               "output_tokens": 1, "cached_tokens": None, "provider": "offline",
                               "run_id": secrets.token_hex(8), "session_key": key, "recorded_at": now()})
    finally:
        run_lock(key, False)
    return {"reply": reply, "session_key": key, "conversation": body.conversation}

def the_agent_of(cur, tenant_id, agent_id):
    row = run(cur, "agent", (tenant_id, agent_id)).fetchone()
    if row is None:
        raise HTTPException(404)
    return row

@app.get("/v1/sessions/{session_key:path}/messages")
def list_messages(session_key: str, limit: int = 50, authorization: str | None = Header(None)):
    tenant_id = tenant(authorization)
    with Tx(False) as cur:
        if cur.execute(SESSION, (tenant_id, session_key)).fetchone() is None:
            raise HTTPException(404)
        rows = cur.execute(MESSAGES, (tenant_id, session_key, 0, limit + 1)).fetchall()
    return {"items": [{"session_key": r[0], "seq": r[1], "role": r[2], "sender_id": r[3], "content": r[4],
                       "created_at": r[5], "tool_calls": json.loads(r[6]) if r[6] else [], "tool_call_id": r[7]}
                      for r in rows[:limit]], "next_cursor": None}

SEARCH = os.environ["BARE_SEARCH_SQL"]  # the store's own full-text statement, in the driver's paramstyle
LIVE_AGENT = q("SELECT id FROM agents WHERE tenant_id = ? AND id = ? AND deleted_at IS NULL")

@app.get("/v1/agents/{agent}/memory/search")
def search_memory(agent: str, query: str, scope: str, limit: int = 10, authorization: str | None = Header(None)):
    tenant_id = tenant(authorization)
    words = {"match": " ".join('"' + w.replace('"', '""') + '"' for w in query.split())} if SQLITE else {"query": query}
    with Tx(False) as cur:
        if cur.execute(LIVE_AGENT, (tenant_id, agent)).fetchone() is None:
            raise HTTPException(404)
        rows = cur.execute(SEARCH, {"tenant_id": tenant_id, "agent_id": agent, "user_id": scope, "limit": limit,
                                    **words}).fetchall()
    return {"items": [{"kind": r[0], "id": r[1], "title": r[2], "snippet": r[3] or "", "score": float(r[4])}
                      for r in rows]}

@app.delete("/v1/sessions/{session_key:path}", status_code=204)
def delete_session(session_key: str, authorization: str | None = Header(None)):
    tenant_id = tenant(authorization)
    with Tx(True) as cur:
        confirm_key(cur)
        if cur.execute(SESSION, (tenant_id, session_key)).fetchone() is None:
            raise HTTPException(404)
        cur.execute(q("DELETE FROM sessions WHERE tenant_id = ? AND session_key = ?"), (tenant_id, session_key))

class SessionIn(BaseModel):
    agent: str
    session_key: str
    user_id: str | None = None

@app.post("/v1/sessions", status_code=201)
def open_session(body: SessionIn, authorization: str | None = Header(None)):
    tenant_id = tenant(authorization)
    stamp = now()
    with Tx(True) as cur:
        confirm_key(cur)
        row = the_agent(cur, tenant_id, body.agent)
        cur.execute(INSERT_SESSION, (tenant_id, body.session_key, row[0], USER, stamp, None, None))
    return session_dict((tenant_id, body.session_key, row[0], USER, "open", 0, stamp, None, None, None))

@app.post("/v1/sessions/{session_key:path}/complete")
def complete_session(session_key: str, authorization: str | None = Header(None)):
    tenant_id = tenant(authorization)
    with Tx(True) as cur:
        confirm_key(cur)
        cur.execute(q("UPDATE sessions SET status = 'completed', completed_at = ? WHERE tenant_id = ? AND "
                      "session_key = ? AND status = 'open'"), (now(), tenant_id, session_key))
        row = cur.execute(SESSION, (tenant_id, session_key)).fetchone()
        if row is None:
            raise HTTPException(404)
        stamp = now()
        payload = json.dumps({"session_key": session_key, "compaction_count": row[5]})
        cur.execute(q("INSERT INTO event_outbox (id, tenant_id, type, source_id, agent_id, user_id, occurred_at, "
                      "payload, status, attempts, stops, available_at) VALUES (?, ?, 'session.completed', ?, ?, ?, "
                      "?, ?, 'pending', 0, 0, ?) ON CONFLICT DO NOTHING"),
                    ("event-" + secrets.token_hex(8), tenant_id, f"{session_key}#{row[5]}", row[2], row[3], stamp,
                     payload, stamp))
    return {**session_dict(row), "event_id": None}
'''


@dataclass(frozen=True)
class Seeded:
    """What the mix addresses: the caller's key and person, an agent, a session to list."""

    token: str
    tenant_id: str
    user_id: str
    agent_id: str
    listed: str


def seed(db: Database) -> Seeded:
    """An organization, its owner (a person, so that messages can be sent) and an owner key acting as them,
    ten agents, twenty memory documents, a session of twenty messages."""
    with db.transaction() as tx:
        org = orgs.create_organization(tx, slug="acme", name="acme")
        scope = Scope(org.id)
        user = orgs.create_user(tx, display_name="Ann")
        orgs.add_member(tx, scope, user.id, "owner")
        token = api_keys.create_api_key(tx, scope, name="bench", role="owner", user_id=user.id).key
        agent = agents.create_agent(tx, scope, agent_key="support-bot")
        for number in range(1, AGENTS):
            agents.create_agent(tx, scope, agent_key=f"helper-{number}")
        memory.upsert_memory_documents(tx, scope, agent.id, [
            MemoryDocumentInput(user_id="", path=f"notes/{number}.md", content="a note " * 30)
            for number in range(DOCUMENTS)])
        sessions.open_session(tx, scope, "listed", agent.id, user.id)
        for number in range(LISTED_MESSAGES):
            sessions.append_message(tx, scope, "listed", "user" if number % 2 == 0 else "assistant",
                                    f"message {number}", sender_id=user.id)
    return Seeded(token, org.id, user.id, agent.id, "listed")


# -- wrk -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Run:
    rate: float
    p99_ms: float


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def open_sessions(db: Database, seeded: Seeded, count: int) -> str:
    """``count`` open sessions ``<nonce>-p1…`` for a round's ``complete`` requests; returns the nonce."""
    nonce = secrets.token_hex(4)
    with db.transaction() as tx:
        tx.executemany(_OPEN_MANY, [{"tenant_id": seeded.tenant_id, "session_key": f"{nonce}-p{number}",
                                     "agent_id": seeded.agent_id, "user_id": seeded.user_id, "created_at": now()}
                                    for number in range(1, count + 1)])
    return nonce


def wrk_run(db: Database, base: str, script: Path, seeded: Seeded, kinds: tuple[str, ...], *, seconds: int,
            get_suffix: str, pool: int = MIX_POOL) -> Run:
    """One wrk round of ``kinds`` in turn; raises when any answer was not a 2xx (the mix is wrong then)."""
    nonce = open_sessions(db, seeded, pool if {"complete", "delete"} & set(kinds) else 0)
    command = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "-s", str(script), base, "--",
               nonce, seeded.agent_id, seeded.listed, str(pool), get_suffix, ",".join(kinds), seeded.token]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    if "Non-2xx or 3xx responses" in output:
        raise RuntimeError(f"wrk saw error responses from {base} ({kinds}):\n{output}")
    rate = float(next(line for line in output.splitlines() if line.startswith("Requests/sec:")).split()[1])
    match = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", output, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no p99 in wrk's output:\n{output}")
    return Run(rate, float(match.group(1)) * _UNITS[match.group(2)])


def check(base: str, seeded: Seeded) -> None:
    """Every kind of the mix answers 2xx on ``base`` (before any timing: a 4xx would be measured as fast)."""
    head = {"Authorization": f"Bearer {seeded.token}"}
    nonce = secrets.token_hex(4)
    requests = [("GET", f"/v1/agents/{seeded.agent_id}?via=route", None), ("GET", "/v1/agents", None),
                ("POST", f"/v1/agents/{seeded.agent_id}/messages", {"text": "hi", "conversation": nonce}),
                ("GET", f"/v1/sessions/{seeded.listed}/messages", None),
                ("GET", f"/v1/agents/{seeded.agent_id}/memory/search?query=note&scope=", None),
                ("POST", "/v1/sessions", {"agent": seeded.agent_id, "session_key": f"{nonce}-check"}),
                ("POST", f"/v1/sessions/{nonce}-check/complete", None),
                ("DELETE", f"/v1/sessions/{nonce}-check", None)]
    with httpx.Client(base_url=base, headers=head, timeout=10) as client:
        for method, path, body in requests:
            response = client.request(method, path, json=body)
            if response.status_code >= 300:
                raise RuntimeError(f"{base}: {method} {path} -> {response.status_code} {response.text[:300]}")
            if path.startswith("/v1/agents/") and "/memory/search" in path and len(response.json()["items"]) < 10:
                raise RuntimeError(f"{base}: the memory search found {response.text[:300]}, not 10 notes")


def alternate(ours: Callable[[], Run], bare: Callable[[], Run], rounds: int) -> tuple[Run, Run]:
    """Medians of ``rounds`` alternating rounds (the order swapped every round)."""
    mine, theirs = alternate_rounds(ours, bare, rounds)

    def median(runs: list[Run]) -> Run:
        return Run(statistics.median(r.rate for r in runs), statistics.median(r.p99_ms for r in runs))

    return median(mine), median(theirs)


def line(dialect: str, name: str, ours: Run, bare: Run, rounds: int, *, goal: bool) -> str:
    ratio, p99 = ours.rate / bare.rate, ours.p99_ms / bare.p99_ms
    verdict = ""
    if goal:
        met = ratio >= RATE_GOAL and p99 <= P99_GOAL
        verdict = f"  goal >= {RATE_GOAL:.1f}x and p99 <= {P99_GOAL:.1f}x: {'met' if met else 'NOT met'}"
        record("api-mix", f"{dialect} {name}", f"{ratio:.2f}x rate, p99 {p99:.2f}x", met=met)
    return (f"{dialect:<10} {name:<24} ours {ours.rate:>7,.0f}/s p99 {ours.p99_ms:6.1f} ms | bare "
            f"{bare.rate:>7,.0f}/s p99 {bare.p99_ms:6.1f} ms | {ratio:4.2f}x rate, p99 {p99:4.2f}x "
            f"(medians of {rounds}){verdict}")


def search_sql(dialect: str) -> str:
    """The store's memory search statement for the bare app, in its driver's paramstyle (psycopg: ``%(name)s``)."""
    sql = search._sql(dialect, search.MEMORY_KINDS)  # the very statement: both run the same SQL
    return sql if dialect == "sqlite" else re.sub(r"(?<!:):(\w+)", r"%(\1)s", sql)


def measure(dialect: str, db: Database, work: Path) -> None:
    seeded = seed(db)
    statements = send_statements(db, seeded)  # before either server starts: the app runs here, in process
    url = db.url
    bare_db = db.engine.url.database if dialect == "sqlite" else db.conninfo
    assert bare_db
    ours_port, bare_port = free_port(), free_port()
    ours = start("agentfy.gateway.server:app_from_env", ours_port,
                 {"AGENTFY_DATABASE_URL": url, "AGENTFY_SIGNING_KEY": SIGNING_KEY,
                  "AGENTFY_SERVE_EVENT_WORKERS": "false", "AGENTFY_WORKSPACE_ROOT": str(work / "workspaces")},
                 os.getcwd(), factory=True, ready_seconds=START_SECONDS)
    bare = start("bare_mix:app", bare_port, {"PYTHONPATH": str(work), "BARE_DB": bare_db,
                                             **bare_env(dialect, seeded, statements)}, str(work), factory=False,
                 ready_seconds=START_SECONDS)
    script = work / "mix.lua"
    try:
        ours_base, bare_base = f"http://127.0.0.1:{ours_port}", f"http://127.0.0.1:{bare_port}"
        for base in (ours_base, bare_base):
            check(base, seeded)
            wrk_run(db, base, script, seeded, KINDS, seconds=1, get_suffix="")  # warm-up: caches, pools, imports
        for name, suffix in (("mix (get via the route)", "?via=route"), ("mix (warm get)", "")):
            mine, theirs = alternate(
                lambda s=suffix: wrk_run(db, ours_base, script, seeded, KINDS, seconds=MIX_SECONDS, get_suffix=s),
                lambda s=suffix: wrk_run(db, bare_base, script, seeded, KINDS, seconds=MIX_SECONDS, get_suffix=s),
                MIX_ROUNDS)
            print(line(dialect, name, mine, theirs, MIX_ROUNDS, goal=True), flush=True)
        for kind in ALONE:
            name = kind + (" (via the route)" if kind == "get" else "")
            mine, theirs = alternate(
                lambda k=kind: wrk_run(db, ours_base, script, seeded, (k,), seconds=ROUTE_SECONDS,
                                       get_suffix="?via=route", pool=ROUTE_POOL),
                lambda k=kind: wrk_run(db, bare_base, script, seeded, (k,), seconds=ROUTE_SECONDS,
                                       get_suffix="?via=route", pool=ROUTE_POOL),
                ROUTE_ROUNDS)
            print(line(dialect, name, mine, theirs, ROUTE_ROUNDS, goal=False), flush=True)
    finally:
        for process in (ours, bare):
            process.terminate()
            process.wait(timeout=10)


# -- queries and transactions per request, and a profile, in process ------------------------------------------
@contextmanager
def counting() -> Iterator[Counter[str]]:
    """Counts transactions (``tx``, ``write tx``), statements (``sql``), savepoints (``savepoint``: two
    statements each, SAVEPOINT and RELEASE) and worker-thread hops (``hops``: ``asyncio.to_thread`` and anyio's
    ``to_thread.run_sync``, which FastAPI's thread pool uses) made anywhere in this process."""
    counts: Counter[str] = Counter()
    lock = threading.Lock()
    transaction, execute, executemany = Database.transaction, Tx.execute, Tx.executemany
    savepoint, to_thread, run_sync = Tx.savepoint, asyncio.to_thread, anyio.to_thread.run_sync

    def counted_savepoint(self: Tx) -> Any:
        with lock:
            counts["savepoint"] += 1
        return savepoint(self)

    def counted_to_thread(*args: Any, **kwargs: Any) -> Any:
        with lock:
            counts["hops"] += 1
        return to_thread(*args, **kwargs)

    def counted_run_sync(*args: Any, **kwargs: Any) -> Any:
        with lock:
            counts["hops"] += 1
        return run_sync(*args, **kwargs)

    def counted_transaction(self: Database, *, write: bool = True) -> Tx:
        with lock:
            counts["tx"] += 1
            counts["write tx"] += write
        return transaction(self, write=write)

    def counted_execute(self: Tx, statement: Any, params: Any = None) -> Any:
        with lock:
            counts["sql"] += 1
            counts[str(self.db.compiled(statement)[0]).split(None, 1)[0].upper()] += 1
        return execute(self, statement, params)

    def counted_many(self: Tx, statement: Any, rows: Any) -> None:
        with lock:
            counts["sql"] += 1
            counts[str(self.db.compiled(statement)[0]).split(None, 1)[0].upper()] += 1
        executemany(self, statement, rows)

    setattr(Database, "transaction", counted_transaction)  # noqa: B010 - the benchmark's instrument, undone below
    setattr(Tx, "execute", counted_execute)  # noqa: B010
    setattr(Tx, "executemany", counted_many)  # noqa: B010
    setattr(Tx, "savepoint", counted_savepoint)  # noqa: B010
    setattr(asyncio, "to_thread", counted_to_thread)  # noqa: B010
    setattr(anyio.to_thread, "run_sync", counted_run_sync)  # noqa: B010
    try:
        yield counts
    finally:
        setattr(Database, "transaction", transaction)  # noqa: B010
        setattr(Tx, "execute", execute)  # noqa: B010
        setattr(Tx, "executemany", executemany)  # noqa: B010
        setattr(Tx, "savepoint", savepoint)  # noqa: B010
        setattr(asyncio, "to_thread", to_thread)  # noqa: B010
        setattr(anyio.to_thread, "run_sync", run_sync)  # noqa: B010


def requests_of(seeded: Seeded, nonce: str, number: int) -> dict[str, tuple[str, str, dict[str, Any] | None]]:
    """The mix's requests, the ``number``-th of each (fresh session keys for ``open`` and ``complete``)."""
    return {
        "get": ("GET", f"/v1/agents/{seeded.agent_id}?via=route", None),
        "list": ("GET", "/v1/agents", None),
        "send": ("POST", f"/v1/agents/{seeded.agent_id}/messages", {"text": "hello there", "conversation": nonce}),
        "messages": ("GET", f"/v1/sessions/{seeded.listed}/messages", None),
        "search": ("GET", f"/v1/agents/{seeded.agent_id}/memory/search?query=note&scope=", None),
        "open": ("POST", "/v1/sessions", {"agent": seeded.agent_id, "session_key": f"{nonce}-{number}"}),
        "complete": ("POST", f"/v1/sessions/{nonce}-{number}/complete", None),
        "delete": ("DELETE", f"/v1/sessions/{nonce}-{number}", None),
    }


@contextmanager
def in_process(db: Database, seeded: Seeded | None = None) -> Iterator[tuple[Seeded, Callable[..., Any]]]:
    """The app on ``db`` in this process (lifespan run), and ``call(kind, number)`` sending one request; on
    ``seeded``'s data, or on data it seeds."""
    seeded = seeded or seed(db)
    nonce = secrets.token_hex(4)
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(db, signing_secret=b"bench-signing-secret-32-bytes!!!", workspace_root=Path(tmp))
        with TestClient(app, headers={"Authorization": f"Bearer {seeded.token}"}) as client:
            def call(kind: str, number: int, conversation: str | None = None) -> Any:
                method, path, body = requests_of(seeded, nonce, number)[kind]
                if conversation is not None and body is not None:  # a send into this conversation
                    body = {**body, "conversation": conversation}
                response = client.request(method, path, json=body)
                if response.status_code >= 300:
                    raise RuntimeError(f"{method} {path} -> {response.status_code} {response.text[:300]}")
                return response

            yield seeded, call


#: What each statement of a message does, told by its text (the bare app runs each by this label).
_SEND_LABELS: tuple[tuple[str, str], ...] = (  # the first marker a statement holds labels it
    ("open", "INSERT INTO sessions"), ("append", "INSERT INTO session_messages"),
    ("usage", "INSERT INTO usage_snapshots"), ("key", "FROM api_keys"), ("agent", "FROM agents"),
    ("status", "SELECT sessions.status"), ("session", "FROM sessions"), ("history", "FROM session_messages"),
    ("skills", "FROM skills"), ("search", "search_fts"), ("search", "ts_headline"), ("knowledge", "FROM kg_entities"),
    ("mcp", "FROM agent_mcp_servers"))


def send_statements(db: Database, seeded: Seeded) -> dict[str, tuple[str, dict[str, Any]]]:
    """The SQL our app runs for a message to the offline agent — a new conversation's first message and the
    next one — captured from the app itself, each statement as ``(sql, values it binds itself)`` under the
    label of what it does: the bare app runs these very statements.  A statement that no label describes, or a
    label with two different statements, is an error: the baseline must not drift from what we run."""
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    execute = Tx.execute

    def captured(self: Tx, statement: Any, params: Any = None) -> Any:
        sql, defaults = self.db.compiled(statement)
        label = next((label for label, marker in _SEND_LABELS if marker in sql), None)
        if label is None or found.get(label, (sql, defaults)) != (sql, defaults):
            raise RuntimeError(f"a message ran a statement the bare app does not: {sql[:200]!r}")
        found[label] = (sql, dict(defaults))
        return execute(self, statement, params)

    with in_process(db, seeded) as (_seeded, call):
        call("send", 0)  # imports, caches and the first use of each statement
        setattr(Tx, "execute", captured)  # noqa: B010 - undone below
        try:
            conversation = secrets.token_hex(4)
            for _ in range(2):  # the conversation's first message opens its session; the second resumes it
                call("send", 0, conversation)
        finally:
            setattr(Tx, "execute", execute)  # noqa: B010
    missing = {label for label, _marker in _SEND_LABELS} - set(found)
    if missing:
        raise RuntimeError(f"a message ran none of {sorted(missing)}: the bare app's send is stale")
    return found


def bare_env(dialect: str, seeded: Seeded, statements: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, str]:
    """The bare app's settings (apart from its database): the search statement, our statements for a message
    (:func:`send_statements`), the credential and its hash, the tenant and the person."""
    return {"BARE_SEARCH_SQL": search_sql(dialect), "BARE_SEND_SQL": json.dumps(statements),
            "BARE_KEY_HASH": api_keys.hash_api_key(seeded.token), "BARE_TOKEN": seeded.token,
            "BARE_TENANT": seeded.tenant_id, "BARE_USER": seeded.user_id}


def counts(dialect: str, db: Database) -> None:
    """Transactions and statements of each route's request, once warm (the second of each)."""
    with in_process(db) as (_seeded, call):
        order = ("get", "list", "send", "messages", "search", "open", "complete", "delete")  # ends what it opened
        for kind in order:
            call(kind, 0)
        for kind in order:
            with counting() as counted:
                call(kind, 1)
            reads = counted["tx"] - counted["write tx"]
            verbs = ", ".join(f"{counted[verb]} {verb}" for verb in ("SELECT", "INSERT", "UPDATE", "DELETE")
                              if counted[verb])
            savepoints = f", {counted['savepoint']} savepoint" if counted["savepoint"] else ""
            print(f"{dialect:<10} {kind:<9} {counted['tx']} transactions ({counted['write tx']} write, {reads} read), "
                  f"{counted['sql']} statements ({verbs or 'none'}){savepoints}, {counted['hops']} thread hops")


def profile(dialect: str, db: Database, kind: str, n: int = 2000) -> None:
    """cProfile of ``n`` requests of ``kind`` served in process (the client's share is in it too)."""
    kinds = ("open", kind) if kind in ("complete", "delete") else (kind,)
    with in_process(db) as (_seeded, call):
        for k in kinds:
            call(k, 0)
        profiler = cProfile.Profile()
        profiler.enable()
        for number in range(1, n + 1):
            for k in kinds:
                call(k, number)
        profiler.disable()
    print(f"# {dialect}: {n} x {kinds}")
    pstats.Stats(profiler).sort_stats("tottime").print_stats(35)


def main() -> None:
    args = sys.argv[1:]
    engines = [a for a in args if a in ("sqlite", "postgresql")]
    chosen = ((d, db) for d, db in databases() if not engines or d in engines)  # lazily: each is dropped after
    if args and args[0] == "counts":
        for dialect, db in chosen:
            counts(dialect, db)
        return
    if args and args[0] == "profile":
        for dialect, db in chosen:
            profile(dialect, db, args[1])
        return
    header("agentfy's API route mix vs a bare FastAPI app doing the same SQL (uvicorn, 1 process each, wrk)")
    if shutil.which("wrk") is None:
        print("# wrk is not installed (apt-get install wrk): no figures")
        return
    print(f"# wrk -t1 -c{CONNECTIONS}, kinds in turn: {', '.join(KINDS)}; load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "bare_mix.py").write_text(BARE_APP)
        (work / "mix.lua").write_text(LUA)
        for dialect, db in chosen:
            measure(dialect, db, work)
    print(f"# load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
