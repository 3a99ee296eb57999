"""``agentfy cutover run``: every legacy identity to its canonical ID, in one verified transaction.

``docs/cutover.md`` is the operator's guide and states the contract.  The run is a fixed sequence of steps
(:data:`STEPS`), all inside one transaction on one connection, so a failure or a kill at any step leaves the
database exactly as it was:

1. ``lock`` — become the only writer (see :mod:`agentfy.cutover.engines`); count every table's rows.
2. ``plan`` — stream every entity table's primary keys and decide each one's new ID: a bare UUID gets a
   freshly minted canonical ID (the platform organization's gets ``org-silver-days-zxy8s9bpp6hp``), a
   retired prefix is swapped keeping the tail, anything canonical (or Agentfy's three-word legacy format)
   stays.  The decisions go into a temporary mapping table, never a Python list.  A minted ID that collides
   is minted again; a swapped one that collides aborts.  Nothing to translate: the run stops here and says
   it changed zero identities.
3. ``scan`` — every text column that is not a known reference, history or user content is searched for
   the IDs being translated; one found aborts (it would be left dangling).
4. ``backup``, ``restore-check`` — the exact starting state is backed up, restored (PostgreSQL: into a scratch
   database; SQLite: the backup file itself, integrity-checked) and compared table by table (PostgreSQL: row
   count and checksum; SQLite: the schema, row counts, and every row value by value); any mismatch aborts
   before a row is written.
5. ``credentials`` — each secret of a translated organization is decrypted with the old ID as associated
   data and encrypted again with the new one; one that does not decrypt aborts.
6. ``json`` — IDs inside JSON documents, value by value; a translated ID inside a longer string (or in a
   document that is not JSON) aborts, as one in an undeclared column does (searched here, not in ``scan``,
   so that each document is parsed once).
7. ``ids`` — primary keys, foreign keys and references without one: one ``UPDATE … FROM`` per column.
8. ``revoke`` — the signing epoch is bumped: every signed context issued so far stops working.
9. ``hops`` — one ``id_migrations`` row per changed identity, so old IDs resolve to the current ones.
10. ``check`` — foreign keys hold, no translated ID is left anywhere, row counts are unchanged, soft
    references dangle no more than before, every secret decrypts, every hop resolves.
11. ``commit`` — or, with ``dry_run``, roll back: the database is left identical.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import signal
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Any, Final, Protocol

from agentfy.cutover.engines import (
    MAP_TABLE,
    CutoverEngine,
    keyset_pages,
    open_engine,
    quote,
    scratch_directory_prefix,
)
from agentfy.cutover.errors import (
    BackupError,
    CutoverError,
    CutoverRefusedError,
    IdConflictError,
    PostCheckError,
    UnknownReferenceError,
)
from agentfy.cutover.hops import MAX_HOPS
from agentfy.cutover.references import ENTITY_TABLES, LEGACY_SHAPED, JsonColumn, References, discover
from agentfy.cutover.shapes import is_bare_uuid, is_nil_uuid, renamed, stays
from agentfy.ids import NIL_UUID, RandomSource, format_id
from agentfy.ids.registry import MODEL_BY_PREFIX
from agentfy.store.db import now
from agentfy.store.repos.credentials import CredentialCipher, CredentialDecryptionError
from agentfy.store.repos.orgs import PLATFORM_ORG_ID
from agentfy.store.schema import metadata

STEPS: Final = ("lock", "plan", "scan", "backup", "restore-check", "credentials", "json", "ids", "revoke",
                "hops", "check", "commit")
#: The platform organization of a fresh legacy database (its canonical ID is ``PLATFORM_ORG_ID``).
PLATFORM_LEGACY_UUID: Final = "0193a5b0-7000-7000-8000-000000000001"
MINTED: Final = "minted"
FIXED: Final = "fixed"
RENAMED: Final = "renamed"
#: ``how`` of a mapping row that an earlier run recorded (not an identity this run changes).
EARLIER: Final = ""
#: Attempts at minting a unique ID for one identity before giving up (a collision is ~1 in 2^60).
MAX_MINT_ATTEMPTS: Final = 8


class Progress(Protocol):
    """What the run reports while it works (the CLI draws it with Rich; tests may record or interrupt)."""

    def start(self, step: str, description: str, total: int | None = None) -> None:
        """A step begins; ``total`` is how many rows (or bytes) it will go through, if known."""

    def advance(self, amount: int) -> None:
        """``amount`` more done in the current step."""

    def update(self, completed: int, total: int | None) -> None:
        """The current step's absolute position (backups report bytes or pages)."""


class NullProgress:
    """Reports nothing."""

    def start(self, step: str, description: str, total: int | None = None) -> None:
        pass

    def advance(self, amount: int) -> None:
        pass

    def update(self, completed: int, total: int | None) -> None:
        pass


