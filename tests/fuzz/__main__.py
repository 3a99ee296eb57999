"""``make fuzz``: Schemathesis with fresh randomness against a live ``agentfy serve``, for as long as asked.

``python -m tests.fuzz --seconds 300 --engine sqlite|postgresql [--seed N] [--workers N]``

The in-repo contract test is deterministic and bounded so that ``make test`` always gives the same answer; this
is the opposite, opt-in: new random data on every run, as long as the time allows, over the network against a
real server process.  It

1. makes its own database: a SQLite file in a temporary directory, or a PostgreSQL database it creates on
   ``$AGENTFY_TEST_PG_URL`` (default ``postgresql://postgres@127.0.0.1:5432/postgres``) and drops at the end;
2. starts ``agentfy serve`` on a free port with a platform-admin key it chose;
3. seeds, through the API, two organizations with owner keys (the first acting as a person, so the chat and
   invitation operations are reached) and an agent each;
4. runs ``st run`` with every check, all phases (examples, coverage, fuzzing, stateful) for the time given,
   with a Web Fuzzing Commons auth file listing both owners and the platform admin, so Schemathesis also
   replays one organization's reads as the other (``object_level_authorization``); every operation but the
   three that would destroy the run's own identities (:data:`OWN_IDENTITY_OPERATIONS`);
5. always stops the server by its PID and drops the database, whatever happened.

It exits non-zero when Schemathesis reports a failure or the server logged an error (an exception in a
background task is no HTTP response to check).  The summary names the seed (``--seed`` replays the same
generated data), the reports directory (JUnit, NDJSON events, and a pytest file replaying each failure) and the
server's log; each failure is also printed with the ``curl`` command that repeats it.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
import sqlalchemy as sa
from psycopg import sql

ROOT = Path(__file__).resolve().parents[2]
PG_ADMIN_URL = os.environ.get("AGENTFY_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/postgres")
READY_SECONDS = 90.0
#: Replaces Schemathesis's ``positive_data_acceptance`` by the one that knows the excused refusals.
HOOKS_MODULE = "tests.fuzz.hooks"
#: Operations the live run leaves out, because they would destroy the run's own identities (the platform admin
#: deleting a seeded organization, an owner revoking its own key or removing the person it acts as): the rest
#: of the time budget would then answer 401 to everything.  The in-repo contract test covers them.
OWN_IDENTITY_OPERATIONS = ("orgs.delete", "org.api_keys.revoke", "org.members.remove")
#: Lines of the server's log that mean it failed on its own, outside any response Schemathesis sees.
SERVER_ERROR_MARKERS = ("Traceback (most recent call last)", " ERROR ", '"level": "error"', '"level":"error"')


@dataclass(frozen=True)
class Identity:
    name: str
    key: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _database(engine: str, workdir: Path) -> Iterator[str]:
    """A fresh, empty database URL on ``engine``; a PostgreSQL one is dropped when the block ends."""
    if engine == "sqlite":
        yield f"sqlite:///{workdir / 'fuzz.db'}"
        return
    name = f"agentfy_fuzz_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        url = sa.engine.make_url(PG_ADMIN_URL).set(drivername="postgresql+psycopg", database=name)
        yield url.render_as_string(hide_password=False)
    finally:
        with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        print(f"dropped database {name}")


@contextmanager
def _server(url: str, workdir: Path, admin_key: str) -> Iterator[tuple[str, Path]]:
    """``agentfy serve`` on a free port, ready when the block starts; stopped by its PID when it ends."""
    port = _free_port()
    log = workdir / "serve.log"
    env = {**os.environ,
           "AGENTFY_SIGNING_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
           "AGENTFY_CREDENTIALS_KEY": base64.b64encode(secrets.token_bytes(32)).decode(),
           "AGENTFY_ADMIN_API_KEY": admin_key,
           "AGENTFY_WORKSPACE_ROOT": str(workdir / "workspaces")}
    with open(log, "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "agentfy.cli", "serve", "--database-url", url,
                                    "--port", str(port)], cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base, process, log)
        yield base, log
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        print(f"stopped agentfy serve (pid {process.pid}, exit {process.returncode})")


def _wait_ready(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"agentfy serve exited with {process.returncode}:\n{log.read_text(errors='replace')}")
        try:
            if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"agentfy serve did not become ready:\n{log.read_text(errors='replace')[-3000:]}")


def _seed(base: str, admin_key: str) -> list[Identity]:
    """Two organizations with an owner key and an agent each, and the platform admin: the identities, in the
    order Schemathesis tries them (an operation one refuses goes to the next)."""
    identities = []
    with httpx.Client(base_url=base, timeout=30) as client:
        for slug, owner in (("fuzz-acme", {"display_name": "Ann Owner", "email": "ann@acme.example"}),
                            ("fuzz-globex", None)):
            body: dict[str, object] = {"slug": slug, "name": slug.title()}
            if owner is not None:
                body["owner"] = owner
            created = client.post("/v1/orgs", json=body, headers={"Authorization": f"Bearer {admin_key}"})
            created.raise_for_status()
            key = created.json()["api_key"]["key"]
            agent = client.post("/v1/agents", json={"agent_key": "bot"}, headers={"Authorization": f"Bearer {key}"})
            agent.raise_for_status()
            identities.append(Identity(f"{slug}-owner", key))
    return [*identities, Identity("platform-admin", admin_key)]


def _auth_file(identities: list[Identity], path: Path) -> Path:
    path.write_text(json.dumps({"schemaVersion": "1.0", "auth": [
        {"name": who.name, "fixedHeaders": [{"name": "Authorization", "value": f"Bearer {who.key}"}]}
        for who in identities]}))
    path.chmod(0o600)
    return path


def _server_errors(log: Path) -> list[str]:
    return [line for line in log.read_text(errors="replace").splitlines()
            if any(marker in line for marker in SERVER_ERROR_MARKERS)]


def _schemathesis(base: str, auth: Path, reports: Path, seconds: int, seed: int, workers: int, cwd: Path) -> int:
    command = [str(Path(sys.executable).with_name("st")), "run", f"{base}/openapi.json",
               "--checks", "all", "--exclude-checks", "positive_data_acceptance",
               "--max-time", str(seconds), "--seed", str(seed), "--workers", str(workers),
               "--auth-wfc", str(auth), "--suppress-health-check", "all", "--continue-on-failure",
               *(f"--exclude-operation-id={operation}" for operation in OWN_IDENTITY_OPERATIONS),
               "--report", "junit,ndjson,pytest", "--report-dir", str(reports), "--request-timeout", "30"]
    print("$ " + " ".join(command))
    env = {**os.environ, "SCHEMATHESIS_HOOKS": HOOKS_MODULE, "PYTHONPATH": str(ROOT)}
    # `st` keeps its crash cache (`.schemathesis/`, what `st replay` reads) in its working directory: the reports.
    return subprocess.run(command, cwd=cwd, env=env, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=300, help="time budget of the Schemathesis run")
    parser.add_argument("--engine", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--seed", type=int, default=None, help="replay a run's generated data (default: random)")
    parser.add_argument("--workers", type=int, default=1, help="concurrent Schemathesis workers")
    parser.add_argument("--reports", type=Path, default=ROOT / "var" / "fuzz",
                        help="where the reports of this run go (a directory per run)")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    reports = args.reports / time.strftime(f"%Y%m%d-%H%M%S-{args.engine}-{seed}")
    reports.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="agentfy-fuzz-"))
    admin_key = "agfy_fuzz_admin_" + secrets.token_urlsafe(32)
    status, errors = 1, []
    try:
        with _database(args.engine, workdir) as url, _server(url, workdir, admin_key) as (base, log):
            auth = _auth_file(_seed(base, admin_key), workdir / "auth.json")
            status = _schemathesis(base, auth, reports, args.seconds, seed, args.workers, reports)
            errors = _server_errors(log)
            shutil.copyfile(log, reports / "serve.log")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    failed = status != 0 or bool(errors)
    print(f"\nfuzz summary: engine={args.engine} seconds={args.seconds} seed={seed} workers={args.workers}")
    print(f"  schemathesis exit status: {status}{' (failures above)' if status else ''}")
    print(f"  server log errors: {len(errors)}" + "".join(f"\n    {line[:300]}" for line in errors[:20]))
    print(f"  reports and server log: {reports}")
    print(f"  replay the same data: make fuzz ENGINE={args.engine} SECONDS={args.seconds} SEED={seed}")
    print("FAILED" if failed else "OK")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
