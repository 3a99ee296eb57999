"""Organization credentials (API keys of model providers, channel tokens), encrypted at rest.

AES-256-GCM with a fresh 12-byte random nonce per encryption, and the owner organization's ID (UTF-8) as
associated data: the ciphertext is bound to its owner, so a secret copied into another organization's row
(a bug, a bad restore, a malicious write) fails to authenticate instead of decrypting for the wrong
tenant.  A ciphertext that does not authenticate raises :class:`CredentialDecryptionError`; garbage is
never returned.

The key comes from the ``credentials_key`` setting (``$AGENTFY_CREDENTIALS_KEY``, base64 of 32 bytes) or a key
file: :mod:`agentfy.keys` reads both, with the one key-file policy; this module only takes the key.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any, Final

import sqlalchemy as sa
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from agentfy.identity import OrgCredentialId, Scope
from agentfy.identity.keys import SLUG_PATTERN
from agentfy.store.db import Tx, now
from agentfy.store.errors import ConflictError, InvalidInputError, NotFoundError, StoreError, UniqueViolation
from agentfy.store.inputs import check_text
from agentfy.store.schema import org_credentials
from agentfy.store.sql import insert_returning_id

KEY_ENV: Final = "AGENTFY_CREDENTIALS_KEY"
KEY_BYTES: Final = 32
NONCE_BYTES: Final = 12
NAME_MAX_LENGTH: Final = 200
#: Far above any real credential; keeps a row from holding a file.
SECRET_MAX_BYTES: Final = 64 * 1024

_IN_ORG: Final = org_credentials.c.org_id == sa.bindparam("tenant_id")
_INSERT: Final = insert_returning_id(org_credentials, ["org_id", "name", "nonce", "ciphertext", "created_at"])
_BY_NAME: Final = sa.select(org_credentials.c.id, org_credentials.c.org_id, org_credentials.c.nonce,
                            org_credentials.c.ciphertext).where(_IN_ORG, org_credentials.c.name == sa.bindparam("name"))
_REPLACE: Final = (sa.update(org_credentials).where(_IN_ORG, org_credentials.c.id == sa.bindparam("id"))
                   .values(nonce=sa.bindparam("nonce"), ciphertext=sa.bindparam("ciphertext"),
                           rotated_at=sa.bindparam("rotated_at")))
_NAMES: Final = sa.select(org_credentials.c.name).where(_IN_ORG).order_by(org_credentials.c.name)
_INFOS: Final = (sa.select(org_credentials.c.name, org_credentials.c.created_at, org_credentials.c.rotated_at)
                 .where(_IN_ORG)
                 .order_by(org_credentials.c.name))
_INFO: Final = _INFOS.where(org_credentials.c.name == sa.bindparam("name"))
_DELETE: Final = sa.delete(org_credentials).where(_IN_ORG, org_credentials.c.name == sa.bindparam("name"))


#: The name a person gives a credential (and an agent's ``config.model.credential`` refers to): a lower-case
#: slug, the rule of agent keys and organization slugs, e.g. ``openai`` or ``openai-prod``.
NAME_PATTERN: Final = SLUG_PATTERN
#: The longest name a person may give (the store itself takes up to :data:`NAME_MAX_LENGTH`).
SLUG_NAME_MAX_LENGTH: Final = 63
_SLUG_NAME: Final = re.compile(NAME_PATTERN)


def name_problem(value: object) -> str | None:
    """Why ``value`` is not a credential name a person may give, or ``None`` if it is one."""
    if not isinstance(value, str):
        return f"expected a string, got {type(value).__name__}"
    if not 1 <= len(value) <= SLUG_NAME_MAX_LENGTH or _SLUG_NAME.fullmatch(value) is None:
        return (f"expected a lower-case slug of 1 to {SLUG_NAME_MAX_LENGTH} characters (a-z, 0-9 and single "
                "hyphens), e.g. 'openai'")
    return None


@dataclass(frozen=True, slots=True)
class CredentialInfo:
    """What may be shown of a stored credential: its name, when it was first stored and when its secret was
    last replaced (``None``: never) — never the secret."""

    name: str
    created_at: str
    rotated_at: str | None = None


class CredentialKeyError(StoreError):
    """The credentials key is missing or malformed (configuration, not data)."""

    code = "credential_key_invalid"


class CredentialDecryptionError(StoreError):
    """A stored credential did not authenticate: the wrong key, or a ciphertext not written for this
    organization (copied from another one, or altered)."""

    code = "credential_undecryptable"


class CredentialCipher:
    """AES-GCM bound to an owner: ``encrypt(owner_id, secret)`` / ``decrypt(owner_id, nonce, ciphertext)``."""

    __slots__ = ("_aead",)

    def __init__(self, key: bytes) -> None:
        if not isinstance(key, bytes) or len(key) != KEY_BYTES:
            got = f"{len(key)} bytes" if isinstance(key, bytes) else type(key).__name__
            raise CredentialKeyError(f"the credentials key must be {KEY_BYTES} bytes (AES-256), got {got}")
        self._aead = AESGCM(key)

    def __repr__(self) -> str:
        return "CredentialCipher(<key hidden>)"

    @staticmethod
    def generate_key() -> bytes:
        return AESGCM.generate_key(bit_length=KEY_BYTES * 8)

    def encrypt(self, owner_id: str, secret: bytes) -> tuple[bytes, bytes]:
        """``(nonce, ciphertext)`` for ``secret``, bound to ``owner_id``; a fresh random nonce each call."""
        nonce = secrets.token_bytes(NONCE_BYTES)
        return nonce, self._aead.encrypt(nonce, secret, owner_id.encode("utf-8"))

    def decrypt(self, owner_id: str, nonce: bytes, ciphertext: bytes) -> bytes:
        """The secret, or :class:`CredentialDecryptionError` if it does not authenticate for ``owner_id``."""
        try:
            return self._aead.decrypt(bytes(nonce), bytes(ciphertext), owner_id.encode("utf-8"))
        except (InvalidTag, ValueError):
            raise CredentialDecryptionError(
                f"a credential of organization {owner_id} could not be decrypted: the key is not the one it was "
                "encrypted with, or the ciphertext was not written for this organization") from None


@dataclass(frozen=True, slots=True)
class _Stored:
    id: OrgCredentialId
    org_id: str
    nonce: bytes
    ciphertext: bytes


def _stored(tx: Tx, scope: Scope, name: str) -> _Stored | None:
    row = tx.one(_BY_NAME, {"tenant_id": scope.tenant_id, "name": name})
    return None if row is None else _Stored(OrgCredentialId(row[0]), row[1], bytes(row[2]), bytes(row[3]))


def _secret(value: object) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise InvalidInputError(f"invalid secret: expected bytes, got {type(value).__name__}", field="secret",
                                value=None)
    secret = bytes(value)
    if len(secret) > SECRET_MAX_BYTES:
        raise InvalidInputError(f"invalid secret: {len(secret)} bytes; at most {SECRET_MAX_BYTES} are allowed",
                                field="secret", value=None)
    return secret


def put_credential(tx: Tx, scope: Scope, cipher: CredentialCipher, name: str, secret: bytes) -> OrgCredentialId:
    """Store ``secret`` under ``name`` in the scope's organization (replacing a previous one, which keeps its
    ID), encrypted with a fresh nonce and bound to the organization."""
    name = check_text(name, "name", max_length=NAME_MAX_LENGTH)
    nonce, ciphertext = cipher.encrypt(scope.tenant_id, _secret(secret))
    existing = _stored(tx, scope, name)
    if existing is not None:
        tx.execute(_REPLACE, {"tenant_id": scope.tenant_id, "id": existing.id, "nonce": nonce,
                              "ciphertext": ciphertext, "rotated_at": now()})
        return existing.id
    values: dict[str, Any] = {"org_id": scope.tenant_id, "name": name, "nonce": nonce, "ciphertext": ciphertext,
                              "created_at": now()}
    try:
        return OrgCredentialId(tx.insert_minted("org-credential", _INSERT, values))
    except UniqueViolation:
        raise ConflictError(f"credential {name!r} was created by another transaction at the same time; retry",
                            field="name", value=name) from None


def get_credential(tx: Tx, scope: Scope, cipher: CredentialCipher, name: str) -> bytes:
    """The secret stored under ``name`` in the scope's organization; :class:`NotFoundError` if there is none,
    :class:`CredentialDecryptionError` if it does not authenticate (never garbage)."""
    name = check_text(name, "name", max_length=NAME_MAX_LENGTH)
    stored = _stored(tx, scope, name)
    if stored is None:
        raise NotFoundError("credential", name)
    try:
        # The associated data is the scope's organization: the owner the caller is entitled to read as.
        return cipher.decrypt(scope.tenant_id, stored.nonce, stored.ciphertext)
    except CredentialDecryptionError as error:
        raise CredentialDecryptionError(f"credential {name!r}: {error}") from None


def list_credential_names(tx: Tx, scope: Scope) -> list[str]:
    """The names of the organization's credentials (never the secrets), sorted."""
    return [row[0] for row in tx.all(_NAMES, {"tenant_id": scope.tenant_id})]


def list_credentials(tx: Tx, scope: Scope) -> list[CredentialInfo]:
    """The organization's credentials by name, with when each was stored and rotated (never the secrets)."""
    return [CredentialInfo(row[0], row[1], row[2]) for row in tx.all(_INFOS, {"tenant_id": scope.tenant_id})]


def credential_info(tx: Tx, scope: Scope, name: str) -> CredentialInfo:
    """The credential ``name`` of the scope's organization (never its secret); :class:`NotFoundError` if there
    is none, another organization's included."""
    name = check_text(name, "name", max_length=NAME_MAX_LENGTH)
    row = tx.one(_INFO, {"tenant_id": scope.tenant_id, "name": name})
    if row is None:
        raise NotFoundError("credential", name)
    return CredentialInfo(row[0], row[1], row[2])


def delete_credential(tx: Tx, scope: Scope, name: str) -> None:
    name = check_text(name, "name", max_length=NAME_MAX_LENGTH)
    if tx.execute(_DELETE, {"tenant_id": scope.tenant_id, "name": name}).rowcount == 0:
        raise NotFoundError("credential", name)