@dataclass(frozen=True)
class CutoverOptions:
    """``backup`` is required for a real run (a dry run backs up to a temporary file when it is ``None``);
    ``cipher`` is required when a translated organization has credentials; ``random`` is for tests."""

    dry_run: bool = False
    backup: Path | None = None
    cipher: CredentialCipher | None = None
    lock_timeout_seconds: float = 5.0
    page_size: int = 10_000
    random: RandomSource | None = None


@dataclass
class CutoverReport:
    """What the run changed (or, in a dry run, would change)."""

    run_id: str
    dry_run: bool
    #: entity table -> identities translated (minted from a UUID, or a retired prefix swapped)
    identities: dict[str, int] = field(default_factory=dict)
    #: of which minted from a UUID, the platform organization's fixed ID, and retired prefixes renamed
    minted: int = 0
    fixed: int = 0
    renamed: int = 0
    #: ``table.column`` -> rows rewritten (ID columns and JSON documents alike)
    changes: dict[str, int] = field(default_factory=dict)
    credentials: int = 0
    signing_epoch: int | None = None
    hops: int = 0
    backup: Path | None = None
    #: step -> seconds it took
    seconds: dict[str, float] = field(default_factory=dict)
    #: table -> rows, as at the start (and, checked, at the end)
    row_counts: dict[str, int] = field(default_factory=dict)
    #: ``table.column`` -> values that were the nil UUID (a caller bug's placeholder, never an identity) in a
    #: reference without a foreign key: set to NULL, or, where the column cannot be NULL, left as they were
    nil_cleared: dict[str, int] = field(default_factory=dict)
    nil_kept: dict[str, int] = field(default_factory=dict)
    #: scratch directories and databases killed runs had left, removed at the start
    swept: list[str] = field(default_factory=list)

    @property
    def changed_identities(self) -> int:
        return sum(self.identities.values())

    @property
    def changed_anything(self) -> bool:
        """Whether the run rewrote (or would rewrite) any row: identities, or references alone."""
        return self.changed_identities > 0 or any(self.changes.values()) or any(self.nil_cleared.values())


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


def translate(value: str, table: str, random: RandomSource | None = None) -> tuple[str, str] | None:
    """``(new ID, how)`` for a primary key of ``table`` that needs the cutover — ``how`` is ``"minted"`` (from a
    UUID), ``"fixed"`` (the platform organization) or ``"renamed"`` (a retired prefix, the whole tail kept) —
    and ``None`` for one that stays (:mod:`agentfy.cutover.shapes` is the rule); :class:`IdConflictError` for a
    value that is neither (the cutover does not guess), the nil UUID included."""
    prefix = ENTITY_TABLES[table]
    if is_bare_uuid(value):
        if is_nil_uuid(value):
            raise IdConflictError(f"{table}.id holds the nil UUID {value!r}, which is never an identity (it marks "
                                  "a caller bug): delete or fix that row, then run the cutover again")
        if table == "organizations" and value == PLATFORM_LEGACY_UUID:
            return PLATFORM_ORG_ID, FIXED
        return format_id(prefix, random), MINTED
    new_id = renamed(value, prefix)
    if new_id is not None:
        return new_id, RENAMED
    if stays(value, prefix):
        return None
    raise IdConflictError(f"{table}.id holds {value!r}, which is neither a canonical {prefix} ID nor a legacy ID "
                          "the cutover translates (a bare lower-case UUID, or a retired prefix followed by a tail "
                          "of two words and 12 characters or three words and 20); fix or remove that row, then "
                          "run the cutover again")


