"""Agent workspaces on disk: ``<root>/tenants/<tenant slug>/agents/<agent_key>/<parts…>``.

The path is user-visible, so it is built from the *display* identities: the tenant slug and the
``agent_key``, never the agent ID.  The key alone is not enough: it is unique only within a tenant (two
organizations may each have a ``support-bot``), which is why the tenant slug is the level above it.

Every segment — the slug, the key and each caller part — goes through :func:`encode_segment`, which is

* **safe**: the output uses only ``a-z``, ``0-9``, ``_``, ``-`` and ``%``, so it can never be ``.``,
  ``..``, a separator (``/`` or ``\\``), a drive (``C:``), an absolute path, a control character or NUL,
  and is never empty (an empty input is refused);
* **injective**, even on case-insensitive filesystems: every UTF-8 byte outside ``[a-z0-9_-]`` becomes
  ``%xx`` (lower-case hex), the escape character included, so upper-case letters are escaped (``Bot`` →
  ``%42ot``, never the same directory as ``bot``) and the whole output is lower case;
  :func:`decode_segment` inverts it exactly;
* **bounded**: an output longer than 255 bytes (``NAME_MAX`` on common filesystems) is an error, never
  truncated, because truncation would make two inputs share a directory.

Windows device names (``con``, ``nul``, ``com1``…) would stay themselves, so their first letter is escaped
too (``con`` → ``%63on``); decoding still returns ``con``, so injectivity holds.

A caller part is always *one* segment: ``"a/b"`` is the single directory ``a%2fb``, never two.  Pass
several parts for nested directories.

:func:`workspace_path` then checks, lexically and after ``Path.resolve()``, that the result stays inside the
agent's directory, so a symlink planted inside the workspace cannot lead out of it at the time of the call.
Between the check and the use the filesystem can still change (TOCTOU): code that opens files in a
workspace an untrusted party can write to must also refuse to follow symlinks when it opens them.

Tenant slugs are parsed by :func:`parse_tenant_slug` (the organization slug rule, plus: never the shape of
an ID, so an ``org-…`` tenant ID can never be passed where the slug belongs).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from agentfy.identity import AgentKey, parse_agent_key
from agentfy.identity.keys import parse_tenant_slug

#: The longest directory name most filesystems accept (bytes; the output is ASCII, so characters too).
SEGMENT_MAX_BYTES: Final = 255

_ESCAPE: Final = "%"
_SAFE_BYTES: Final = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789_-")
_WINDOWS_DEVICES: Final = frozenset(
    {"con", "prn", "aux", "nul"} | {f"com{n}" for n in range(10)} | {f"lpt{n}" for n in range(10)})
_ESCAPED_BYTE: Final = re.compile(r"%([0-9a-f]{2})")


class InvalidSegmentError(ValueError):
    """A path segment that cannot be encoded: empty, not a string, or too long once encoded."""

    def __init__(self, value: object, reason: str) -> None:
        self.value = value
        self.reason = reason
        shown = value if isinstance(value, str) and len(value) <= 80 else type(value).__name__
        super().__init__(f"invalid path segment {shown!r}: {reason}")


class WorkspaceEscapeError(ValueError):
    """A workspace path would resolve outside its agent's directory (e.g. through a planted symlink)."""

    def __init__(self, path: Path, base: Path) -> None:
        self.path = path
        self.base = base
        super().__init__(f"{path} resolves outside the agent workspace {base}")


def _escape(byte: int) -> str:
    return f"{_ESCAPE}{byte:02x}"


def encode_segment(value: str) -> str:
    """``value`` as one safe, injective directory name (see the module docstring for the contract).

    Raises :class:`InvalidSegmentError` for a non-string, an empty string, or an encoding over
    :data:`SEGMENT_MAX_BYTES`.  Lone surrogates (from ``surrogateescape``-decoded names) are encoded too.
    """
    if not isinstance(value, str):
        raise InvalidSegmentError(value, "expected a string")
    if not value:
        raise InvalidSegmentError(value, "is empty")
    raw = value.encode("utf-8", "surrogatepass")
    encoded = "".join(chr(b) if b in _SAFE_BYTES else _escape(b) for b in raw)
    if encoded in _WINDOWS_DEVICES:
        encoded = _escape(raw[0]) + encoded[1:]
    if len(encoded) > SEGMENT_MAX_BYTES:
        raise InvalidSegmentError(value, f"encodes to {len(encoded)} bytes; at most {SEGMENT_MAX_BYTES} "
                                         "are allowed (names are never truncated: that would merge two)")
    return encoded


def decode_segment(name: str) -> str:
    """The value :func:`encode_segment` turned into ``name``; :class:`InvalidSegmentError` for any name it
    would not have produced (so a directory listing maps back one-to-one)."""
    if not isinstance(name, str) or not name:
        raise InvalidSegmentError(name, "is not an encoded segment")
    try:
        raw = bytes(_decoded_bytes(name))
        value = raw.decode("utf-8", "surrogatepass")
    except ValueError:
        raise InvalidSegmentError(name, "is not an encoded segment") from None
    if encode_segment(value) != name:
        raise InvalidSegmentError(name, "is not the canonical encoding of any segment")
    return value


def _decoded_bytes(name: str) -> list[int]:
    out: list[int] = []
    i = 0
    while i < len(name):
        if name[i] == _ESCAPE:
            match = _ESCAPED_BYTE.match(name, i)
            if match is None:
                raise ValueError("bad escape")
            out.append(int(match.group(1), 16))
            i += 3
        else:
            out.append(ord(name[i]))
            i += 1
    return out


def agent_dir(root: Path, tenant_slug: str, agent_key: str) -> Path:
    """``<root>/tenants/<slug>/agents/<key>``: the slug and key are validated, then encoded."""
    slug = parse_tenant_slug(tenant_slug)
    key: AgentKey = parse_agent_key(agent_key)
    return Path(root) / "tenants" / encode_segment(slug) / "agents" / encode_segment(key)


def workspace_path(root: Path, tenant_slug: str, agent_key: str, *parts: str) -> Path:
    """``agent_dir(root, tenant_slug, agent_key) / encode_segment(part)…`` for each part, as a lexical path.

    Guaranteed inside the agent's directory: lexically by construction (checked), and after resolving
    symlinks at the time of the call (:class:`WorkspaceEscapeError` otherwise).  Nothing is created.
    """
    base = agent_dir(root, tenant_slug, agent_key)
    path = base.joinpath(*(encode_segment(part) for part in parts))
    if path.parts[:len(base.parts)] != base.parts or len(path.parts) != len(base.parts) + len(parts):
        raise WorkspaceEscapeError(path, base)  # unreachable while encode_segment keeps its contract
    if not path.resolve().is_relative_to(base.resolve()):
        raise WorkspaceEscapeError(path, base)
    return path
