"""A generator of legacy databases: the input the ID cutover has to translate, at any size.

Why: the cutover (``docs/cutover.md``) must handle a *fresh legacy
database* — every ID a bare lower-case UUID, the platform organization ``0193a5b0-7000-7000-8000-000000000001``
— and an *already migrated database* — canonical IDs except the four retired organization prefixes
(``organization-``, ``organization-member-``, ``organization-credential-``, ``organization-policy-``, the
tail unchanged) — and a database holding both.  Its tests need such databases, small and large, with
every kind of place an ID hides: primary keys, foreign keys, references without a foreign key, JSON
documents, telemetry, the event outbox, encryption bound to the owner's ID, and history (the audit log).

Contract of :func:`generate_legacy_database`:

* the database is migrated and holds no organization (it refuses otherwise); everything is written in one
  transaction, so a failure leaves it empty;
* the contents are a function of ``(shape, seed)`` only: IDs, names, timestamps, API keys and secrets
  come from one seeded :class:`random.Random`, so two runs give identical rows — except the credentials'
  nonces and ciphertexts, which :class:`CredentialCipher` draws from the OS (their *plaintexts* are
  identical, and recorded in the manifest);
* rows are buffered per table and written with ``executemany`` in batches of ``batch_size``; a buffer is
  flushed only after the buffers of every table it may reference (schema order), so each foreign key is
  satisfied at insert time and memory stays bounded whatever the size;
* every credential is encrypted with its *legacy* owner ID as associated data, as the legacy product did.

This module is test tooling for the cutover, not a seeding path: it never mints canonical ``org`` IDs for
the organization entities, which seeding would refuse.
"""

from __future__ import annotations

import base64
import json
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Final, Literal, TypeAlias

import sqlalchemy as sa

from agentfy.identity.roles import ROLES
from agentfy.ids import RENAMED_PREFIXES, format_id
from agentfy.store.db import Database, Tx
from agentfy.store.repos.api_keys import KEY_PREFIX as ORG_KEY_PREFIX
from agentfy.store.repos.api_keys import VISIBLE_CHARACTERS, hash_api_key
from agentfy.store.repos.credentials import CredentialCipher
from agentfy.store.repos.teams import TEAM_API_KEY_PREFIX, TEAM_API_KEY_VISIBLE_CHARS, hash_team_api_key
from agentfy.store.schema import metadata

Style: TypeAlias = Literal["uuid", "prefixed", "mixed"]
#: The style of one organization's rows ("mixed" resolves to one of these per organization).
RowStyle: TypeAlias = Literal["uuid", "prefixed"]

#: The platform organization of a fresh legacy database, and of an already migrated one.
PLATFORM_LEGACY_UUID: Final = "0193a5b0-7000-7000-8000-000000000001"
PLATFORM_PREFIXED_ID: Final = "organization-silver-days-zxy8s9bpp6hp"
#: The current prefix -> the retired one (``org`` -> ``organization``, …).
OLD_PREFIXES: Final[Mapping[str, str]] = {new: old for old, new in RENAMED_PREFIXES.items()}
#: The signing epoch a legacy platform has reached (the cutover bumps it to revoke signed contexts).
LEGACY_SIGNING_EPOCH: Final = "3"
#: Entity tables -> the canonical prefix of their primary key (the manifest's identity keys).
ENTITY_TABLES: Final[Mapping[str, str]] = {
    str(table.name): str(table.c.id.info["id_prefix"])
    for table in metadata.sorted_tables
    if "id" in table.c and table.c.id.info.get("id_prefix")
}
_BASE_TIME: Final = datetime(2025, 3, 1)  # legacy rows are older than the cutover
_TABLE_ORDER: Final[Mapping[str, int]] = {t.name: i for i, t in enumerate(metadata.sorted_tables)}


