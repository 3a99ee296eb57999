"""The database schema: SQLAlchemy Core tables, one definition for SQLite and PostgreSQL.

Rules:

* Every entity ID, and every reference to one, is ``TEXT`` with a CHECK that bounds its length (1-80) and
  its character set (``0-9 a-z -``), so even a raw SQL write of junk fails at the database.  The CHECK uses
  ``trim(x, chars)``, which both engines share.  Validation proper happens before SQL (``parse_id``).
* Every foreign key states its ON DELETE: CASCADE for owned rows, SET NULL for nullable references.
  ``docs/schema.md`` lists them all.  FKs are the safety net, not the validation.
* Tenant-owned tables carry ``tenant_id`` (FK to ``organizations``, CASCADE), and every repository filters
  by it.
* Telemetry tables (spans, traces, usage snapshots) have no FK, for insert volume; their insert path turns
  a missing ID into NULL and refuses anything that is not an ID.
* Timestamps are ISO-8601 UTC text (``2026-11-29T22:06:16.123456Z``): identical on both engines, sortable.
  JSON documents are text (``json.dumps``), so the cutover can scan them the same way on both engines.
"""

from __future__ import annotations

from typing import Any, Final

import sqlalchemy as sa

from agentfy.identity.roles import ROLES

#: Names stay under PostgreSQL's 63-character limit (a test checks), so a violation's constraint name maps
#: back to its columns exactly.
NAMING_CONVENTION: Final = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_N_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata: Final = sa.MetaData(naming_convention=NAMING_CONVENTION)

#: The characters an ID may contain (canonical and legacy alike); the CHECK trims them away.
ID_CHARACTERS: Final = "0123456789abcdefghijklmnopqrstuvwxyz-"
#: The longest channel name or conversation a cron job records as its origin.
ORIGIN_MAX_LENGTH: Final = 300
#: The CHECK of a column that holds an organization role.
_ROLE_IN: Final = f"role IN ({', '.join(repr(role) for role in ROLES)})"


def id_check(column: str) -> sa.CheckConstraint:
    """``column`` is NULL or 1-80 characters of ``0-9 a-z -``."""
    return sa.CheckConstraint(
        f"length({column}) BETWEEN 1 AND 80 AND trim({column}, '{ID_CHARACTERS}') = ''",
        name=f"{column}_is_id",
    )


def id_pk(prefix: str) -> sa.Column[str]:
    """The entity's primary key: a canonical ID of ``prefix`` (legacy values only through the cutover)."""
    return sa.Column("id", sa.Text, primary_key=True, comment=f"{prefix}-<adjective>-<noun>-<suffix>",
                     info={"id_prefix": prefix})


def soft_ref(name: str, target: str, *, nullable: bool = True, why: str | None = None,
             may_dangle: bool = False) -> sa.Column[str]:
    """A reference to ``target`` without a foreign key (telemetry volume, a cycle, or on purpose: ``why``);
    the orphan scan and the cutover find it through ``info["references"]``.  ``may_dangle``: naming nothing
    is normal (the orphan scan does not report it)."""
    info: dict[str, object] = {"references": target, "may_dangle": may_dangle}
    if why is not None:
        info["why_no_fk"] = why
    return sa.Column(name, sa.Text, nullable=nullable, info=info)


def ref(name: str, target: str, *, on_delete: str, nullable: bool = False, **kwargs: Any) -> sa.Column[str]:
    """A reference to ``target`` (``table.column``) with an explicit ON DELETE."""
    return sa.Column(name, sa.Text, sa.ForeignKey(target, ondelete=on_delete), nullable=nullable, **kwargs)


def tenant() -> sa.Column[str]:
    return ref("tenant_id", "organizations.id", on_delete="CASCADE", index=True)


def json_column(name: str) -> sa.Column[str]:
    """A JSON document (an object), stored as text: ``info["json"]`` lets the input scan find it."""
    return sa.Column(name, sa.Text, nullable=False, server_default="{}", info={"json": True})


def created_at() -> sa.Column[str]:
    return sa.Column("created_at", sa.Text, nullable=False)


def _table(name: str, *columns: Any, id_columns: tuple[str, ...] = ("id",), **kwargs: Any) -> sa.Table:
    return sa.Table(name, metadata, *columns, *(id_check(c) for c in id_columns), **kwargs)


organizations = _table(
    "organizations",
    id_pk("org"),
    sa.Column("slug", sa.Text, nullable=False, unique=True),
    sa.Column("name", sa.Text, nullable=False),
    # A reference without an FK (organizations and agents would reference each other): deleting the agent
    # clears it in the same transaction, and the orphan scan checks it.
    soft_ref("default_agent_id", "agents.id"),
    json_column("settings"),
    created_at(),
    id_columns=("id", "default_agent_id"),
)

users = _table(
    "users",
    id_pk("user"),
    sa.Column("email", sa.Text, nullable=True, unique=True),
    sa.Column("display_name", sa.Text, nullable=False),
    created_at(),
)