class _Run:
    """One run's state; :func:`run_cutover` is the entry point."""

    def __init__(self, engine: CutoverEngine, options: CutoverOptions, progress: Progress) -> None:
        self.engine = engine
        self.options = options
        self.progress = progress
        self.report = CutoverReport(run_id=new_run_id(), dry_run=options.dry_run)
        self.references: References | None = None
        self.dangling_before: dict[str, int] = {}
        self.credentials_to_reencrypt = 0
        self.earlier_hops = 0
        self.epoch_rows_added = 0

    @contextmanager
    def step(self, name: str, description: str, total: int | None = None) -> Iterator[None]:
        self.progress.start(name, description, total)
        started = time.perf_counter()
        yield
        self.report.seconds[name] = time.perf_counter() - started

    # -- 1. lock ------------------------------------------------------------------------------------------
    def lock(self) -> None:
        tables = [table.name for table in metadata.sorted_tables]
        with self.step("lock", "taking the maintenance lock", len(tables)):
            self.engine.lock(self.options.lock_timeout_seconds)
            self.report.swept = self.engine.sweep_scratch()
            missing = sorted(set(tables) - self.engine.table_names())
            if missing:
                raise CutoverRefusedError(f"the database has no table {', '.join(missing[:3])}"
                                          f"{' …' if len(missing) > 3 else ''}: it is not migrated; run "
                                          "`agentfy db upgrade` first")
            current, head = self.engine.scalar("SELECT version_num FROM alembic_version"), _head_revision()
            if current != head:
                raise CutoverRefusedError(f"the database is at schema revision {current or '(none)'}, the newest is "
                                          f"{head}: run `agentfy db upgrade` first")
            for table in tables:
                self.report.row_counts[table] = self.engine.count(table)
                self.progress.advance(1)
            self.references = discover(self.engine.foreign_keys())
            dangling = self.engine.dangling_foreign_keys()
            if dangling:
                raise CutoverRefusedError(
                    "the database already has foreign-key references that point at no row, from before the "
                    f"cutover (it wrote nothing): {'; '.join(dangling)}. The cutover does not repair or delete "
                    "them: fix or delete those rows (on SQLite, `PRAGMA foreign_key_check` lists them all), "
                    "then run it again")

    # -- 2. plan ------------------------------------------------------------------------------------------
    def plan(self) -> None:
        engine, page_size, random = self.engine, self.options.page_size, self.options.random
        total = sum(self.report.row_counts[table] for table in ENTITY_TABLES)
        with self.step("plan", "deciding every identity's new ID", total):
            engine.create_map()
            translated: Counter[tuple[str, str]] = Counter()  # (table, how) -> identities
            for table in ENTITY_TABLES:
                entity = MODEL_BY_PREFIX[ENTITY_TABLES[table]]
                for page in keyset_pages(engine, table, "id", "1", page_size=page_size):
                    rows: list[tuple[str, str, str, str, str]] = []
                    for value, _ in page:
                        decision = translate(str(value), table, random)
                        if decision is not None:
                            rows.append((str(value), decision[0], entity, table, decision[1]))
                            translated[table, decision[1]] += 1
                    engine.load_map(rows)
                    self.progress.advance(len(page))
            if shared := engine.seal_map():
                old_id, table, other = shared
                raise IdConflictError(f"{old_id} is the primary key of a row in {table} and one in {other}: a "
                                      "legacy ID must name one identity; resolve it by hand, then run the "
                                      "cutover again")
            self._resolve_collisions()  # (a re-minted ID stays "minted" in its table: the counts hold)
            self._add_recorded_hops()
            for (table, how), count in sorted(translated.items()):
                self.report.identities[table] = self.report.identities.get(table, 0) + count
                setattr(self.report, how, getattr(self.report, how) + count)
            self._count_nil_references()
            self.credentials_to_reencrypt = int(engine.scalar(
                f"SELECT count(*) FROM org_credentials AS c JOIN {MAP_TABLE} AS m ON m.old_id = c.org_id "
                f"WHERE m.how <> '{EARLIER}'"))
            if self.credentials_to_reencrypt and self.options.cipher is None:
                raise CutoverError(f"{self.credentials_to_reencrypt} credential(s) belong to organizations whose ID "
                                   "changes and must be encrypted again: give the credentials key "
                                   "($AGENTFY_CREDENTIALS_KEY or --credentials-key-file)")
            if self.credentials_to_reencrypt:
                self._verify_credentials_key()

    def _verify_credentials_key(self) -> None:
        """Decrypt one stored secret that will be encrypted again: a wrong key is found here, before the
        backup and its restore check (minutes on a large database), not after them."""
        cipher = self.options.cipher
        assert cipher is not None
        row = self.engine.query(f"SELECT c.id, c.org_id, c.nonce, c.ciphertext FROM org_credentials AS c JOIN "
                                f"{MAP_TABLE} AS m ON m.old_id = c.org_id WHERE m.how <> '{EARLIER}' "
                                "ORDER BY c.id LIMIT 1")
        credential_id, owner, nonce, ciphertext = row[0]
        try:
            cipher.decrypt(str(owner), nonce, ciphertext)
        except CredentialDecryptionError:
            raise CutoverError(f"credential {credential_id} of organization {owner} does not decrypt with its owner "
                               "ID and the given key: wrong key, or the row was altered; checked before the backup, "
                               "nothing was backed up or changed") from None

    def _count_nil_references(self) -> None:
        """Count the nil UUIDs in references without a foreign key, one pass per table.  They are no
        identity: never looked up in the mapping; the ``ids`` step sets them to NULL (as the telemetry
        path treats a missing ID) where the column allows it, and the report lists them either way."""
        assert self.references is not None
        by_table: dict[str, list[str]] = {}
        for column in self.references.id_columns:
            if column.kind in ("soft reference", "declared"):
                by_table.setdefault(column.table, []).append(column.column)
        for table, names in by_table.items():
            sums = ", ".join(f"coalesce(sum(CASE WHEN {quote(name)} = ? THEN 1 ELSE 0 END), 0)" for name in names)
            found = self.engine.query(f"SELECT {sums} FROM {quote(table)}", (NIL_UUID,) * len(names))[0]
            for name, count in zip(names, found, strict=True):
                if int(count):
                    nullable = metadata.tables[table].c[name].nullable
                    target = self.report.nil_cleared if nullable else self.report.nil_kept
                    target[f"{table}.{name}"] = int(count)

    def _add_recorded_hops(self) -> None:
        """Put every earlier run's hops into the mapping too (``how`` empty: not an identity of this run),
        each pointing at the ID its identity has *now* — the recorded chain followed to its end, then this
        run's own translation — so an old ID written after an earlier cutover (by anything but the API, which
        refuses it) is rewritten wherever it is, like the identities this run changes.  A live primary key
        that the record says was migrated already means the database is inconsistent: refused."""
        engine = self.engine
        clash = engine.query(f"SELECT m.old_id FROM {MAP_TABLE} AS m JOIN id_migrations AS h ON h.old_id = m.old_id "
                             "LIMIT 1")
        if clash:
            raise IdConflictError(f"{clash[0][0]} is a live ID but the record already says it was migrated; the "
                                  "database is inconsistent: restore the last backup")
        self.earlier_hops = engine.execute(
            f"INSERT INTO {MAP_TABLE} (old_id, new_id, entity, tbl, how) SELECT h.old_id, h.new_id, h.entity, "
            f"'{EARLIER}', '{EARLIER}' FROM id_migrations AS h")
        if not self.earlier_hops:
            return
        for _ in range(MAX_HOPS):
            if not engine.execute(f"UPDATE {MAP_TABLE} SET new_id = h.new_id FROM id_migrations AS h WHERE "
                                  f"{MAP_TABLE}.how = '{EARLIER}' AND h.old_id = {MAP_TABLE}.new_id"):
                break
        else:
            raise IdConflictError(f"the recorded hops (id_migrations) loop or run longer than {MAX_HOPS} steps: "
                                  "the record is corrupt; restore the last backup")
        engine.execute(f"UPDATE {MAP_TABLE} SET new_id = m.new_id FROM {MAP_TABLE} AS m WHERE "
                       f"{MAP_TABLE}.how = '{EARLIER}' AND m.old_id = {MAP_TABLE}.new_id AND m.how <> '{EARLIER}'")

    def has_stale_references(self) -> bool:
        """Whether a reference or a JSON document still holds an ID an earlier run changed (a primary key
        cannot: :meth:`_add_recorded_hops` refuses that)."""
        assert self.references is not None
        if not self.earlier_hops:
            return False
        for column in self.references.id_columns:
            if column.kind != "primary key" and self.engine.query(
                    f"SELECT 1 FROM {quote(column.table)} AS t JOIN {MAP_TABLE} AS m "
                    f"ON m.old_id = t.{quote(column.column)} LIMIT 1"):
                return True
        return any(self._translated_in(c.table, c.column, _json_tokens) for c in self.references.json_columns)

    def _resolve_collisions(self) -> None:
        """Mint again every minted ID that equals another new ID or an existing one; a renamed (or the
        platform's fixed) ID that does aborts: there is no other choice to make for it."""
        engine = self.engine
        engine.index_map_by_new_id()
        for _ in range(MAX_MINT_ATTEMPTS):
            clashes = engine.query(
                f"SELECT old_id, tbl, how, new_id FROM {MAP_TABLE} WHERE new_id IN "
                f"(SELECT new_id FROM {MAP_TABLE} GROUP BY new_id HAVING count(*) > 1) "
                f"ORDER BY new_id, CASE WHEN how = '{MINTED}' THEN 1 ELSE 0 END, old_id")
            redo: list[tuple[str, str]] = []
            first: dict[str, str] = {}
            for old_id, table, how, new_id in clashes:
                if new_id not in first:
                    first[str(new_id)] = str(old_id)
                elif how != MINTED:
                    raise IdConflictError(f"{first[str(new_id)]} and {old_id} would both become {new_id}; resolve the "
                                          "duplicate by hand, then run the cutover again")
                else:
                    redo.append((str(old_id), str(table)))
            for table in ENTITY_TABLES:
                for old_id, how, new_id in engine.query(  # driven by the table, probing the new_id index
                        f"SELECT m.old_id, m.how, m.new_id FROM {quote(table)} AS t JOIN {MAP_TABLE} AS m "
                        f"ON m.new_id = t.id WHERE m.tbl = ? AND m.how <> '{EARLIER}'", (table,)):
                    if how != MINTED:
                        raise IdConflictError(f"{old_id} would become {new_id}, but {table} already has {new_id}; "
                                              "resolve the duplicate by hand, then run the cutover again")
                    redo.append((str(old_id), table))
            if not redo:
                return
            for old_id, table in redo:
                engine.execute(f"UPDATE {MAP_TABLE} SET new_id = ? WHERE old_id = ?",
                               (format_id(ENTITY_TABLES[table], self.options.random), old_id))
        raise IdConflictError(f"could not mint unique IDs in {MAX_MINT_ATTEMPTS} attempts: the random source "
                              "repeats itself")

    # -- 3. scan ------------------------------------------------------------------------------------------
    def scan(self) -> None:
        assert self.references is not None
        scanned = self.references.scanned
        with self.step("scan", "searching undeclared places for translated IDs", len(scanned)):
            for table, column in scanned:
                found = self._translated_in(table, column, LEGACY_SHAPED.findall)
                if found:
                    old_id, value = found
                    raise UnknownReferenceError(
                        f"{table}.{column} holds {old_id}, an ID the cutover translates (in {value[:120]!r}), but it "
                        "is not a known reference: declare the column in agentfy.cutover.references (or clear "
                        "the value), then run the cutover again")
                self.progress.advance(1)
            self.dangling_before = self._dangling_soft_references()

    def _translated_in(self, table: str, column: str,
                       tokens_of: Callable[[str], Iterable[str]]) -> tuple[str, str] | None:
        """The first ``(translated old ID, value)`` among the ``tokens_of`` each value of ``table.column``."""
        condition, params = self.engine.legacy_filter(quote(column))
        batch: dict[str, str] = {}

        def check() -> tuple[str, str] | None:
            hits = self.engine.lookup(batch)
            for token, value in batch.items():
                if token in hits:
                    return token, value
            batch.clear()
            return None

        rows = self.engine.stream(f"SELECT DISTINCT {quote(column)} FROM {quote(table)} WHERE {condition}", params)
        for (value,) in rows:
            text = str(value)
            for token in tokens_of(text):
                batch.setdefault(token, text)
            if len(batch) >= self.options.page_size:
                hit = check()
                if hit:
                    _close(rows)
                    return hit
        return check() if batch else None

    def _dangling_soft_references(self) -> dict[str, int]:
        """``table.column`` -> how many values of each soft reference point at no row."""
        counts: dict[str, int] = {}
        for table in metadata.sorted_tables:
            for column in table.columns:
                target = column.info.get("references")
                if target:
                    target_table, target_column = str(target).split(".")
                    counts[f"{table.name}.{column.name}"] = int(self.engine.scalar(
                        f"SELECT count(*) FROM {quote(table.name)} AS s WHERE s.{quote(column.name)} IS NOT NULL "
                        f"AND NOT EXISTS (SELECT 1 FROM {quote(target_table)} AS t "
                        f"WHERE t.{quote(target_column)} = s.{quote(column.name)})"))
        return counts

    # -- 4. backup and restore check ----------------------------------------------------------------------
    def backup(self, path: Path) -> None:
        with self.step("backup", f"backing up to {path}"):
            self.engine.backup(path, self.progress.update)
        self.report.backup = path
        tables = [table.name for table in metadata.sorted_tables]
        with self.step("restore-check", "restoring the backup and comparing it with the database",
                       len(tables)):
            difference = self.engine.verify_backup(path, tables, self.progress.update)
            if difference is not None:
                raise BackupError(f"the restored backup {path} does not match the database: {difference}; nothing "
                                  "was changed")

    # -- 5. credentials -----------------------------------------------------------------------------------
    def credentials(self) -> None:
        with self.step("credentials", "encrypting credentials for their new owner IDs",
                       self.credentials_to_reencrypt):
            if not self.credentials_to_reencrypt:
                return
            cipher = self.options.cipher
            assert cipher is not None
            done = 0
            columns = "c2.org_id, c2.nonce, c2.ciphertext, m.new_id"
            joins = f" AS c2 JOIN {MAP_TABLE} AS m ON m.old_id = c2.org_id"
            for page in keyset_pages(self.engine, "org_credentials", "id", columns, page_size=self.options.page_size,
                                     joins=joins):
                updates: list[tuple[bytes, bytes, str]] = []
                for credential_id, old_owner, nonce, ciphertext, new_owner in page:
                    try:
                        secret = cipher.decrypt(str(old_owner), nonce, ciphertext)
                    except CredentialDecryptionError:
                        raise CutoverError(f"credential {credential_id} of organization {old_owner} does not decrypt "
                                           "with its owner ID and the given key: wrong key, or the row was altered; "
                                           "nothing was changed") from None
                    new_nonce, new_ciphertext = cipher.encrypt(str(new_owner), secret)
                    updates.append((new_nonce, new_ciphertext, str(credential_id)))
                self.engine.executemany("UPDATE org_credentials SET nonce = ?, ciphertext = ? WHERE id = ?", updates)
                done += len(updates)
                self.progress.advance(len(updates))
            self.report.credentials = done

    # -- 6. JSON documents --------------------------------------------------------------------------------
    def json_documents(self) -> None:
        assert self.references is not None
        columns = self.references.json_columns
        total = sum(self.report.row_counts[c.table] for c in columns)
        with self.step("json", "rewriting IDs inside JSON documents", total):
            for column in columns:
                changed = self._rewrite_json(column)
                self.report.changes[column.name] = changed
                self.progress.advance(self.report.row_counts[column.table])

    def _rewrite_json(self, column: JsonColumn) -> int:
        condition, params = self.engine.legacy_filter(quote(column.column))
        changed = 0
        page_key = self.engine.page_key(column.key)
        for page in keyset_pages(self.engine, column.table, page_key, f"{quote(column.key)}, {quote(column.column)}",
                                 where=condition, params=params, page_size=self.options.page_size):
            documents: list[tuple[Any, str]] = []
            tokens: set[str] = set()
            # Legacy-shaped values that are not whole string values: a translated one among them is a
            # reference the rewrite cannot follow (a link, a quotation, a document that is not JSON).
            embedded: dict[str, tuple[Any, str]] = {}
            for row_key, key, value in page:
                text = str(value)
                found = _json_ids(text)
                if found is None:
                    for token in LEGACY_SHAPED.findall(text):
                        embedded.setdefault(token, (key, "is not valid JSON but holds"))
                    continue
                for token in LEGACY_SHAPED.findall(text):
                    if token not in found:
                        embedded.setdefault(token, (key, "holds, inside a longer string,"))
                if found:
                    documents.append((row_key, text))
                    tokens.update(found)
            mapping = self.engine.lookup(tokens | embedded.keys()) if tokens or embedded else {}
            for token, (key, where) in embedded.items():
                if token in mapping:
                    raise UnknownReferenceError(
                        f"{column.name} of row {key} {where} {token}, an ID the cutover translates; only whole "
                        "string values of a JSON document are references: fix the document, then run the cutover "
                        "again")
            if not mapping:
                continue
            updates: list[tuple[str, Any]] = []
            for key, text in documents:
                rewritten = rewrite_json_text(text, mapping, legacy_only=True)
                if rewritten is not None:
                    updates.append((key, rewritten))
            self.engine.update_by_key(column.table, page_key, column.column, updates)
            changed += len(updates)
        return changed

    # -- 7. ID columns ------------------------------------------------------------------------------------
    def ids(self) -> None:
        assert self.references is not None
        columns = self.references.id_columns
        total = sum(self.report.row_counts[c.table] for c in columns)
        with self.step("ids", "rewriting primary keys and references", total):
            self.engine.suspend_foreign_keys()
            for name in self.report.nil_cleared:
                table, column_name = name.split(".")
                self.engine.execute(f"UPDATE {quote(table)} SET {quote(column_name)} = NULL "
                                    f"WHERE {quote(column_name)} = ?", (NIL_UUID,))
            for column in columns:
                self.report.changes[column.name] = self.engine.execute(
                    f"UPDATE {quote(column.table)} SET {quote(column.column)} = m.new_id FROM {MAP_TABLE} AS m "
                    f"WHERE {quote(column.table)}.{quote(column.column)} = m.old_id")
                self.progress.advance(self.report.row_counts[column.table])

    # -- 8. revoke ----------------------------------------------------------------------------------------
    def revoke(self) -> None:
        with self.step("revoke", "revoking every signed context (signing epoch)", 1):
            current = self.engine.scalar("SELECT value FROM platform_settings WHERE name = 'signing_epoch'")
            epoch = int(current or 0) + 1
            self.epoch_rows_added = 0 if current is not None else 1
            self.engine.execute("INSERT INTO platform_settings (name, value) VALUES ('signing_epoch', ?) "
                                "ON CONFLICT (name) DO UPDATE SET value = excluded.value", (str(epoch),))
            self.report.signing_epoch = epoch
            self.progress.advance(1)

    # -- 9. hops ------------------------------------------------------------------------------------------
    def hops(self) -> None:
        with self.step("hops", "recording one hop per changed identity", self.report.changed_identities):
            self.report.hops = self.engine.execute(
                "INSERT INTO id_migrations (old_id, new_id, entity, run_id, migrated_at) "
                f"SELECT old_id, new_id, entity, ?, ? FROM {MAP_TABLE} WHERE how <> '{EARLIER}'",
                (self.report.run_id, now()))
            self.progress.advance(self.report.hops)

    # -- 10. checks ---------------------------------------------------------------------------------------
    def check(self) -> None:
        assert self.references is not None
        engine, references = self.engine, self.references
        tables = [table.name for table in metadata.sorted_tables]
        total = len(references.id_columns) + len(references.json_columns) + len(tables) + 3
        with self.step("check", "checking before COMMIT", total):
            engine.check_foreign_keys()
            self.progress.advance(1)
            self._check_nothing_left(references)
            for json_column in references.json_columns:
                found = self._translated_in(json_column.table, json_column.column, _json_tokens)
                if found:
                    raise PostCheckError(f"{found[0]} left in {json_column.name}")
                self.progress.advance(1)
            added = {"id_migrations": self.report.hops, "platform_settings": self.epoch_rows_added}
            for table in tables:
                expected = self.report.row_counts[table] + added.get(table, 0)
                if (count := engine.count(table)) != expected:
                    raise PostCheckError(f"{table} had {self.report.row_counts[table]} rows, should have {expected} "
                                         f"and has {count}")
                self.progress.advance(1)
            dangling = self._dangling_soft_references()
            for name, before in self.dangling_before.items():
                if dangling.get(name, 0) > before:
                    raise PostCheckError(f"{name} has {dangling[name]} dangling values, {before} before the rewrite")
            self._check_credentials()
            self._check_hops()
            self.progress.advance(3)

    def _check_nothing_left(self, references: References) -> None:
        """No ID column holds a translated ID.  PostgreSQL: one pass per table probing the mapping's key (a
        join per column hashed the whole mapping table each time: 134 s at 40k organizations); SQLite: one
        join per column, which its planner runs faster than the per-table probe (121 s against 181 s at
        100k organizations)."""
        engine = self.engine
        if engine.dialect == "sqlite":
            for column in references.id_columns:
                left = int(engine.scalar(f"SELECT count(*) FROM {quote(column.table)} AS t JOIN {MAP_TABLE} AS m "
                                         f"ON t.{quote(column.column)} = m.old_id"))
                if left:
                    raise PostCheckError(f"{left} translated ID(s) left in {column.name}")
                self.progress.advance(1)
            return
        by_table: dict[str, list[str]] = {}
        for column in references.id_columns:
            by_table.setdefault(column.table, []).append(column.column)
        for table, names in by_table.items():
            values = ", ".join(f"t.{quote(name)}" for name in names)
            found = engine.query(f"SELECT {values} FROM {quote(table)} AS t WHERE EXISTS (SELECT 1 FROM {MAP_TABLE} "
                                 f"AS m WHERE m.old_id IN ({values})) LIMIT 1")
            if found:
                raise PostCheckError(f"a translated ID is left in {table} ({', '.join(names)}): {found[0]}")
            self.progress.advance(len(names))

    def _check_credentials(self) -> None:
        cipher = self.options.cipher
        if cipher is None:
            return
        for credential_id, owner, nonce, ciphertext in self.engine.stream(
                "SELECT id, org_id, nonce, ciphertext FROM org_credentials"):
            try:
                cipher.decrypt(str(owner), nonce, ciphertext)
            except CredentialDecryptionError:
                raise PostCheckError(f"credential {credential_id} does not decrypt for its owner {owner}") from None

    def _check_hops(self) -> None:
        # Each hop as recorded: old ID, new ID and entity.  ``m.entity`` is in no index of the mapping, so
        # SQLite reads the mapping itself, in old_id order, and probes the hops' key in that order too
        # (through the new_id index the probes were random: 55 s instead of 4 s at 100k organizations).
        unrecorded = int(self.engine.scalar(
            f"SELECT count(*) FROM {MAP_TABLE} AS m LEFT JOIN id_migrations AS h ON h.old_id = m.old_id "
            f"AND h.new_id = m.new_id AND h.entity = m.entity WHERE h.old_id IS NULL AND m.how <> '{EARLIER}'"))
        if unrecorded:
            raise PostCheckError(f"{unrecorded} changed identities have no recorded hop")
        for table, expected in self.report.identities.items():
            resolved = int(self.engine.scalar(  # driven by the table, probing the new_id index (covering on SQLite)
                f"SELECT count(*) FROM {quote(table)} AS t JOIN {MAP_TABLE} AS m ON m.new_id = t.id WHERE m.tbl = ? "
                f"AND m.how <> '{EARLIER}'",
                (table,)))
            if resolved != expected:
                raise PostCheckError(f"{expected - resolved} hop(s) of {table} do not resolve to a {table} row")