@dataclass(frozen=True)
class LegacyShape:
    """How big the legacy database is: ``organizations`` in all (the first is the platform organization),
    and per organization how many of each entity.  Counts of 0 leave the entity (and what needs it) out."""

    organizations: int = 3
    members: int = 2
    credentials: int = 1
    policies: int = 1
    agents: int = 3
    teams: int = 1
    sessions: int = 2
    messages_per_session: int = 3
    memory_documents: int = 2
    chunks_per_document: int = 2
    kg_entities: int = 3
    kg_relations: int = 2
    vault_documents: int = 1
    telemetry: int = 2
    events: int = 2
    style: Style = "uuid"

    def __post_init__(self) -> None:
        if self.organizations < 1:
            raise ValueError("a legacy database has at least the platform organization (organizations >= 1)")
        for name, value in vars(self).items():
            if isinstance(value, int) and value < 0:
                raise ValueError(f"{name} must not be negative, got {value}")
        if self.style not in ("uuid", "prefixed", "mixed"):
            raise ValueError(f"style must be 'uuid', 'prefixed' or 'mixed', got {self.style!r}")

    def style_of(self, org_index: int) -> RowStyle:
        """The style of organization ``org_index``'s rows: "mixed" alternates, the platform (0) is a UUID."""
        if self.style == "mixed":
            return "uuid" if org_index % 2 == 0 else "prefixed"
        return self.style


@dataclass(frozen=True)
class LegacyCredential:
    """A credential as generated: its owner's legacy ID (the associated data) and its secret."""

    org_id: str
    name: str
    secret: bytes = field(repr=False)


@dataclass
class LegacyManifest:
    """What was generated, for the cutover's tests.

    ``counts``: rows per table.  ``identities``: the legacy primary keys per entity table, in insertion
    order, at most ``sample_limit`` each (``identity_counts`` has the totals; the database has the rest).
    ``org_styles``: each organization's legacy ID -> its style.  ``api_keys`` / ``team_api_keys``: owner
    (organization or team legacy ID) -> the plaintext key, for login tests.  ``credentials``: credential
    legacy ID -> owner and plaintext secret, complete, so a test can check every one still decrypts.
    """

    shape: LegacyShape
    seed: int
    platform_org_id: str
    counts: dict[str, int] = field(default_factory=dict)
    identities: dict[str, list[str]] = field(default_factory=dict)
    identity_counts: dict[str, int] = field(default_factory=dict)
    org_styles: dict[str, RowStyle] = field(default_factory=dict)
    api_keys: dict[str, str] = field(default_factory=dict, repr=False)
    platform_admin_key: str = field(default="", repr=False)
    team_api_keys: dict[str, str] = field(default_factory=dict, repr=False)
    credentials: dict[str, LegacyCredential] = field(default_factory=dict, repr=False)
    signing_epoch: str = LEGACY_SIGNING_EPOCH


class _Writer:
    """Per-table row buffers, flushed with ``executemany`` in schema (dependency) order."""

    def __init__(self, tx: Tx, manifest: LegacyManifest, batch_size: int, sample_limit: int) -> None:
        self._tx = tx
        self._manifest = manifest
        self._batch_size = batch_size
        self._sample_limit = sample_limit
        self._buffers: dict[str, list[dict[str, Any]]] = {}
        self._statements: dict[str, sa.Insert] = {}

    def add(self, table: str, row: dict[str, Any]) -> None:
        buffer = self._buffers.setdefault(table, [])
        buffer.append(row)
        manifest = self._manifest
        manifest.counts[table] = manifest.counts.get(table, 0) + 1
        if table in ENTITY_TABLES:
            manifest.identity_counts[table] = manifest.identity_counts.get(table, 0) + 1
            sample = manifest.identities.setdefault(table, [])
            if len(sample) < self._sample_limit:
                sample.append(str(row["id"]))
        if len(buffer) >= self._batch_size:
            self.flush(up_to=table)

    def flush(self, up_to: str | None = None) -> None:
        """Write the buffers of every table up to ``up_to`` in schema order (all of them by default)."""
        limit = len(_TABLE_ORDER) if up_to is None else _TABLE_ORDER[up_to]
        for name in sorted(self._buffers, key=_TABLE_ORDER.__getitem__):
            if _TABLE_ORDER[name] > limit:
                break
            rows = self._buffers[name]
            if rows:
                self._tx.executemany(self._statement(name, rows[0]), rows)
                self._buffers[name] = []

    def _statement(self, table: str, row: Mapping[str, Any]) -> sa.Insert:
        """One INSERT per table, kept alive here so the database's compiled-statement cache hits."""
        statement = self._statements.get(table)
        if statement is None:
            statement = self._statements[table] = sa.insert(metadata.tables[table]).values(
                {column: sa.bindparam(column) for column in row})
        return statement