org_members = _table(
    "org_members",
    id_pk("org-member"),
    ref("org_id", "organizations.id", on_delete="CASCADE"),
    ref("user_id", "users.id", on_delete="CASCADE", index=True),
    sa.Column("role", sa.Text, nullable=False),
    created_at(),
    sa.UniqueConstraint("org_id", "user_id"),
    sa.CheckConstraint(_ROLE_IN, name="role_known"),
    id_columns=("id", "org_id", "user_id"),
)

# An invitation for an existing person to join an organization: it becomes a membership only when the invited
# person accepts with a credential of their own.  ``user_id`` has no foreign key on purpose: an invitation for
# an ID that names nobody is stored exactly like one that names somebody, so inviting tells nothing about who
# exists elsewhere.
org_invitations = _table(
    "org_invitations",
    id_pk("org-invitation"),
    tenant(),
    soft_ref("user_id", "users.id", nullable=False, may_dangle=True,
             why="an invitation may name nobody, and must look the same as one that names somebody"),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False, server_default="pending"),
    soft_ref("invited_by", "users.id", why="history: who invited stays recorded as it was"),
    created_at(),
    sa.Column("expires_at", sa.Text, nullable=False),
    sa.Column("responded_at", sa.Text, nullable=True),
    sa.CheckConstraint(_ROLE_IN, name="role_known"),
    sa.CheckConstraint("status IN ('pending', 'accepted', 'declined', 'withdrawn')", name="status_known"),
    sa.Index("ix_org_invitations_pending", "tenant_id", "user_id", unique=True,
             sqlite_where=sa.text("status = 'pending'"), postgresql_where=sa.text("status = 'pending'")),
    sa.Index("ix_org_invitations_user_id", "user_id"),
    id_columns=("id", "tenant_id", "user_id", "invited_by"),
)

org_credentials = _table(
    "org_credentials",
    id_pk("org-credential"),
    ref("org_id", "organizations.id", on_delete="CASCADE"),
    sa.Column("name", sa.Text, nullable=False),
    # AES-GCM: nonce and ciphertext; the associated data is the owner organization's ID, so a secret copied
    # to another organization's row does not decrypt.
    sa.Column("nonce", sa.LargeBinary, nullable=False),
    sa.Column("ciphertext", sa.LargeBinary, nullable=False),
    created_at(),
    sa.Column("rotated_at", sa.Text, nullable=True, comment="when the secret was last replaced (NULL: never)"),
    sa.UniqueConstraint("org_id", "name"),
    id_columns=("id", "org_id"),
)

org_policies = _table(
    "org_policies",
    id_pk("org-policy"),
    ref("org_id", "organizations.id", on_delete="CASCADE"),
    sa.Column("name", sa.Text, nullable=False),
    json_column("document"),
    created_at(),
    sa.UniqueConstraint("org_id", "name"),
    id_columns=("id", "org_id"),
)

# History: its own ID is a technical UUID, and the IDs it recorded stay as they were (no FK, no check).
org_audit = sa.Table(
    "org_audit",
    metadata,
    sa.Column("id", sa.Text, primary_key=True, comment="technical UUID, not a registry ID"),
    sa.Column("org_id", sa.Text, nullable=False, index=True),
    sa.Column("actor_id", sa.Text, nullable=True),
    sa.Column("action", sa.Text, nullable=False),
    sa.Column("target_id", sa.Text, nullable=True),
    sa.Column("details", sa.Text, nullable=False, server_default="{}"),
    created_at(),
)

agents = _table(
    "agents",
    id_pk("agent"),
    tenant(),
    sa.Column("agent_key", sa.Text, nullable=False),
    sa.Column("display_name", sa.Text, nullable=False),
    json_column("config"),
    created_at(),
    sa.Column("updated_at", sa.Text, nullable=False),
    sa.Column("deleted_at", sa.Text, nullable=True),
    # agent_key is unique within a tenant, among agents not deleted; the same key in two tenants is two agents.
    sa.Index("uq_agents_tenant_key", "tenant_id", "agent_key", unique=True,
             sqlite_where=sa.text("deleted_at IS NULL"), postgresql_where=sa.text("deleted_at IS NULL")),
    sa.CheckConstraint("length(agent_key) BETWEEN 1 AND 100", name="agent_key_length"),
    id_columns=("id", "tenant_id"),
)

agent_links = _table(
    "agent_links",
    id_pk("agent-link"),
    tenant(),
    ref("source_agent_id", "agents.id", on_delete="CASCADE", index=True),
    ref("target_agent_id", "agents.id", on_delete="CASCADE", index=True),
    sa.Column("kind", sa.Text, nullable=False, server_default="delegate"),
    created_at(),
    sa.UniqueConstraint("source_agent_id", "target_agent_id", "kind"),
    id_columns=("id", "tenant_id", "source_agent_id", "target_agent_id"),
)