def _head_revision() -> str | None:
    """The newest migration, read from the migration scripts (no database connection)."""
    from alembic.script import ScriptDirectory  # noqa: PLC0415 - only the lock step needs Alembic

    from agentfy.store.migrate import alembic_config  # noqa: PLC0415

    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


def _json_tokens(text: str) -> Iterable[str]:
    found = _json_ids(text)
    return LEGACY_SHAPED.findall(text) if found is None else found


def _json_ids(text: str) -> set[str] | None:
    """Every string value and key of the JSON document ``text`` that is shaped like a legacy ID; ``None`` if
    ``text`` is not JSON.  Without a backslash in the text they are found by :data:`_LEGACY_STRING`, in C,
    instead of by walking the parsed document (which is then only parsed to know that it is valid)."""
    try:
        document = json.loads(text)
    except ValueError:
        return None
    if "\\" in text:
        return set(_strings(document))
    return set(_LEGACY_STRING.findall(text))


def _strings(node: Any) -> Iterator[str]:
    """Every string value and key of a JSON document that is shaped like a legacy ID."""
    if isinstance(node, str):
        if LEGACY_SHAPED.fullmatch(node):
            yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            if LEGACY_SHAPED.fullmatch(key):
                yield key
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


#: A JSON string token (a key or a value).  Outside strings JSON has no ``"``, so in a valid document the
#: matches, taken from the start, are exactly its string tokens.
_JSON_STRING: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
#: A JSON string token whose value is shaped like a legacy ID, written without escapes.  In a valid
#: document without a backslash every ``"`` opens or closes a string token, and between two tokens there
#: is a ``:`` or a ``,``, which a legacy-shaped value never holds: so every match, wherever it starts, is
#: exactly one string token (a key or a value), and the matches are all such tokens.
_LEGACY_STRING: Final = re.compile(f'"({LEGACY_SHAPED.pattern})"')


