"""Every key agentfy keeps: the credentials key (AES-256 of stored credentials) and the signing secret (of
signed contexts and cursors), from a setting or from a key file, with one file policy.

The policy, the same for every key file:

* A file named by a setting, or the default one beside an embedded SQLite database
  (:func:`default_key_file`), holds the key as base64 on one line.
* Where a process may make the key (``serve``, the gateway), a missing file is created with a new random key
  and mode 0600, exclusively (``O_EXCL``), so processes starting together agree on one key.  Where a new key
  could decrypt nothing (the cutover), the file is only read.
* A file readable or writable by group or others is refused: the key would not be secret.

Why one module: a second reader of key files is a second policy (one of them used to skip the mode check).
"""

from __future__ import annotations

import base64
import binascii
import os
import stat
from pathlib import Path
from typing import Final, Literal

import sqlalchemy as sa

from agentfy.settings import Settings
from agentfy.store.repos.credentials import KEY_BYTES, CredentialCipher, CredentialKeyError
from agentfy.store.urls import sqlite_file

KeyKind = Literal["signing", "credentials"]

#: The least key material a signing key setting may have (a key file holds exactly :data:`KEY_BYTES`).
SIGNING_KEY_MIN_BYTES: Final = 32


def default_key_file(database_url: str, kind: KeyKind) -> Path:
    """Where a key lives when no setting names it: beside an SQLite file, named after it
    (``var/agentfy.db`` -> ``var/agentfy.signing.key``), so two databases in one directory never share a
    key; for a server database, ``var/keys/<host>-<port>-<database>.<kind>.key`` under the working
    directory.  Several *hosts* serving one PostgreSQL database must set the key explicitly (the same
    value everywhere); the processes of one ``agentfy serve --workers N`` share the file."""
    url = sa.make_url(database_url)
    if url.get_backend_name() == "sqlite":
        database = Path(url.database or "var/agentfy.db")
        return database.with_name(f"{database.stem}.{kind}.key")
    name = f"{url.host or 'localhost'}-{url.port or 5432}-{url.database or 'postgres'}"
    return Path("var") / "keys" / f"{name}.{kind}.key"


def decode_key(text: str, source: str) -> bytes:
    """The :data:`KEY_BYTES`-byte key of base64 ``text``, or :class:`CredentialKeyError` naming ``source``."""
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise CredentialKeyError(f"{source} is not valid base64") from None
    if len(key) != KEY_BYTES:
        raise CredentialKeyError(f"{source} decodes to {len(key)} bytes; a {KEY_BYTES}-byte key is required")
    return key


def read_key_file(path: Path, kind: KeyKind) -> bytes:
    """The key stored in ``path``; :class:`CredentialKeyError` if the file is missing, open to group or
    others, or not the base64 of a :data:`KEY_BYTES`-byte key."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        raise CredentialKeyError(f"{kind} key file {path} does not exist") from None
    if os.name == "posix" and mode & 0o077:
        raise CredentialKeyError(f"{kind} key file {path} has mode {mode:04o}; it must be readable by "
                                 f"its owner only (chmod 600 {path})")
    return decode_key(path.read_text(encoding="ascii"), f"{kind} key file {path}")


def load_or_create_key_file(path: Path, kind: KeyKind) -> bytes:
    """The key stored in ``path`` (:func:`read_key_file`), creating the file with a new key and mode 0600
    first if it is missing (exclusively: two processes starting together agree on one key)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(base64.b64encode(CredentialCipher.generate_key()).decode("ascii") + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    return read_key_file(path, kind)


def credentials_cipher(settings: Settings, database_url: str, *, create: bool,
                       required: bool) -> CredentialCipher | None:
    """The cipher of stored credentials on the database at ``database_url``: the ``credentials_key``
    setting, else the file ``credentials_key_file``, else on an embedded SQLite database its own key file
    (:func:`default_key_file`).  With ``create`` a missing file is made (see the module docstring); without,
    a missing default file means no key.  A server database has no default: every process must share one
    key, so none may invent its own — ``None``, or with ``required`` :class:`CredentialKeyError` naming the
    settings to set."""
    if settings.credentials_key is not None:
        return CredentialCipher(decode_key(settings.credentials_key.get_secret_value(),
                                           "the credentials_key setting ($AGENTFY_CREDENTIALS_KEY)"))
    load = load_or_create_key_file if create else read_key_file
    if settings.credentials_key_file is not None:
        return CredentialCipher(load(settings.credentials_key_file, "credentials"))
    if sqlite_file(database_url) is not None:
        path = default_key_file(database_url, "credentials")
        if create or path.exists():
            return CredentialCipher(load(path, "credentials"))
    if required:
        raise CredentialKeyError("set AGENTFY_CREDENTIALS_KEY (base64 of 32 bytes) or "
                                 "AGENTFY_CREDENTIALS_KEY_FILE, the same in every gateway process")
    return None


def signing_secret(settings: Settings) -> bytes:
    """The ``signing_key`` setting, else the key file it names (``signing_key_file``), else the database's own
    key file, created on first use: every process of one ``agentfy serve`` shares what this returns; several
    hosts on one database must set ``signing_key`` to one value.  A bad setting is :class:`ValueError`."""
    if settings.signing_key is not None:
        text = settings.signing_key.get_secret_value()
        try:
            secret = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("the signing_key setting ($AGENTFY_SIGNING_KEY) is not base64") from None
        if len(secret) < SIGNING_KEY_MIN_BYTES:
            raise ValueError(f"the signing_key setting ($AGENTFY_SIGNING_KEY) must be base64 of at least "
                             f"{SIGNING_KEY_MIN_BYTES} bytes, not {len(secret)}")
        return secret
    return load_or_create_key_file(settings.signing_key_file or default_key_file(settings.database_url, "signing"),
                                   "signing")
