"""Keeping writers out of a PostgreSQL database for the whole cutover, and letting them back in afterwards —
also after the cutover was killed.

Why: a writer that connects after the start-up check queues behind the cutover's table locks and writes its
stale IDs just after COMMIT.  Refusing to start while others are connected is not enough; new connections
must be refused for the whole run.  ``ALTER DATABASE … ALLOW_CONNECTIONS false`` does that for every role
(superusers included, unlike ``CONNECTION LIMIT``), and it is issued from another database of the server
(``postgres``, else ``template1``), since it is about the target's own connections.

A fence must never outlive its run.  Every exit path of the run lifts it; a SIGKILL cannot, so the fence is
recorded first, durably and on the server itself, as the database setting ``agentfy.cutover_fence`` (visible
from any database in ``pg_db_role_setting``).  The next cutover on that database, or
``agentfy cutover unfence``, finds the record and, once no cutover session of the record's run is alive,
lifts it.  ``ALLOW_CONNECTIONS`` is only ever set back to true: a database that refused connections before
could not have been cut over (the cutover connects to it first).
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from typing import Any, Final

import psycopg
import sqlalchemy as sa
from psycopg import sql as pg_sql

from agentfy.cutover.errors import CutoverRefusedError

#: The database setting that records a fence (custom settings need a dotted name).
FENCE_SETTING: Final = "agentfy.cutover_fence"
#: The ``application_name`` of the cutover's own session (a live fence has one).
APPLICATION_NAME: Final = "agentfy-cutover"
#: Databases the fence is set from, in order of preference.
MAINTENANCE_DATABASES: Final = ("postgres", "template1")


def _connect_admin(url: sa.URL, timeout_seconds: float) -> psycopg.Connection[tuple[Any, ...]]:
    last: psycopg.Error | None = None
    for name in MAINTENANCE_DATABASES:
        uri = url.set(drivername="postgresql", database=name, password=None).render_as_string(hide_password=False)
        try:
            return psycopg.connect(uri, password=url.password, autocommit=True, application_name=APPLICATION_NAME,
                                   connect_timeout=max(1, int(timeout_seconds)))
        except psycopg.Error as error:
            last = error
    raise CutoverRefusedError(f"cannot connect to the server's {' or '.join(MAINTENANCE_DATABASES)} database, from "
                              f"which the cutover keeps writers out of {url.database}: {str(last).strip()}")


class ConnectionFence:
    """The fence of one database, driven from a maintenance connection of its own (autocommit)."""

    def __init__(self, url: sa.URL, timeout_seconds: float) -> None:
        self.database = str(url.database)
        self.timeout_seconds = timeout_seconds
        self.admin = _connect_admin(url, timeout_seconds)
        self.raised = False

    def _alter(self, clause: pg_sql.Composable) -> None:
        statement = pg_sql.SQL("ALTER DATABASE {} {}").format(pg_sql.Identifier(self.database), clause)
        try:
            self.admin.execute(statement)
        except psycopg.errors.InsufficientPrivilege:
            raise CutoverRefusedError(f"the cutover must own the database {self.database} (or be a superuser) to keep "
                                      "writers out while it runs (ALTER DATABASE … ALLOW_CONNECTIONS)") from None

    def record(self) -> str | None:
        """The recorded fence of this database, or ``None``."""
        row = self.admin.execute(
            "SELECT s.setting FROM pg_db_role_setting AS r JOIN pg_database AS d ON d.oid = r.setdatabase "
            "CROSS JOIN LATERAL unnest(r.setconfig) AS s(setting) WHERE d.datname = %s AND r.setrole = 0 "
            "AND starts_with(s.setting, %s)", (self.database, FENCE_SETTING + "=")).fetchone()
        return None if row is None else str(row[0]).partition("=")[2]

    def live_cutover_pids(self, recorded: str) -> list[int]:
        """Backends of the run that recorded ``recorded`` that are still connected to the database."""
        fields = dict(part.partition(":")[::2] for part in recorded.split(";"))
        pid = fields.get("backend", "")
        if not pid.isdigit():
            return []
        return [int(p) for (p,) in self.admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid = %s", (self.database, int(pid))).fetchall()]

    def lift_stale(self) -> str | None:
        """Lift a fence left by a run that is gone (waiting up to the timeout for its session to end);
        :class:`CutoverRefusedError` while that run is alive.  The record lifted, or ``None``."""
        recorded = self.record()
        if recorded is None:
            return None
        deadline = time.monotonic() + self.timeout_seconds
        while self.live_cutover_pids(recorded):
            if time.monotonic() >= deadline:
                raise CutoverRefusedError(f"another cutover is running on {self.database} ({recorded}); it keeps "
                                          "new connections out until it ends: wait for it")
            time.sleep(0.1)
        self.lift()
        return recorded

    def raise_fence(self, backend_pid: int, run_id: str) -> None:
        """Record the fence, then refuse new connections (in that order: a kill in between leaves a record
        whose lifting is harmless)."""
        record = f"run:{run_id};backend:{backend_pid};host:{socket.gethostname()};pid:{os.getpid()}"
        self._alter(pg_sql.SQL("SET " + FENCE_SETTING + " = {}").format(pg_sql.Literal(record)))
        self.raised = True
        self._alter(pg_sql.SQL("ALLOW_CONNECTIONS false"))

    def open_gate(self) -> None:
        """Let connections in for a moment (``pg_dump`` must connect); the record stays."""
        self._alter(pg_sql.SQL("ALLOW_CONNECTIONS true"))

    def close_gate(self) -> None:
        self._alter(pg_sql.SQL("ALLOW_CONNECTIONS false"))

    def others(self, own: set[int]) -> list[tuple[int, str, str, str]]:
        """Client sessions on the database other than ``own``: ``(pid, application, state, address)``."""
        return [(int(pid), str(app), str(state), str(addr)) for pid, app, state, addr in self.admin.execute(
            "SELECT pid, coalesce(application_name, ''), coalesce(state, ''), coalesce(host(client_addr), 'local') "
            "FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend' ORDER BY pid",
            (self.database,)).fetchall() if int(pid) not in own]

    def evict(self, own: set[int]) -> int:
        """Disconnect every other client session (they connected while the gate was open; the cutover's table
        locks kept them from writing): how many."""
        evicted = 0
        for pid, *_ in self.others(own):
            row = self.admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()
            evicted += bool(row and row[0])
        return evicted

    def lift(self) -> None:
        """Accept connections again and forget the record."""
        self._alter(pg_sql.SQL("ALLOW_CONNECTIONS true"))
        self._alter(pg_sql.SQL("RESET " + FENCE_SETTING))
        self.raised = False

    def close(self) -> None:
        with contextlib.suppress(psycopg.Error):
            if self.raised:
                self.lift()
        with contextlib.suppress(psycopg.Error):
            self.admin.close()


def unfence(url: str, timeout_seconds: float = 5.0) -> str | None:
    """``agentfy cutover unfence``: lift the fence a killed cutover left on the PostgreSQL database at ``url``;
    the record lifted, ``None`` if there was none.  Refuses while the cutover that raised it is alive."""
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() != "postgresql":
        return None  # SQLite's fence is a lock the operating system releases with the process
    fence = ConnectionFence(parsed, timeout_seconds)
    try:
        return fence.lift_stale()
    finally:
        fence.close()