agent_mcp_servers = _table(
    "agent_mcp_servers",
    id_pk("agent-mcp-server"),
    tenant(),
    ref("agent_id", "agents.id", on_delete="CASCADE", index=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("url", sa.Text, nullable=False),
    json_column("config"),
    created_at(),
    sa.UniqueConstraint("agent_id", "name"),
    id_columns=("id", "tenant_id", "agent_id"),
)

teams = _table(
    "teams",
    id_pk("team"),
    tenant(),
    sa.Column("name", sa.Text, nullable=False),
    ref("lead_agent_id", "agents.id", on_delete="SET NULL", nullable=True, index=True),
    created_at(),
    id_columns=("id", "tenant_id", "lead_agent_id"),
)

team_members = _table(
    "team_members",
    id_pk("team-member"),
    tenant(),
    ref("team_id", "teams.id", on_delete="CASCADE"),
    ref("agent_id", "agents.id", on_delete="CASCADE", index=True),
    sa.Column("role", sa.Text, nullable=False, server_default="member"),
    created_at(),
    sa.UniqueConstraint("team_id", "agent_id"),
    id_columns=("id", "tenant_id", "team_id", "agent_id"),
)

team_api_keys = _table(
    "team_api_keys",
    id_pk("team-api-key"),
    tenant(),
    ref("team_id", "teams.id", on_delete="CASCADE", index=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("key_prefix", sa.Text, nullable=False, comment="the first characters, shown to identify the key"),
    sa.Column("key_hash", sa.Text, nullable=False, unique=True,
              comment="SHA-256 of the key; the key itself is not stored"),
    created_at(),
    sa.Column("revoked_at", sa.Text, nullable=True),
    id_columns=("id", "tenant_id", "team_id"),
)

sessions = sa.Table(
    "sessions",
    metadata,
    # The session key is the session's only identifier, unique per tenant (safe by construction).
    tenant(),
    sa.Column("session_key", sa.Text, nullable=False),
    ref("agent_id", "agents.id", on_delete="CASCADE", index=True),
    sa.Column("user_id", sa.Text, nullable=False, comment="the memory SCOPE (group:…, guild:…, or the sender)"),
    sa.Column("status", sa.Text, nullable=False, server_default="open"),
    sa.Column("compaction_count", sa.Integer, nullable=False, server_default="0"),
    created_at(),
    sa.Column("completed_at", sa.Text, nullable=True),
    sa.Column("channel", sa.Text, nullable=True, comment="where the conversation happens (telegram, discord, web…)"),
    sa.Column("conversation", sa.Text, nullable=True, comment="the chat's name on its channel (telegram:-100123…)"),
    sa.PrimaryKeyConstraint("tenant_id", "session_key"),
    sa.CheckConstraint("status IN ('open', 'completed')", name="status_known"),
    sa.CheckConstraint("length(session_key) BETWEEN 1 AND 200", name="session_key_length"),
    sa.CheckConstraint("channel IS NULL OR length(channel) BETWEEN 1 AND 50", name="channel_length"),
    sa.CheckConstraint("conversation IS NULL OR length(conversation) BETWEEN 1 AND 500", name="conversation_length"),
    id_check("tenant_id"),
    id_check("agent_id"),
)

session_messages = sa.Table(
    "session_messages",
    metadata,
    sa.Column("tenant_id", sa.Text, nullable=False),
    sa.Column("session_key", sa.Text, nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("sender_id", sa.Text, nullable=True, comment="the ACTOR, when a person sent it"),
    sa.Column("content", sa.Text, nullable=False),
    created_at(),
    sa.Column("tool_calls", sa.Text, nullable=True,
              comment="an assistant message's tool calls: JSON list of {id, name, arguments}"),
    sa.Column("tool_call_id", sa.Text, nullable=True, comment="a tool result: the id of the call it answers"),
    sa.PrimaryKeyConstraint("tenant_id", "session_key", "seq"),
    sa.CheckConstraint("tool_calls IS NULL OR role = 'assistant'", name="tool_calls_on_assistant"),
    sa.CheckConstraint("tool_call_id IS NULL OR (role = 'tool' AND length(tool_call_id) BETWEEN 1 AND 200)",
                       name="tool_call_id_on_tool"),
    sa.ForeignKeyConstraint(["tenant_id", "session_key"], ["sessions.tenant_id", "sessions.session_key"],
                            ondelete="CASCADE"),
    id_check("tenant_id"),
)

episodic_summaries = _table(
    "episodic_summaries",
    id_pk("episodic-summary"),
    tenant(),
    ref("agent_id", "agents.id", on_delete="CASCADE", index=True),
    sa.Column("user_id", sa.Text, nullable=False),
    sa.Column("session_key", sa.Text, nullable=False),
    sa.Column("compaction_count", sa.Integer, nullable=False),
    sa.Column("summary", sa.Text, nullable=False),
    created_at(),
    sa.Column("promoted_at", sa.Text, nullable=True),
    sa.UniqueConstraint("tenant_id", "session_key", "compaction_count"),
    id_columns=("id", "tenant_id", "agent_id"),
)

kg_entities = _table(
    "kg_entities",
    id_pk("kg-entity"),
    tenant(),
    ref("agent_id", "agents.id", on_delete="CASCADE"),
    sa.Column("user_id", sa.Text, nullable=False),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("entity_type", sa.Text, nullable=False),
    json_column("properties"),
    created_at(),
    sa.Index("ix_kg_entities_agent_name", "agent_id", "name"),
    id_columns=("id", "tenant_id", "agent_id"),
)

kg_relations = _table(
    "kg_relations",
    id_pk("kg-relation"),
    tenant(),
    ref("agent_id", "agents.id", on_delete="CASCADE", index=True),
    ref("source_entity_id", "kg_entities.id", on_delete="CASCADE", index=True),
    ref("target_entity_id", "kg_entities.id", on_delete="CASCADE", index=True),
    sa.Column("relation", sa.Text, nullable=False),
    json_column("properties"),
    created_at(),
    id_columns=("id", "tenant_id", "agent_id", "source_entity_id", "target_entity_id"),
)

memory_documents = _table(
    "memory_documents",
    id_pk("memory-document"),
    tenant(),
    ref("agent_id", "agents.id", on_delete="CASCADE"),
    sa.Column("user_id", sa.Text, nullable=False, comment="the memory SCOPE (empty: the agent's own)"),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    json_column("metadata"),
    created_at(),
    sa.Column("updated_at", sa.Text, nullable=False),
    sa.UniqueConstraint("agent_id", "user_id", "path"),
    id_columns=("id", "tenant_id", "agent_id"),
)

memory_chunks = _table(
    "memory_chunks",
    id_pk("memory-chunk"),
    tenant(),
    ref("document_id", "memory_documents.id", on_delete="CASCADE", index=True),
    ref("agent_id", "agents.id", on_delete="CASCADE", index=True),
    sa.Column("seq", sa.Integer, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    id_columns=("id", "tenant_id", "document_id", "agent_id"),
)

memory_embeddings = _table(
    "memory_embeddings",
    sa.Column("source_id", sa.Text, nullable=False, comment="the memory document or episodic summary embedded"),
    tenant(),
    ref("agent_id", "agents.id", on_delete="CASCADE"),
    sa.Column("user_id", sa.Text, nullable=False, comment="the memory SCOPE of the source (empty: the agent's own)"),
    sa.Column("kind", sa.Text, nullable=False, comment="memory (a memory document) or episodic (a summary)"),
    ref("document_id", "memory_documents.id", on_delete="CASCADE", nullable=True, index=True),
    ref("summary_id", "episodic_summaries.id", on_delete="CASCADE", nullable=True, index=True),
    sa.Column("source_version", sa.Text, nullable=False,
              comment="the source's updated_at (a summary's created_at) when its text was embedded"),
    sa.Column("model", sa.Text, nullable=False, comment="the embeddings model that made the vector"),
    sa.Column("dimensions", sa.Integer, nullable=False),
    sa.Column("vector", sa.LargeBinary, nullable=False, comment="float32 little-endian, unit length"),
    created_at(),
    sa.PrimaryKeyConstraint("source_id", "model"),
    sa.CheckConstraint("(kind = 'memory' AND document_id = source_id AND summary_id IS NULL) OR "
                       "(kind = 'episodic' AND summary_id = source_id AND document_id IS NULL)",
                       name="kind_names_its_source"),
    sa.CheckConstraint("dimensions > 0 AND length(vector) = 4 * dimensions", name="vector_has_its_dimensions"),
    sa.Index("ix_memory_embeddings_candidates", "tenant_id", "agent_id", "user_id", "model", "dimensions"),
    id_columns=("source_id", "tenant_id", "agent_id", "document_id", "summary_id"),
)

vault_documents = _table(
    "vault_documents",
    id_pk("vault-document"),
    tenant(),
    ref("agent_id", "agents.id", on_delete="CASCADE"),
    sa.Column("path", sa.Text, nullable=False),
    sa.Column("content_type", sa.Text, nullable=False),
    sa.Column("size", sa.Integer, nullable=False),
    sa.Column("content", sa.LargeBinary, nullable=False),
    created_at(),
    sa.Column("text_content", sa.Text, nullable=True,
              comment="the document as text: its first 100,000 characters; NULL: not text (media type or encoding)"),
    # Per agent: two agents may keep a document at the same path.
    sa.UniqueConstraint("agent_id", "path"),
    id_columns=("id", "tenant_id", "agent_id"),
)

skills = _table(
    "skills",
    id_pk("skill"),
    tenant(),
    sa.Column("owner_id", sa.Text, nullable=False,
              comment="the ACTOR who published it (legacy rows: the SCOPE), not an FK"),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    created_at(),
    sa.UniqueConstraint("tenant_id", "name"),
    id_columns=("id", "tenant_id"),
)

cron_jobs = _table(
    "cron_jobs",
    id_pk("cron-job"),
    tenant(),
    ref("agent_id", "agents.id", on_delete="CASCADE", index=True),
    sa.Column("created_by", sa.Text, nullable=False, comment="the ACTOR"),
    sa.Column("user_id", sa.Text, nullable=False, comment="the SCOPE it runs in (empty: none)"),
    sa.Column("schedule", sa.Text, nullable=False),
    json_column("payload"),
    sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
    created_at(),
    sa.Column("timezone", sa.Text, nullable=False, server_default="UTC",
              comment="IANA name a cron expression is read in"),
    sa.Column("next_run_at", sa.Text, nullable=True, index=True,
              comment="when it is due next; NULL: not computed yet (rows from before 0013) or nothing left"),
    sa.Column("last_run_at", sa.Text, nullable=True, comment="the due time of the last run claimed"),
    sa.Column("origin_channel", sa.Text, nullable=False, server_default=sa.text("''"),
              comment="the channel the job was created from (telegram, api, …; empty: none)"),
    sa.Column("origin_conversation", sa.Text, nullable=False, server_default=sa.text("''"),
              comment="the conversation its runs answer in (telegram:<chat>, …; empty: its own)"),
    sa.CheckConstraint("length(timezone) BETWEEN 1 AND 64", name="timezone_shape"),
    sa.CheckConstraint(f"length(origin_channel) <= {ORIGIN_MAX_LENGTH} "
                       f"AND length(origin_conversation) <= {ORIGIN_MAX_LENGTH}", name="origin_shape"),
    id_columns=("id", "tenant_id", "agent_id"),
)

#: What a cron run ended as (``running`` until it ends; a process that dies mid-run leaves it so).
CRON_RUN_OUTCOMES: Final = ("running", "ok", "failed", "denied", "skipped")
#: Why a cron run happened: its schedule, or somebody's "run now".
CRON_RUN_CAUSES: Final = ("schedule", "manual")
CRON_RUN_ERROR_MAX_LENGTH: Final = 500

cron_runs = _table(
    "cron_runs",
    # A run is named by its job and the time it was due: the primary key is the exactly-once rule itself
    # (a second claim of one slot cannot be recorded), so a run needs no minted ID of its own.
    ref("job_id", "cron_jobs.id", on_delete="CASCADE", primary_key=True),
    sa.Column("due_at", sa.Text, primary_key=True),
    tenant(),
    sa.Column("cause", sa.Text, nullable=False),
    sa.Column("started_at", sa.Text, nullable=False),
    sa.Column("ended_at", sa.Text, nullable=True),
    sa.Column("outcome", sa.Text, nullable=False),
    sa.Column("error", sa.Text, nullable=True, comment="why it failed, was denied or skipped (short, no secrets)"),
    sa.Column("session_key", sa.Text, nullable=True, comment="the session the run's messages are in"),
    sa.CheckConstraint(f"outcome IN ({', '.join(repr(o) for o in CRON_RUN_OUTCOMES)})", name="outcome_known"),
    sa.CheckConstraint(f"cause IN ({', '.join(repr(c) for c in CRON_RUN_CAUSES)})", name="cause_known"),
    sa.CheckConstraint(f"error IS NULL OR length(error) <= {CRON_RUN_ERROR_MAX_LENGTH}", name="error_short"),
    id_columns=("job_id", "tenant_id"),
)

agent_config_permissions = _table(
    "agent_config_permissions",
    id_pk("agent-config-permission"),
    tenant(),
    ref("agent_id", "agents.id", on_delete="CASCADE"),
    sa.Column("scope", sa.Text, nullable=False, comment="the group or guild SCOPE the grant applies to"),
    sa.Column("config_type", sa.Text, nullable=False),
    sa.Column("sender_id", sa.Text, nullable=False, comment="the ACTOR the grant names"),
    sa.Column("allow", sa.Boolean, nullable=False),
    sa.Column("granted_by", sa.Text, nullable=True),
    created_at(),
    sa.UniqueConstraint("agent_id", "scope", "config_type", "sender_id", name="uq_agent_config_permissions_grant"),
    sa.CheckConstraint("config_type IN ('file_writer', 'cron', 'context_file')", name="config_type_known"),
    id_columns=("id", "tenant_id", "agent_id"),
)

#: Where a team task is in its lifecycle (the transitions between them are ``agentfy.store.repos.tasks``'s).
TASK_STATUSES: Final = ("open", "claimed", "in_progress", "done", "failed", "cancelled", "timed_out")
TASK_TEXT_MAX_LENGTH: Final = 20_000

team_tasks = _table(
    "team_tasks",
    id_pk("team-task"),
    tenant(),
    ref("team_id", "teams.id", on_delete="CASCADE", index=True),
    ref("created_by_agent_id", "agents.id", on_delete="SET NULL", nullable=True, index=True),
    ref("assignee_agent_id", "agents.id", on_delete="SET NULL", nullable=True, index=True),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("status", sa.Text, nullable=False, server_default="open"),
    created_at(),
    sa.Column("description", sa.Text, nullable=False, server_default=sa.text("''"),
              comment="what the agent that works on it is told, after the title"),
    sa.Column("result", sa.Text, nullable=True, comment="the answer it was completed with"),
    sa.Column("error", sa.Text, nullable=True, comment="why it failed, timed out or was cancelled"),
    ref("claimed_by_agent_id", "agents.id", on_delete="SET NULL", nullable=True, index=True),
    sa.Column("claimed_at", sa.Text, nullable=True),
    sa.Column("timeout_seconds", sa.Integer, nullable=False, server_default=sa.text("3600"),
              comment="how long it may stay claimed or in progress"),
    sa.Column("deadline_at", sa.Text, nullable=True, index=True,
              comment="when a claimed or in-progress task times out; NULL: not being worked on"),
    sa.Column("updated_at", sa.Text, nullable=False, comment="the last change of status"),
    sa.Column("session_key", sa.Text, nullable=True, comment="the session of its last dispatched run"),
    sa.CheckConstraint(f"status IN ({', '.join(repr(s) for s in TASK_STATUSES)})", name="status_known"),
    sa.CheckConstraint("timeout_seconds BETWEEN 1 AND 604800", name="timeout_range"),
    sa.CheckConstraint(f"(result IS NULL OR length(result) <= {TASK_TEXT_MAX_LENGTH}) "
                       f"AND (error IS NULL OR length(error) <= {TASK_TEXT_MAX_LENGTH}) "
                       f"AND length(description) <= {TASK_TEXT_MAX_LENGTH}", name="text_short"),
    id_columns=("id", "tenant_id", "team_id", "created_by_agent_id", "assignee_agent_id", "claimed_by_agent_id"),
)

team_task_attachments = _table(
    "team_task_attachments",
    id_pk("team-task-attachment"),
    tenant(),
    ref("task_id", "team_tasks.id", on_delete="CASCADE", index=True),
    ref("created_by_agent_id", "agents.id", on_delete="SET NULL", nullable=True, index=True),
    ref("vault_document_id", "vault_documents.id", on_delete="SET NULL", nullable=True, index=True),
    sa.Column("name", sa.Text, nullable=False),
    created_at(),
    id_columns=("id", "tenant_id", "task_id", "created_by_agent_id", "vault_document_id"),
)

# Telemetry: append-only and high-volume, so no foreign keys; IDs are checked on the way in.
traces = sa.Table(
    "traces",
    metadata,
    sa.Column("trace_id", sa.Text, primary_key=True, comment="OpenTelemetry trace ID (32 hex)"),
    soft_ref("tenant_id", "organizations.id"),
    soft_ref("agent_id", "agents.id"),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("started_at", sa.Text, nullable=False),
    sa.Column("ended_at", sa.Text, nullable=True),
    id_check("tenant_id"),
    id_check("agent_id"),
    sa.Index("ix_traces_agent_id", "agent_id"),
    sa.Index("ix_traces_tenant_id", "tenant_id"),
)

spans = sa.Table(
    "spans",
    metadata,
    sa.Column("span_id", sa.Text, primary_key=True, comment="OpenTelemetry span ID (16 hex)"),
    sa.Column("trace_id", sa.Text, nullable=False, index=True),
    soft_ref("tenant_id", "organizations.id"),
    soft_ref("agent_id", "agents.id"),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("started_at", sa.Text, nullable=False),
    sa.Column("duration_ms", sa.Float, nullable=False),
    sa.Column("attributes", sa.Text, nullable=False, server_default="{}"),
    id_check("tenant_id"),
    id_check("agent_id"),
    sa.Index("ix_spans_agent_id", "agent_id"),
    sa.Index("ix_spans_tenant_id", "tenant_id"),
)

usage_snapshots = sa.Table(
    "usage_snapshots",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    soft_ref("tenant_id", "organizations.id"),
    soft_ref("agent_id", "agents.id"),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("input_tokens", sa.Integer, nullable=False),
    sa.Column("output_tokens", sa.Integer, nullable=False),
    sa.Column("recorded_at", sa.Text, nullable=False),
    sa.Column("cached_tokens", sa.Integer, nullable=True,
              comment="prompt tokens the provider served from its cache; NULL when it does not say"),
    sa.Column("provider", sa.Text, nullable=True, comment="the agent's config.model.provider (offline, openai)"),
    sa.Column("run_id", sa.Text, nullable=True, comment="the run that made the call (16 hex); a run makes one "
              "call per round of tool calls"),
    sa.Column("session_key", sa.Text, nullable=True, comment="the session the run belongs to"),
    id_check("tenant_id"),
    id_check("agent_id"),
    sa.Index("ix_usage_snapshots_agent_id", "agent_id"),
    sa.Index("ix_usage_snapshots_tenant_id", "tenant_id"),
    sa.Index("ix_usage_snapshots_tenant_id_recorded_at", "tenant_id", "recorded_at"),
)


# What a model's tokens cost the organization (migration 0017): one price per provider, model and the time it
# takes effect from; a usage snapshot is costed with the price in effect at its own ``recorded_at``, so a new
# price never rewrites the cost of earlier calls.  Money is integer micro-units of ``currency`` (no floats).
model_prices = _table(
    "model_prices",
    tenant(),
    sa.Column("provider", sa.Text, nullable=False, comment="the provider the usage names (openai, anthropic, offline)"),
    sa.Column("model", sa.Text, nullable=False, comment="the model name as usage snapshots record it"),
    sa.Column("effective_from", sa.Text, nullable=False, comment="UTC, the store's format: usage from then on"),
    sa.Column("currency", sa.Text, nullable=False, comment="ISO 4217 code, three upper-case letters"),
    sa.Column("input_micros_per_million", sa.BigInteger, nullable=False,
              comment="micro-units of the currency per million prompt tokens"),
    sa.Column("output_micros_per_million", sa.BigInteger, nullable=False,
              comment="micro-units of the currency per million completion tokens"),
    created_at(),
    sa.PrimaryKeyConstraint("tenant_id", "provider", "model", "effective_from"),
    sa.CheckConstraint("length(currency) = 3 AND trim(currency, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ') = ''",
                       name="currency_is_a_code"),
    sa.CheckConstraint("input_micros_per_million >= 0 AND output_micros_per_million >= 0",
                       name="prices_are_not_negative"),
    id_columns=("tenant_id",),
)

# The durable event bus (agentfy.events): the outbox, written in the same transaction as the change that
# caused each event.  Its tenant and agent IDs are wire data: validated by the bus's publish-time policy
# (warn or refuse), not by a CHECK, so that a bad value is stored and dead-lettered instead of lost.

event_outbox = sa.Table(
    "event_outbox",
    metadata,
    sa.Column("id", sa.Text, primary_key=True, comment="domain-event-<adjective>-<noun>-<suffix>",
              info={"id_prefix": "domain-event"}),
    # Not soft references: an event is a message, and a delivered one is history; the orphan scan would
    # otherwise report every event of a deleted agent.  The cutover scans these columns as text.
    sa.Column("tenant_id", sa.Text, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("source_id", sa.Text, nullable=False, comment="what the event is about; dedup key with tenant and type"),
    sa.Column("agent_id", sa.Text, nullable=True),
    sa.Column("user_id", sa.Text, nullable=True),
    sa.Column("occurred_at", sa.Text, nullable=False),
    json_column("payload"),
    sa.Column("status", sa.Text, nullable=False, server_default="pending"),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("stops", sa.Integer, nullable=False, server_default="0",
              comment="leases that ran out while a worker held it (the worker stopped)"),
    sa.Column("available_at", sa.Text, nullable=False),
    sa.Column("claimed_by", sa.Text, nullable=True),
    sa.Column("claimed_until", sa.Text, nullable=True),
    sa.Column("last_error", sa.Text, nullable=True),
    sa.Column("finished_at", sa.Text, nullable=True),
    sa.UniqueConstraint("tenant_id", "type", "source_id", name="uq_event_outbox_dedup"),
    sa.Index("ix_event_outbox_status_available", "status", "available_at"),
    # Suspects (an event whose worker stopped while holding it) are claimed one at a time; they are few, so
    # finding the next one must not scan the whole backlog.
    sa.Index("ix_event_outbox_suspects", "status", "stops", "available_at",
             sqlite_where=sa.text("stops > 0"), postgresql_where=sa.text("stops > 0")),
    sa.CheckConstraint("status IN ('pending', 'processing', 'done', 'dead')", name="status_known"),
    id_check("id"),
)

# Durable counts of what the bus reports (observer warnings, dead letters) per UTC day, so a gate such as
# "no non-ID agent warning for 72 hours" can be checked across processes and restarts.
event_bus_counters = sa.Table(
    "event_bus_counters",
    metadata,
    sa.Column("day", sa.Text, primary_key=True, comment="UTC date, YYYY-MM-DD"),
    sa.Column("name", sa.Text, primary_key=True, comment="e.g. eventbus.non_id_agent_id, eventbus.dead_letter"),
    sa.Column("total", sa.Integer, nullable=False, server_default="0"),
)

# The gateway's credentials (agentfy.gateway.auth).  An API key belongs to one organization and carries a
# role; the platform organization's keys with ``platform_admin`` manage organizations.  Only a SHA-256 hash
# and a short visible prefix are stored; the key itself is shown once.
api_keys = _table(
    "api_keys",
    id_pk("api-key"),
    tenant(),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    ref("user_id", "users.id", on_delete="SET NULL", nullable=True, index=True),
    sa.Column("platform_admin", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("key_prefix", sa.Text, nullable=False),
    sa.Column("key_hash", sa.Text, nullable=False, unique=True),
    created_at(),
    sa.Column("revoked_at", sa.Text, nullable=True),
    sa.Column("expires_at", sa.Text, nullable=True, comment="the key stops working then (NULL: never)"),
    sa.CheckConstraint(_ROLE_IN, name="role_known"),
    id_columns=("id", "tenant_id", "user_id"),
)

# Chat-platform bindings (agentfy.channels): which agent of which tenant a bot or application is.  A webhook
# names only the platform's address (a Telegram bot's username, a Discord application's ID), so the address is
# unique per platform across every tenant: the webhook must map to exactly one tenant, and that tenant comes
# from this row, never from the request.  An agent has at most one binding per platform.  The bot token is
# encrypted like an organization credential (AES-256-GCM, the tenant's ID as associated data), in the row
# itself so that it goes with the binding (and with the agent and the organization) when they are deleted.
channel_bindings = sa.Table(
    "channel_bindings",
    metadata,
    sa.Column("platform", sa.Text, nullable=False),
    sa.Column("address", sa.Text, nullable=False,
              comment="telegram: the bot's username in lower case; discord: the application ID"),
    tenant(),
    ref("agent_id", "agents.id", on_delete="CASCADE", index=True),
    sa.Column("name", sa.Text, nullable=False, comment="the address as the admin wrote it (the bot's @username)"),
    sa.Column("verifier", sa.Text, nullable=False,
              comment="telegram: SHA-256 (hex) of the webhook's secret token; discord: the Ed25519 public key (hex)"),
    sa.Column("token_nonce", sa.LargeBinary, nullable=True),
    sa.Column("token_ciphertext", sa.LargeBinary, nullable=True, comment="the bot token, encrypted"),
    created_at(),
    sa.Column("updated_at", sa.Text, nullable=False),
    sa.PrimaryKeyConstraint("platform", "address"),
    sa.UniqueConstraint("tenant_id", "agent_id", "platform"),
    sa.CheckConstraint("platform IN ('telegram', 'discord')", name="platform_known"),
    sa.CheckConstraint("length(address) BETWEEN 1 AND 100", name="address_length"),
    id_check("tenant_id"),
    id_check("agent_id"),
)

# Who may talk to an agent through its bots (agentfy.channels.access): the agent's policy for direct messages
# and for group chats (no row: ``open`` and ``mention``), and the senders it knows by platform and the sender's
# numeric ID: ``allowed`` (the allowlist) or ``pending`` (a pairing code was sent; only the code's SHA-256 is
# kept, and it stays after approval so a second use is told apart from a wrong code).
channel_access = sa.Table(
    "channel_access",
    metadata,
    tenant(),
    ref("agent_id", "agents.id", on_delete="CASCADE", primary_key=True),
    sa.Column("dm_policy", sa.Text, nullable=False, comment="open, allowlist or pairing"),
    sa.Column("group_policy", sa.Text, nullable=False, comment="mention or all"),
    sa.Column("updated_at", sa.Text, nullable=False),
    sa.CheckConstraint("dm_policy IN ('open', 'allowlist', 'pairing')", name="dm_policy_known"),
    sa.CheckConstraint("group_policy IN ('mention', 'all')", name="group_policy_known"),
    id_check("tenant_id"),
    id_check("agent_id"),
)

channel_senders = sa.Table(
    "channel_senders",
    metadata,
    tenant(),
    ref("agent_id", "agents.id", on_delete="CASCADE"),
    sa.Column("platform", sa.Text, nullable=False),
    sa.Column("sender_id", sa.Text, nullable=False, comment="the platform's numeric user ID, as decimal text"),
    sa.Column("status", sa.Text, nullable=False, comment="allowed or pending"),
    sa.Column("code_digest", sa.Text, nullable=True, comment="SHA-256 (hex) of the pairing code; NULL if none"),
    sa.Column("expires_at", sa.Text, nullable=True, comment="when the pairing code stops working"),
    created_at(),
    sa.Column("approved_at", sa.Text, nullable=True),
    sa.PrimaryKeyConstraint("agent_id", "platform", "sender_id"),
    sa.Index("ix_channel_senders_agent_id_code_digest", "agent_id", "code_digest"),
    sa.CheckConstraint("platform IN ('telegram', 'discord')", name="platform_known"),
    sa.CheckConstraint("status IN ('allowed', 'pending')", name="status_known"),
    sa.CheckConstraint("length(sender_id) BETWEEN 1 AND 20 AND trim(sender_id, '0123456789') = ''",
                       name="sender_id_is_number"),
    id_check("tenant_id"),
    id_check("agent_id"),
)

# The change feed's log on SQLite: every change a transaction records is also written here, in that
# transaction, so another process on the same file (a CLI command beside `agentfy serve`) is heard: each
# process tails the log for changes made by others.  PostgreSQL uses LISTEN/NOTIFY and leaves it empty.
change_log = sa.Table(
    "change_log",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("origin", sa.Text, nullable=False, comment="the process (feed) that made the change"),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("created_at", sa.Text, nullable=False),
    sqlite_autoincrement=True,
)

# Platform-wide settings the gateway keeps in the database (the signing epoch of signed contexts: bumping
# it revokes every signed context at once).
platform_settings = sa.Table(
    "platform_settings",
    metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)


# The ID cutover's record (agentfy.cutover): one row per identity it changed, so that references kept by
# other systems (providers, bookmarks) resolve through the chain UUID -> organization-… -> org-….  History:
# no FK, and the values are what they were.
id_migrations = sa.Table(
    "id_migrations",
    metadata,
    sa.Column("old_id", sa.Text, primary_key=True),
    sa.Column("new_id", sa.Text, nullable=False, index=True),
    sa.Column("entity", sa.Text, nullable=False, comment="the model name, e.g. Organization"),
    sa.Column("run_id", sa.Text, nullable=False, comment="the cutover run that made the hop"),
    sa.Column("migrated_at", sa.Text, nullable=False),
)