class _Ids:
    """Legacy IDs of one style, drawn from the generator's seeded random."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def uuid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def of(self, prefix: str, style: RowStyle) -> str:
        """A legacy ID of entity ``prefix`` in ``style``: a UUID, or the canonical form with the retired
        organization prefix where there is one (the tail as it was minted before the canonical format)."""
        if style == "uuid":
            return self.uuid()
        minted = format_id(prefix, self._rng.randbytes)
        old = OLD_PREFIXES.get(prefix)
        return minted if old is None else old + minted[len(prefix):]

    def hex(self, digits: int) -> str:
        return f"{self._rng.getrandbits(digits * 4):0{digits}x}"

    def token(self) -> str:
        return base64.urlsafe_b64encode(self._rng.randbytes(32)).rstrip(b"=").decode("ascii")


def _stamp(org_index: int, offset: int = 0) -> str:
    moment = _BASE_TIME + timedelta(hours=org_index, seconds=offset)
    return moment.isoformat(timespec="microseconds") + "Z"


def _dumps(document: Mapping[str, Any]) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


def generate_legacy_database(db: Database, shape: LegacyShape, *, seed: int = 0, cipher: CredentialCipher,
                             batch_size: int = 5000, sample_limit: int = 1000) -> LegacyManifest:
    """Fill the migrated, empty database ``db`` with a legacy database of ``shape`` (see the module's
    contract); the manifest says what was written.  Raises ``ValueError`` if an organization exists."""
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    rng = random.Random(seed)
    ids = _Ids(rng)
    platform = PLATFORM_LEGACY_UUID if shape.style_of(0) == "uuid" else PLATFORM_PREFIXED_ID
    manifest = LegacyManifest(shape=shape, seed=seed, platform_org_id=platform)
    with db.transaction() as tx:
        if tx.scalar(sa.select(sa.func.count()).select_from(metadata.tables["organizations"])):
            raise ValueError("the database already holds organizations: generate into an empty database")
        writer = _Writer(tx, manifest, batch_size, sample_limit)
        generator = _OrgGenerator(shape, ids, writer, manifest, cipher)
        for org_index in range(shape.organizations):
            generator.organization(org_index, platform if org_index == 0 else None)
        writer.add("platform_settings", {"name": "signing_epoch", "value": LEGACY_SIGNING_EPOCH})
        writer.flush()
    return manifest


@dataclass
class _Org:
    """One organization's identities while it is generated (bounded by the per-organization counts)."""

    index: int
    style: RowStyle
    id: str
    user_ids: list[str]
    member_ids: list[str]
    agent_ids: list[str]
    team_ids: list[str]
    stamp: str
    task_ids: list[str] = field(default_factory=list)


