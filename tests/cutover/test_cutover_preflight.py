"""What the cutover checks before it writes anything, on SQLite and PostgreSQL: the command never changes the
database before its checks pass (a dry run included), a wrong credentials key is found before the backup,
and references that already dangle are reported as pre-existing, up front."""

from __future__ import annotations

import base64
import hashlib
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentfy.cli import app
from agentfy.cutover.errors import CutoverError, CutoverRefusedError
from agentfy.cutover.run import CutoverOptions, NullProgress, run_cutover
from agentfy.store.db import Database
from agentfy.store.repos.credentials import KEY_ENV, CredentialCipher
from tests.cutover.test_cutover_run import CIPHER, alone, execute, fingerprint, generate, scalar

runner = CliRunner()


def file_state(path: Path) -> tuple[str, list[str]]:
    """The file's bytes (as a digest) and the files beside it: what "the file did not change" means."""
    return hashlib.sha256(path.read_bytes()).hexdigest(), sorted(p.name for p in path.parent.iterdir())


# -- the command changes nothing before its checks pass --------------------------------------------------------
@pytest.mark.parametrize("dry_run", [True, False])
def test_a_refused_command_leaves_the_database_untouched(db: Database, db_url: str, tmp_path: Path,
                                                         dry_run: bool) -> None:
    """SQLite: a rollback-journal database stays one (the cutover needs WAL and says so instead of switching
    it). Both engines: a database behind the migrations is refused without being migrated or written."""
    generate(db)
    command = ["cutover", "run", "--database-url", db_url, "--backup", str(tmp_path / "backups" / "b")]
    command += ["--dry-run"] if dry_run else []
    (tmp_path / "backups").mkdir()
    if db.dialect == "sqlite":
        path = Path(db.engine.url.database or "")
        alone(db)
        with sqlite3.connect(path) as connection:
            connection.execute("PRAGMA journal_mode = DELETE")
        before = file_state(path)
        result = runner.invoke(app, command)
        assert result.exit_code == 1, result.output
        assert "journal mode 'delete'" in result.stderr and "WAL" in result.stderr
        assert file_state(path) == before  # not switched to WAL, no -wal or -shm beside it
        with sqlite3.connect(path) as connection:
            assert connection.execute("PRAGMA journal_mode").fetchone() == ("delete",)
            connection.execute("PRAGMA journal_mode = WAL")
    head = scalar(db, "SELECT version_num FROM alembic_version")
    execute(db, "UPDATE alembic_version SET version_num = '0001'")
    before_rows = fingerprint(db)
    alone(db)
    result = runner.invoke(app, command)
    assert result.exit_code == 1, result.output
    assert "schema revision 0001" in result.stderr and "agentfy db upgrade" in result.stderr
    assert fingerprint(db) == before_rows
    assert scalar(db, "SELECT version_num FROM alembic_version") == "0001"
    assert list((tmp_path / "backups").iterdir()) == []
    execute(db, "UPDATE alembic_version SET version_num = :head", {"head": head})


def test_a_missing_sqlite_directory_is_not_created_by_the_command(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "agentfy.db"
    result = runner.invoke(app, ["cutover", "run", "--database-url", f"sqlite:///{path}", "--dry-run"])
    assert result.exit_code == 1 and str(path) in result.stderr
    assert not path.parent.exists()


# -- the credentials key, before the backup ---------------------------------------------------------------------
def test_a_wrong_credentials_key_is_refused_before_the_backup(db: Database, db_url: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    generate(db)
    before = fingerprint(db)
    seen: list[str] = []

    class Steps(NullProgress):
        def start(self, step: str, description: str, total: int | None = None) -> None:
            seen.append(step)

    alone(db)
    with pytest.raises(CutoverError, match="does not decrypt with its owner ID and the given key") as failed:
        run_cutover(db.url, CutoverOptions(backup=tmp_path / "b", cipher=CredentialCipher(
            CredentialCipher.generate_key())), Steps())
    assert "nothing was backed up" in str(failed.value)
    assert "backup" not in seen and seen[-1] == "plan"
    assert not (tmp_path / "b").exists() and fingerprint(db) == before

    monkeypatch.delenv(KEY_ENV, raising=False)
    key_file = tmp_path / "wrong.key"
    key_file.write_text(base64.b64encode(CredentialCipher.generate_key()).decode("ascii"))
    key_file.chmod(0o600)  # a key file readable by others is refused
    alone(db)
    result = runner.invoke(app, ["cutover", "run", "--database-url", db_url, "--backup", str(tmp_path / "c"),
                                 "--credentials-key-file", str(key_file)])
    assert result.exit_code == 1 and "does not decrypt" in result.stderr
    assert not (tmp_path / "c").exists() and fingerprint(db) == before


# -- references that already dangle -------------------------------------------------------------------------------
def test_a_pre_existing_dangling_reference_is_refused_up_front(db: Database, tmp_path: Path) -> None:
    generate(db)
    missing = "9e9e9e9e-0000-4000-8000-000000000001"
    insert = ("INSERT INTO org_members (id, org_id, user_id, role, created_at) VALUES "
              f"('8d8d8d8d-0000-4000-8000-000000000002', '{missing}', (SELECT min(id) FROM users), 'owner', 'now')")
    if db.dialect == "sqlite":  # a writer with foreign keys off (SQLite's default for a raw connection)
        alone(db)
        with sqlite3.connect(Path(db.engine.url.database or "")) as connection:
            connection.execute(insert)
    else:  # triggers off: what a restore with session_replication_role = replica can leave
        with db.transaction() as tx:
            tx.execute("SET LOCAL session_replication_role = replica")
            tx.execute(insert)
    before = fingerprint(db)
    seen: list[str] = []

    class Steps(NullProgress):
        def start(self, step: str, description: str, total: int | None = None) -> None:
            seen.append(step)

    alone(db)
    with pytest.raises(CutoverRefusedError) as refused:
        run_cutover(db.url, CutoverOptions(backup=tmp_path / "b", cipher=CIPHER), Steps())
    message = str(refused.value)
    assert "already has foreign-key references that point at no row, from before the cutover" in message
    assert f"org_members.org_id = '{missing}' (no organizations row)" in message
    assert seen == ["lock"] and not (tmp_path / "b").exists() and fingerprint(db) == before
