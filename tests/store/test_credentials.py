"""Credentials: AES-GCM bound to the owner organization, tenant isolation (the key's sources: tests/test_keys.py)."""

from __future__ import annotations

import pytest

from agentfy.ids import is_canonical_id
from agentfy.store.db import Database
from agentfy.store.errors import NotFoundError
from agentfy.store.repos import credentials
from agentfy.store.repos.credentials import (
    CredentialCipher,
    CredentialDecryptionError,
    CredentialKeyError,
)
from tests.helpers.tenants import make_tenant
from tests.store.helpers import count

KEY = bytes(range(32))


@pytest.fixture
def cipher() -> CredentialCipher:
    return CredentialCipher(KEY)


def _stored(db: Database, org_id: str, name: str) -> tuple[bytes, bytes]:
    with db.transaction(write=False) as tx:
        row = tx.one("SELECT nonce, ciphertext FROM org_credentials WHERE org_id = :org AND name = :name",
                     {"org": org_id, "name": name})
    assert row is not None
    return bytes(row[0]), bytes(row[1])


def test_put_get_list_replace_delete(db: Database, cipher: CredentialCipher) -> None:
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        first = credentials.put_credential(tx, acme, cipher, "openai", b"sk-first")
        credentials.put_credential(tx, acme, cipher, "anthropic", b"sk-ant")
        assert is_canonical_id(first, "org-credential")
        assert credentials.get_credential(tx, acme, cipher, "openai") == b"sk-first"
        assert credentials.list_credential_names(tx, acme) == ["anthropic", "openai"]
    nonce, ciphertext = _stored(db, acme.tenant_id, "openai")
    assert b"sk-first" not in ciphertext and len(nonce) == 12
    with db.transaction() as tx:
        assert credentials.put_credential(tx, acme, cipher, "openai", b"sk-second") == first  # keeps its ID
        assert credentials.get_credential(tx, acme, cipher, "openai") == b"sk-second"
    assert _stored(db, acme.tenant_id, "openai")[0] != nonce
    with db.transaction() as tx:
        credentials.delete_credential(tx, acme, "openai")
        assert credentials.list_credential_names(tx, acme) == ["anthropic"]
        with pytest.raises(NotFoundError, match="credential 'openai' not found"):
            credentials.get_credential(tx, acme, cipher, "openai")


def test_every_encryption_uses_a_fresh_nonce(cipher: CredentialCipher) -> None:
    a, b = cipher.encrypt("org-x", b"same"), cipher.encrypt("org-x", b"same")
    assert a[0] != b[0] and a[1] != b[1]
    assert cipher.decrypt("org-x", *a) == cipher.decrypt("org-x", *b) == b"same"


def test_a_ciphertext_copied_to_another_organization_does_not_decrypt(db: Database, cipher: CredentialCipher) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    with db.transaction() as tx:
        credentials.put_credential(tx, acme, cipher, "openai", b"acme's secret")
        credentials.put_credential(tx, globex, cipher, "openai", b"globex's secret")
    nonce, ciphertext = _stored(db, acme.tenant_id, "openai")
    with db.transaction() as tx:  # a bug, a bad restore or a malicious write copies acme's row into globex's
        tx.execute("UPDATE org_credentials SET nonce = :nonce, ciphertext = :ciphertext WHERE org_id = :org",
                   {"nonce": nonce, "ciphertext": ciphertext, "org": globex.tenant_id})
    with db.transaction() as tx:
        with pytest.raises(CredentialDecryptionError, match=r"credential 'openai'.*could not be decrypted"):
            credentials.get_credential(tx, globex, cipher, "openai")
        assert credentials.get_credential(tx, acme, cipher, "openai") == b"acme's secret"


def test_a_wrong_key_or_a_tampered_ciphertext_raises_never_garbage(db: Database, cipher: CredentialCipher) -> None:
    acme = make_tenant(db, "acme").scope
    with db.transaction() as tx:
        credentials.put_credential(tx, acme, cipher, "token", b"secret")
    with db.transaction() as tx, pytest.raises(CredentialDecryptionError):
        credentials.get_credential(tx, acme, CredentialCipher(bytes(32)), "token")
    _, ciphertext = _stored(db, acme.tenant_id, "token")
    with db.transaction() as tx:
        tx.execute("UPDATE org_credentials SET ciphertext = :c", {"c": bytes([ciphertext[0] ^ 1]) + ciphertext[1:]})
    with db.transaction() as tx, pytest.raises(CredentialDecryptionError):
        credentials.get_credential(tx, acme, cipher, "token")


def test_another_tenants_credential_is_not_found(db: Database, cipher: CredentialCipher) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    with db.transaction() as tx:
        credentials.put_credential(tx, globex, cipher, "openai", b"theirs")
    with db.transaction() as tx:
        with pytest.raises(NotFoundError, match="credential 'openai' not found"):
            credentials.get_credential(tx, acme, cipher, "openai")
        with pytest.raises(NotFoundError, match="credential 'openai' not found"):
            credentials.delete_credential(tx, acme, "openai")
        assert credentials.list_credential_names(tx, acme) == []
        credentials.put_credential(tx, acme, cipher, "openai", b"mine")  # a separate row
    with db.transaction() as tx:
        assert credentials.get_credential(tx, globex, cipher, "openai") == b"theirs"
    assert count(db, "org_credentials") == 2


def test_the_cipher_takes_a_32_byte_key_and_hides_it() -> None:
    cipher = CredentialCipher(KEY)
    assert CredentialCipher(KEY).decrypt("o", *cipher.encrypt("o", b"s")) == b"s"
    assert "key hidden" in repr(cipher) and KEY.hex() not in repr(cipher)
    with pytest.raises(CredentialKeyError, match="must be 32 bytes"):
        CredentialCipher(b"short")


def test_credentials_are_listed_with_their_dates_per_organization_never_the_secret(
        db: Database, cipher: CredentialCipher) -> None:
    acme, globex = make_tenant(db, "acme").scope, make_tenant(db, "globex").scope
    with db.transaction() as tx:
        credentials.put_credential(tx, acme, cipher, "openai", b"sk-a")
        credentials.put_credential(tx, acme, cipher, "anthropic", b"sk-b")
        credentials.put_credential(tx, globex, cipher, "theirs", b"sk-c")
    with db.transaction(write=False) as tx:
        listed = credentials.list_credentials(tx, acme)
        assert [info.name for info in listed] == ["anthropic", "openai"]
        assert all(info.created_at.endswith("Z") and info.rotated_at is None for info in listed)
        assert credentials.credential_info(tx, acme, "openai") == listed[1]
        assert "sk-" not in repr(listed)
        with pytest.raises(NotFoundError):
            credentials.credential_info(tx, acme, "theirs")  # another organization's: as if missing
    with db.transaction() as tx:
        credentials.put_credential(tx, acme, cipher, "openai", b"sk-rotated")
        rotated = credentials.credential_info(tx, acme, "openai")
        assert rotated.created_at == listed[1].created_at  # the name keeps its first date
        assert rotated.rotated_at is not None and rotated.rotated_at >= rotated.created_at
        assert credentials.credential_info(tx, acme, "anthropic").rotated_at is None


@pytest.mark.parametrize(("name", "ok"), [("openai", True), ("openai-prod-2", True), ("a" * 63, True),
                                          ("", False), ("a" * 64, False), ("Open", False), ("a--b", False),
                                          ("-a", False), ("a b", False), (3, False)])
def test_a_credential_name_is_a_slug(name: object, ok: bool) -> None:
    assert (credentials.name_problem(name) is None) is ok