class _OrgGenerator:
    """Generates one organization and everything it owns; IDs are drawn in a fixed order (determinism)."""

    def __init__(self, shape: LegacyShape, ids: _Ids, writer: _Writer, manifest: LegacyManifest,
                 cipher: CredentialCipher) -> None:
        self.shape = shape
        self.ids = ids
        self.add = writer.add
        self.manifest = manifest
        self.cipher = cipher

    def organization(self, index: int, fixed_id: str | None) -> None:
        shape, style = self.shape, self.shape.style_of(index)
        org = _Org(
            index=index, style=style, id=fixed_id or self.ids.of("org", style),
            user_ids=[self.ids.of("user", style) for _ in range(shape.members)],
            member_ids=[self.ids.of("org-member", style) for _ in range(shape.members)],
            agent_ids=[self.ids.of("agent", style) for _ in range(shape.agents)],
            team_ids=[self.ids.of("team", style) for _ in range(shape.teams if shape.agents else 0)],
            stamp=_stamp(index),
        )
        self.manifest.org_styles[org.id] = style
        self._organization_rows(org)
        self._agents(org)
        self._teams(org)
        self._conversations(org)
        self._knowledge(org)
        self._telemetry_and_events(org)
        self._audit(org)

    # -- the organization and its four organization entities ---------------------------------------------
    def _organization_rows(self, org: _Org) -> None:
        settings: dict[str, Any] = {"locale": "en", "legacy": True}
        if org.agent_ids:
            settings["default_agent"] = org.agent_ids[0]
            settings["agents"] = {"primary": org.agent_ids[0], "fallback": org.agent_ids[-1]}
        if org.team_ids:
            settings["escalation_team"] = org.team_ids[0]
        if org.member_ids:
            settings["notify_members"] = list(org.member_ids)
        slug = "platform" if org.index == 0 else f"legacy-org-{org.index}"
        self.add("organizations", {
            "id": org.id, "slug": slug, "name": f"Legacy organization {org.index}",
            "default_agent_id": org.agent_ids[0] if org.agent_ids else None, "settings": _dumps(settings),
            "created_at": org.stamp})
        for n, (user_id, member_id) in enumerate(zip(org.user_ids, org.member_ids, strict=True)):
            self.add("users", {"id": user_id, "email": f"user-{org.index}-{n}@legacy.example",
                               "display_name": f"User {org.index}.{n}", "created_at": org.stamp})
            self.add("org_members", {"id": member_id, "org_id": org.id, "user_id": user_id,
                                     "role": ROLES[min(n, len(ROLES) - 1)], "created_at": org.stamp})
        for n in range(self.shape.credentials):
            credential_id = self.ids.of("org-credential", org.style)
            name = f"provider-{n}"
            secret = f"sk-legacy-{org.index}-{n}-{self.ids.hex(24)}".encode()
            nonce, ciphertext = self.cipher.encrypt(org.id, secret)  # bound to the LEGACY owner ID
            self.add("org_credentials", {"id": credential_id, "org_id": org.id, "name": name, "nonce": nonce,
                                         "ciphertext": ciphertext, "created_at": org.stamp})
            self.manifest.credentials[credential_id] = LegacyCredential(org.id, name, secret)
        for n in range(self.shape.policies):
            document: dict[str, Any] = {"allowed_agents": org.agent_ids[:3], "organization": org.id}
            if org.member_ids:
                document["approver"] = org.member_ids[0]
            if org.team_ids:
                document["team"] = org.team_ids[0]
            self.add("org_policies", {"id": self.ids.of("org-policy", org.style), "org_id": org.id,
                                      "name": f"policy-{n}", "document": _dumps(document), "created_at": org.stamp})
        key = ORG_KEY_PREFIX + self.ids.token()
        self.add("api_keys", {
            "id": self.ids.of("api-key", org.style), "tenant_id": org.id, "name": "legacy key", "role": "owner",
            "user_id": org.user_ids[0] if org.user_ids else None, "platform_admin": org.index == 0,
            "key_prefix": key[:VISIBLE_CHARACTERS], "key_hash": hash_api_key(key), "created_at": org.stamp})
        self.manifest.api_keys[org.id] = key
        if org.index == 0:
            self.manifest.platform_admin_key = key

    # -- agents and teams --------------------------------------------------------------------------------
    def _agents(self, org: _Org) -> None:
        agents = org.agent_ids
        for n, agent_id in enumerate(agents):
            config = {"model": "legacy-model", "delegate_to": agents[(n + 1) % len(agents)]}
            self.add("agents", {"id": agent_id, "tenant_id": org.id, "agent_key": f"agent-{n}",
                                "display_name": f"Agent {org.index}.{n}", "config": _dumps(config),
                                "created_at": org.stamp, "updated_at": org.stamp, "deleted_at": None})
        for n in range(len(agents) - 1):  # a chain, linked both ways
            for source, target in ((agents[n], agents[n + 1]), (agents[n + 1], agents[n])):
                self.add("agent_links", {"id": self.ids.of("agent-link", org.style), "tenant_id": org.id,
                                         "source_agent_id": source, "target_agent_id": target, "kind": "delegate",
                                         "created_at": org.stamp})
        if not agents:
            return
        self.add("agent_mcp_servers", {
            "id": self.ids.of("agent-mcp-server", org.style), "tenant_id": org.id, "agent_id": agents[0],
            "name": "tools", "url": "https://mcp.legacy.example/tools", "config": _dumps({"agent": agents[0]}),
            "created_at": org.stamp})
        actor = org.user_ids[0] if org.user_ids else "system"
        self.add("skills", {"id": self.ids.of("skill", org.style), "tenant_id": org.id, "owner_id": actor,
                            "name": "summarize", "content": "Summarize the conversation.", "created_at": org.stamp})
        self.add("cron_jobs", {
            "id": self.ids.of("cron-job", org.style), "tenant_id": org.id, "agent_id": agents[0],
            "created_by": actor, "user_id": "", "schedule": "0 9 * * *",
            "payload": _dumps({"agent_id": agents[-1], "message": "daily report"}), "enabled": True,
            "created_at": org.stamp})
        self.add("agent_config_permissions", {
            "id": self.ids.of("agent-config-permission", org.style), "tenant_id": org.id, "agent_id": agents[0],
            "scope": f"group:legacy-{org.index}", "config_type": "cron", "sender_id": actor, "allow": True,
            "granted_by": actor, "created_at": org.stamp})

    def _teams(self, org: _Org) -> None:
        agents = org.agent_ids
        for n, team_id in enumerate(org.team_ids):
            self.add("teams", {"id": team_id, "tenant_id": org.id, "name": f"Team {n}",
                               "lead_agent_id": agents[n % len(agents)], "created_at": org.stamp})
            for agent_id in dict.fromkeys(agents[(n + k) % len(agents)] for k in range(2)):
                self.add("team_members", {"id": self.ids.of("team-member", org.style), "tenant_id": org.id,
                                          "team_id": team_id, "agent_id": agent_id, "role": "member",
                                          "created_at": org.stamp})
            key = TEAM_API_KEY_PREFIX + self.ids.token()
            visible = key[:len(TEAM_API_KEY_PREFIX) + TEAM_API_KEY_VISIBLE_CHARS]
            self.add("team_api_keys", {
                "id": self.ids.of("team-api-key", org.style), "tenant_id": org.id, "team_id": team_id,
                "name": "legacy team key", "key_prefix": visible, "key_hash": hash_team_api_key(key),
                "created_at": org.stamp, "revoked_at": None})
            self.manifest.team_api_keys[team_id] = key
            org.task_ids.append(self.ids.of("team-task", org.style))
            self.add("team_tasks", {"id": org.task_ids[-1], "tenant_id": org.id,
                                    "team_id": team_id, "created_by_agent_id": agents[0],
                                    "assignee_agent_id": agents[-1], "title": f"Task {n}", "status": "open",
                                    "created_at": org.stamp, "updated_at": org.stamp})

    # -- conversations, memory, knowledge graph, vault ---------------------------------------------------
    def _conversations(self, org: _Org) -> None:
        agents = org.agent_ids
        if not agents:
            return
        for n in range(self.shape.sessions):
            agent_id = agents[n % len(agents)]
            sender = org.user_ids[n % len(org.user_ids)] if org.user_ids else None
            scope = sender or f"group:legacy-{org.index}"
            session_key = f"legacy:{n}"
            self.add("sessions", {"tenant_id": org.id, "session_key": session_key, "agent_id": agent_id,
                                  "user_id": scope, "status": "completed", "compaction_count": 1,
                                  "created_at": org.stamp, "completed_at": org.stamp})
            for seq in range(self.shape.messages_per_session):
                from_user = seq % 2 == 0
                self.add("session_messages", {
                    "tenant_id": org.id, "session_key": session_key, "seq": seq,
                    "role": "user" if from_user else "assistant", "sender_id": sender if from_user else None,
                    "content": f"message {seq}", "created_at": _stamp(org.index, seq)})
            self.add("episodic_summaries", {
                "id": self.ids.of("episodic-summary", org.style), "tenant_id": org.id, "agent_id": agent_id,
                "user_id": scope, "session_key": session_key, "compaction_count": 1,
                "summary": f"Session {n} summary.", "created_at": org.stamp, "promoted_at": None})

    def _knowledge(self, org: _Org) -> None:
        agents = org.agent_ids
        if not agents:
            return
        scope = org.user_ids[0] if org.user_ids else ""
        for n in range(self.shape.memory_documents):
            agent_id, document_id = agents[n % len(agents)], self.ids.of("memory-document", org.style)
            self.add("memory_documents", {
                "id": document_id, "tenant_id": org.id, "agent_id": agent_id, "user_id": scope,
                "path": f"notes/{n}.md", "content": f"Note {n}.", "metadata": _dumps({"agent": agent_id}),
                "created_at": org.stamp, "updated_at": org.stamp})
            for seq in range(self.shape.chunks_per_document):
                self.add("memory_chunks", {"id": self.ids.of("memory-chunk", org.style), "tenant_id": org.id,
                                           "document_id": document_id, "agent_id": agent_id, "seq": seq,
                                           "content": f"Note {n}, chunk {seq}."})
        entities = [(agents[n % len(agents)], self.ids.of("kg-entity", org.style))
                    for n in range(self.shape.kg_entities)]
        for n, (agent_id, entity_id) in enumerate(entities):
            self.add("kg_entities", {"id": entity_id, "tenant_id": org.id, "agent_id": agent_id, "user_id": scope,
                                     "name": f"Entity {n}", "entity_type": "concept",
                                     "properties": _dumps({"mentioned_by": agent_id}), "created_at": org.stamp})
        for n in range(self.shape.kg_relations if entities else 0):
            (agent_id, source), (_, target) = entities[n % len(entities)], entities[(n + 1) % len(entities)]
            self.add("kg_relations", {"id": self.ids.of("kg-relation", org.style), "tenant_id": org.id,
                                      "agent_id": agent_id, "source_entity_id": source, "target_entity_id": target,
                                      "relation": "relates_to", "properties": "{}", "created_at": org.stamp})
        vault_ids: list[str] = []
        for n in range(self.shape.vault_documents):
            content = f"vault file {n}".encode()
            vault_ids.append(self.ids.of("vault-document", org.style))
            self.add("vault_documents", {
                "id": vault_ids[-1], "tenant_id": org.id, "agent_id": agents[n % len(agents)],
                "path": f"files/{n}.txt", "content_type": "text/plain", "size": len(content), "content": content,
                "created_at": org.stamp})
        if vault_ids and org.task_ids:
            self.add("team_task_attachments", {
                "id": self.ids.of("team-task-attachment", org.style), "tenant_id": org.id,
                "task_id": org.task_ids[0], "created_by_agent_id": agents[0], "vault_document_id": vault_ids[0],
                "name": "file.txt", "created_at": org.stamp})

    # -- telemetry, the event outbox, the audit log -------------------------------------------------------
    def _telemetry_and_events(self, org: _Org) -> None:
        agents = org.agent_ids
        for n in range(self.shape.telemetry):
            agent_id = agents[n % len(agents)] if agents else None
            trace_id = self.ids.hex(32)
            self.add("traces", {"trace_id": trace_id, "tenant_id": org.id, "agent_id": agent_id, "name": "turn",
                                "started_at": _stamp(org.index, n), "ended_at": _stamp(org.index, n + 1)})
            for s in range(2):
                self.add("spans", {"span_id": self.ids.hex(16), "trace_id": trace_id, "tenant_id": org.id,
                                   "agent_id": agent_id, "name": f"step-{s}", "started_at": _stamp(org.index, n),
                                   "duration_ms": 12.5 * (s + 1),
                                   "attributes": _dumps({"agent.id": agent_id, "tenant.id": org.id})})
            self.add("usage_snapshots", {"tenant_id": org.id, "agent_id": agent_id, "model": "legacy-model",
                                         "input_tokens": 100 + n, "output_tokens": 50 + n,
                                         "recorded_at": _stamp(org.index, n)})
        for n in range(self.shape.events if agents else 0):
            agent_id = agents[n % len(agents)]
            payload: dict[str, Any] = {"agent_id": agent_id, "tenant_id": org.id}
            if org.team_ids:
                payload["team_id"] = org.team_ids[0]
            self.add("event_outbox", {
                "id": self.ids.of("domain-event", org.style), "tenant_id": org.id, "type": f"agent.updated.{n}",
                "source_id": agent_id, "agent_id": agent_id,
                "user_id": org.user_ids[0] if org.user_ids else None, "occurred_at": org.stamp,
                "payload": _dumps(payload), "status": "done", "attempts": 1, "available_at": org.stamp,
                "claimed_by": None, "claimed_until": None, "last_error": None, "finished_at": org.stamp})

    def _audit(self, org: _Org) -> None:
        """History: a technical UUID each, recording the legacy IDs as they were (never translated)."""
        actor = org.user_ids[0] if org.user_ids else None
        entries: list[tuple[str, str | None, dict[str, Any]]] = [
            ("organization.created", org.id, {"organization": org.id})]
        entries += [("member.added", member_id, {"member": member_id, "user": user_id})
                    for member_id, user_id in zip(org.member_ids, org.user_ids, strict=True)]
        entries += [("agent.created", agent_id, {"agent": agent_id}) for agent_id in org.agent_ids[:2]]
        for n, (action, target, details) in enumerate(entries):
            self.add("org_audit", {"id": self.ids.uuid(), "org_id": org.id, "actor_id": actor, "action": action,
                                   "target_id": target, "details": _dumps(details),
                                   "created_at": _stamp(org.index, n)})

