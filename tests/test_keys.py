"""The keys: the credentials key and the signing secret, from a setting or a key file, and the one key-file
policy (created 0600 once where a key may be made, only read where it may not, refused when open to others)."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.keys import (
    credentials_cipher,
    default_key_file,
    load_or_create_key_file,
    read_key_file,
    signing_secret,
)
from agentfy.settings import Settings
from agentfy.store.repos.credentials import CredentialCipher, CredentialKeyError

KEY = bytes(range(32))
ENCODED = base64.b64encode(KEY).decode()
POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


def _decrypts_with(cipher: CredentialCipher | None, key: bytes) -> bool:
    assert cipher is not None
    return cipher.decrypt("o", *CredentialCipher(key).encrypt("o", b"s")) == b"s"


def test_key_files_are_per_database() -> None:
    one = default_key_file("sqlite:///var/one.db", "signing")
    two = default_key_file("sqlite:///var/two.db", "signing")
    assert one == Path("var/one.signing.key") and two == Path("var/two.signing.key")
    assert default_key_file("postgresql+psycopg://u@db.example:5433/prod", "credentials") == Path(
        "var/keys/db.example-5433-prod.credentials.key")


@POSIX_ONLY
@pytest.mark.parametrize("kind", ["credentials", "signing"])
def test_a_key_file_is_created_0600_once_reused_and_refused_when_open_to_others(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "var" / f"{kind}.key"
    key = load_or_create_key_file(path, kind)  # type: ignore[arg-type]
    assert len(key) == 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert load_or_create_key_file(path, kind) == key == read_key_file(path, kind)  # type: ignore[arg-type]
    path.chmod(0o644)
    for load in (load_or_create_key_file, read_key_file):
        with pytest.raises(CredentialKeyError, match=f"{kind} key file .* has mode 0644; .*chmod 600"):
            load(path, kind)  # type: ignore[arg-type]


def test_reading_a_key_file_never_creates_one(tmp_path: Path) -> None:
    with pytest.raises(CredentialKeyError, match="does not exist"):
        read_key_file(tmp_path / "missing.key", "credentials")
    assert not (tmp_path / "missing.key").exists()


def test_a_key_file_must_hold_the_base64_of_32_bytes(tmp_path: Path) -> None:
    path = tmp_path / "bad.key"
    for text, message in (("not base64!", "not valid base64"), (base64.b64encode(bytes(16)).decode(), "decodes to 16")):
        path.write_text(text)
        path.chmod(0o600)
        with pytest.raises(CredentialKeyError, match=message):
            read_key_file(path, "credentials")


def test_the_credentials_key_setting_wins_and_is_checked(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    assert _decrypts_with(credentials_cipher(Settings(credentials_key=SecretStr(ENCODED)), url, create=True,
                                             required=True), KEY)
    assert not (tmp_path / "a.credentials.key").exists()
    with pytest.raises(CredentialKeyError, match=r"credentials_key setting \(\$AGENTFY_CREDENTIALS_KEY\) is not valid"):
        credentials_cipher(Settings(credentials_key=SecretStr("nope!")), url, create=True, required=True)


def test_an_embedded_database_has_its_own_key_file_made_only_where_allowed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    assert credentials_cipher(Settings(), url, create=False, required=False) is None  # the cutover: read only
    assert not (tmp_path / "a.credentials.key").exists()
    made = credentials_cipher(Settings(), url, create=True, required=True)
    key = read_key_file(tmp_path / "a.credentials.key", "credentials")
    assert _decrypts_with(made, key)
    assert _decrypts_with(credentials_cipher(Settings(), url, create=False, required=False), key)


def test_a_server_database_needs_the_key_set() -> None:
    url = "postgresql+psycopg://u@db.example/prod"
    assert credentials_cipher(Settings(), url, create=True, required=False) is None
    with pytest.raises(CredentialKeyError, match="set AGENTFY_CREDENTIALS_KEY"):
        credentials_cipher(Settings(), url, create=True, required=True)


def test_the_signing_secret_is_the_setting_else_a_key_file(tmp_path: Path) -> None:
    assert signing_secret(Settings(signing_key=SecretStr(base64.b64encode(b"k" * 40).decode()))) == b"k" * 40
    with pytest.raises(ValueError, match="is not base64"):
        signing_secret(Settings(signing_key=SecretStr("nope!")))
    with pytest.raises(ValueError, match="at least 32 bytes, not 16"):
        signing_secret(Settings(signing_key=SecretStr(base64.b64encode(bytes(16)).decode())))
    secret = signing_secret(Settings(database_url=f"sqlite:///{tmp_path / 'a.db'}"))
    assert secret == read_key_file(tmp_path / "a.signing.key", "signing")
    assert signing_secret(Settings(signing_key_file=tmp_path / "a.signing.key")) == secret


@POSIX_ONLY
def test_the_cutover_refuses_a_key_file_open_to_others(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTFY_CREDENTIALS_KEY", raising=False)
    key_file = tmp_path / "credentials.key"
    key_file.write_text(ENCODED)
    key_file.chmod(0o640)
    result = CliRunner().invoke(app, ["cutover", "run", "--database-url", f"sqlite:///{tmp_path / 'a.db'}",
                                      "--credentials-key-file", str(key_file)])
    assert result.exit_code == 2, result.output
    assert "has mode 0640" in " ".join(result.stderr.split())
