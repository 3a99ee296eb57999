"""``read_file`` and ``write_file``: files in the agent's workspace, per SCOPE.

Where: ``<workspace root>/tenants/<slug>/agents/<agent_key>/scopes/<scope>/<path parts…>`` (the agent's own
files, for a run without a scope, under ``own/`` instead of ``scopes/<scope>/``).  The SCOPE, not the sender,
picks the directory (:func:`~agentfy.permissions.ownership.file_scope`): every member of a group shares its
files.  Each path part goes through :func:`~agentfy.agents.workspace.workspace_path`, so ``..``, absolute
paths and separators inside a part are inert text and the result is inside the agent's directory.

Writing asks :func:`~agentfy.permissions.policy.check_file_writer_permission` with the run's context: in a
group the sender needs a ``file_writer`` grant (owners, admins and operators need none); refused, nothing is
written.  A write is attributed to the ACTOR in the organization's audit log (``workspace.file.written``,
actor = the sender, target = ``<scope>/<path>``).  The entry is committed first and the file replaced
atomically after it: an entry without a file means a failed write, never a file without an entry.
Files are opened without following symlinks.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from agentfy.agents.workspace import InvalidSegmentError, WorkspaceEscapeError, workspace_path
from agentfy.identity import Scope
from agentfy.permissions.ownership import audit_actor, file_scope
from agentfy.permissions.policy import check_file_writer_permission
from agentfy.runtime.model import ToolSpec
from agentfy.runtime.tools import Tool, ToolEnv, ToolError, parameters, refusal, string, text
from agentfy.store.repos import audit

FILE_MAX_BYTES: Final = 1_000_000
PATH_MAX_LENGTH: Final = 1_000
WRITTEN_ACTION: Final = "workspace.file.written"
_NO_FOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)


def scope_parts(scope_user_id: str | None) -> tuple[str, ...]:
    """The directory parts of a SCOPE's files inside the agent's directory."""
    return ("scopes", scope_user_id) if scope_user_id else ("own",)


def file_path(env: ToolEnv, path: str) -> Path:
    """The on-disk path of ``path`` (``a/b.txt``: parts split on ``/``) in the run's scope, or
    :class:`ToolError` for an empty part or a path that would leave the workspace."""
    parts = path.split("/")
    if any(part == "" for part in parts):
        raise ToolError(f"path {path[:200]!r} has an empty part; expected parts separated by single '/', e.g. "
                        "notes/today.txt")
    try:
        return workspace_path(env.workspace_root, env.tenant_slug, env.agent.agent_key,
                              *scope_parts(file_scope(env.context)), *parts)
    except (InvalidSegmentError, WorkspaceEscapeError) as error:
        raise ToolError(f"path {path[:200]!r} cannot be used: {error}") from None


def _read(target: Path) -> bytes:
    descriptor = os.open(target, os.O_RDONLY | _NO_FOLLOW)
    with os.fdopen(descriptor, "rb") as handle:
        return handle.read(FILE_MAX_BYTES + 1)


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NO_FOLLOW, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    os.replace(temporary, target)


async def read_file(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    path = text(arguments, "path")
    target = file_path(env, path)
    try:
        data = await asyncio.to_thread(_read, target)
    except FileNotFoundError:
        raise ToolError(f"read_file: there is no file {path!r} in this chat's workspace") from None
    except OSError as error:
        raise ToolError(f"read_file: {path!r} cannot be read ({type(error).__name__})") from None
    if len(data) > FILE_MAX_BYTES:
        raise ToolError(f"read_file: {path!r} is larger than {FILE_MAX_BYTES} bytes")
    return data.decode("utf-8", "replace")


def _checked_write(env: ToolEnv, path: str, content: str) -> str:
    decision = check_file_writer_permission(env.db, env.context, env.agent.id)
    if not decision.allowed:
        return refusal(decision)
    target = file_path(env, path)
    data = content.encode()
    if len(data) > FILE_MAX_BYTES:
        raise ToolError(f"write_file: content is {len(data)} bytes; at most {FILE_MAX_BYTES} are allowed")
    scope = file_scope(env.context) or ""
    with env.db.transaction() as tx:
        audit.record_audit(tx, Scope(env.agent.tenant_id), action=WRITTEN_ACTION, actor_id=audit_actor(env.context),
                           target_id=f"{scope}/{path}",
                           details={"agent_id": env.agent.id, "scope": scope, "path": path, "bytes": len(data),
                                    "decision": decision.code.value})
    try:
        _write(target, data)
    except OSError as error:
        raise ToolError(f"write_file: {path!r} cannot be written ({type(error).__name__})") from None
    return f"wrote {path} ({len(data)} bytes) for {audit_actor(env.context)}"


async def write_file(env: ToolEnv, arguments: Mapping[str, Any]) -> str:
    path, content = text(arguments, "path"), text(arguments, "content")
    return await asyncio.to_thread(_checked_write, env, path, content)


_PATH: Final = string("the file, parts separated by '/'", max_length=PATH_MAX_LENGTH)
READ_FILE: Final = Tool(ToolSpec("read_file", "Read a text file of this chat's workspace.",
                                 parameters({"path": _PATH}, ("path",))), read_file)
WRITE_FILE: Final = Tool(ToolSpec("write_file", "Write (replace) a text file in this chat's workspace. In a group "
                                  "chat the sender needs the file_writer grant.",
                                  parameters({"path": _PATH, "content": string("the whole new text",
                                                                               max_length=FILE_MAX_BYTES,
                                                                               allow_empty=True)},
                                             ("path", "content"))), write_file)