#: ``json.dumps`` of a string without its per-call overhead (the same C function, the same output).
_json_string: Final = encode_basestring_ascii


def rewrite_json_text(text: str, mapping: dict[str, str], *, legacy_only: bool = False) -> str | None:
    """``text`` (a valid JSON document) with every string token — key or value — whose decoded value the
    mapping translates replaced by the new ID, and every other byte kept (indentation, key order, ``\\u``
    escapes); ``None`` if nothing is translated.  Re-serialising the parsed document instead would lose
    the formatting and turn escapes into raw characters: the document would change beyond its IDs.

    ``legacy_only``: the mapping translates only legacy-shaped values, so a document without a backslash
    is searched for :data:`_LEGACY_STRING` tokens alone, not every string token (the same result)."""
    if legacy_only and "\\" not in text:

        def replace(match: re.Match[str]) -> str:
            new_id = mapping.get(match[1])
            return match[0] if new_id is None else _json_string(new_id)

        rewritten = _LEGACY_STRING.sub(replace, text)
        return None if rewritten == text else rewritten
    pieces: list[str] = []
    last = 0
    for match in _JSON_STRING.finditer(text):
        token = match.group()
        value = json.loads(token) if "\\" in token else token[1:-1]
        new_id = mapping.get(value)
        if new_id is not None:
            pieces += [text[last:match.start()], _json_string(new_id)]
            last = match.end()
    if not pieces:
        return None
    pieces.append(text[last:])
    return "".join(pieces)


def _close(rows: Iterator[Any]) -> None:
    close = getattr(rows, "close", None)
    if close is not None:
        close()


class CutoverInterruptedError(CutoverError):
    """SIGTERM or SIGHUP arrived: the run stopped, rolled back and cleaned up like any failure."""


@contextmanager
def _signals_end_the_run() -> Iterator[None]:
    """Turn SIGTERM and SIGHUP into an exception for the duration (main thread only), so that every exit
    path — a signal included — rolls back, lifts the fence, kills ``pg_dump``/``pg_restore`` and removes
    scratch copies.  (SIGINT already raises ``KeyboardInterrupt``; SIGKILL cannot be caught: children die
    with the process, and the next run sweeps the scratch and lifts the fence.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(number: int, _frame: object) -> None:
        raise CutoverInterruptedError(f"stopped by {signal.Signals(number).name}; rolled back")

    previous = {number: signal.signal(number, stop) for number in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def run_cutover(url: str, options: CutoverOptions | None = None, progress: Progress | None = None) -> CutoverReport:
    """Cut the database at ``url`` over to canonical IDs (see the module's steps); the report says what
    changed.  Raises a :class:`~agentfy.cutover.errors.CutoverError` after rolling back on any failure."""
    options = options or CutoverOptions()
    if not options.dry_run and options.backup is None:
        raise CutoverError("a backup path is required: the cutover backs up the starting state before it writes")
    with _signals_end_the_run():
        return _run_cutover(url, options, progress or NullProgress())


def _run_cutover(url: str, options: CutoverOptions, progress: Progress) -> CutoverReport:
    engine = open_engine(url, options.lock_timeout_seconds)
    run = _Run(engine, options, progress)
    scratch: Path | None = None
    try:
        run.lock()
        run.plan()
        if run.report.changed_identities == 0 and not run.report.nil_cleared and not run.has_stale_references():
            engine.rollback()
            return run.report
        run.scan()
        backup_path = options.backup
        if backup_path is None:
            scratch = Path(tempfile.mkdtemp(prefix=scratch_directory_prefix(engine.identity()),
                                            dir=engine.scratch_parent()))
            backup_path = scratch / "backup"
        run.backup(Path(backup_path))
        run.credentials()
        run.json_documents()
        run.ids()
        run.revoke()
        run.hops()
        run.check()
        with run.step("commit", "rolling back (dry run)" if options.dry_run else "committing", 1):
            if options.dry_run:
                engine.rollback()
            else:
                engine.commit()
            progress.advance(1)
        if scratch is not None:
            run.report.backup = None
        return run.report
    except BaseException:
        engine.rollback()
        raise
    finally:
        engine.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)
