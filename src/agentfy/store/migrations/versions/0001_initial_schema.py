"""initial schema

Revision ID: 0001
Revises: 
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table('org_audit',
    sa.Column('id', sa.Text(), nullable=False, comment='technical UUID, not a registry ID'),
    sa.Column('org_id', sa.Text(), nullable=False),
    sa.Column('actor_id', sa.Text(), nullable=True),
    sa.Column('action', sa.Text(), nullable=False),
    sa.Column('target_id', sa.Text(), nullable=True),
    sa.Column('details', sa.Text(), server_default='{}', nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_org_audit'))
    )
    with op.batch_alter_table('org_audit', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_org_audit_org_id'), ['org_id'], unique=False)

    op.create_table('organizations',
    sa.Column('id', sa.Text(), nullable=False, comment='org-<adjective>-<noun>-<suffix>'),
    sa.Column('slug', sa.Text(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('default_agent_id', sa.Text(), nullable=True),
    sa.Column('settings', sa.Text(), server_default='{}', nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(default_agent_id) BETWEEN 1 AND 80 AND trim(default_agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_organizations_default_agent_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_organizations_id_is_id')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_organizations')),
    sa.UniqueConstraint('slug', name=op.f('uq_organizations_slug'))
    )
    op.create_table('spans',
    sa.Column('span_id', sa.Text(), nullable=False, comment='OpenTelemetry span ID (16 hex)'),
    sa.Column('trace_id', sa.Text(), nullable=False),
    sa.Column('tenant_id', sa.Text(), nullable=True),
    sa.Column('agent_id', sa.Text(), nullable=True),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('started_at', sa.Text(), nullable=False),
    sa.Column('duration_ms', sa.Float(), nullable=False),
    sa.Column('attributes', sa.Text(), server_default='{}', nullable=False),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_spans_agent_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_spans_tenant_id_is_id')),
    sa.PrimaryKeyConstraint('span_id', name=op.f('pk_spans'))
    )
    with op.batch_alter_table('spans', schema=None) as batch_op:
        batch_op.create_index('ix_spans_agent_id', ['agent_id'], unique=False)
        batch_op.create_index('ix_spans_tenant_id', ['tenant_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_spans_trace_id'), ['trace_id'], unique=False)

    op.create_table('traces',
    sa.Column('trace_id', sa.Text(), nullable=False, comment='OpenTelemetry trace ID (32 hex)'),
    sa.Column('tenant_id', sa.Text(), nullable=True),
    sa.Column('agent_id', sa.Text(), nullable=True),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('started_at', sa.Text(), nullable=False),
    sa.Column('ended_at', sa.Text(), nullable=True),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_traces_agent_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_traces_tenant_id_is_id')),
    sa.PrimaryKeyConstraint('trace_id', name=op.f('pk_traces'))
    )
    with op.batch_alter_table('traces', schema=None) as batch_op:
        batch_op.create_index('ix_traces_agent_id', ['agent_id'], unique=False)
        batch_op.create_index('ix_traces_tenant_id', ['tenant_id'], unique=False)

    op.create_table('usage_snapshots',
    sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('tenant_id', sa.Text(), nullable=True),
    sa.Column('agent_id', sa.Text(), nullable=True),
    sa.Column('model', sa.Text(), nullable=False),
    sa.Column('input_tokens', sa.Integer(), nullable=False),
    sa.Column('output_tokens', sa.Integer(), nullable=False),
    sa.Column('recorded_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_usage_snapshots_agent_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_usage_snapshots_tenant_id_is_id')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_usage_snapshots'))
    )
    with op.batch_alter_table('usage_snapshots', schema=None) as batch_op:
        batch_op.create_index('ix_usage_snapshots_agent_id', ['agent_id'], unique=False)
        batch_op.create_index('ix_usage_snapshots_tenant_id', ['tenant_id'], unique=False)

    op.create_table('users',
    sa.Column('id', sa.Text(), nullable=False, comment='user-<adjective>-<noun>-<suffix>'),
    sa.Column('email', sa.Text(), nullable=True),
    sa.Column('display_name', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_users_id_is_id')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_users')),
    sa.UniqueConstraint('email', name=op.f('uq_users_email'))
    )
    op.create_table('agents',
    sa.Column('id', sa.Text(), nullable=False, comment='agent-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('agent_key', sa.Text(), nullable=False),
    sa.Column('display_name', sa.Text(), nullable=False),
    sa.Column('config', sa.Text(), server_default='{}', nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.Column('updated_at', sa.Text(), nullable=False),
    sa.Column('deleted_at', sa.Text(), nullable=True),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_agents_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_agents_tenant_id_is_id')),
    sa.CheckConstraint('length(agent_key) BETWEEN 1 AND 100', name=op.f('ck_agents_agent_key_length')),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_agents_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_agents'))
    )
    with op.batch_alter_table('agents', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_agents_tenant_id'), ['tenant_id'], unique=False)
        batch_op.create_index('uq_agents_tenant_key', ['tenant_id', 'agent_key'], unique=True, sqlite_where=sa.text('deleted_at IS NULL'), postgresql_where=sa.text('deleted_at IS NULL'))

    op.create_table('org_credentials',
    sa.Column('id', sa.Text(), nullable=False, comment='org-credential-<adjective>-<noun>-<suffix>'),
    sa.Column('org_id', sa.Text(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('nonce', sa.LargeBinary(), nullable=False),
    sa.Column('ciphertext', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_org_credentials_id_is_id')),
    sa.CheckConstraint("length(org_id) BETWEEN 1 AND 80 AND trim(org_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_org_credentials_org_id_is_id')),
    sa.ForeignKeyConstraint(['org_id'], ['organizations.id'], name=op.f('fk_org_credentials_org_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_org_credentials')),
    sa.UniqueConstraint('org_id', 'name', name=op.f('uq_org_credentials_org_id_name'))
    )
    op.create_table('org_members',
    sa.Column('id', sa.Text(), nullable=False, comment='org-member-<adjective>-<noun>-<suffix>'),
    sa.Column('org_id', sa.Text(), nullable=False),
    sa.Column('user_id', sa.Text(), nullable=False),
    sa.Column('role', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_org_members_id_is_id')),
    sa.CheckConstraint("length(org_id) BETWEEN 1 AND 80 AND trim(org_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_org_members_org_id_is_id')),
    sa.CheckConstraint("length(user_id) BETWEEN 1 AND 80 AND trim(user_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_org_members_user_id_is_id')),
    sa.CheckConstraint("role IN ('owner', 'admin', 'operator', 'member')", name=op.f('ck_org_members_role_known')),
    sa.ForeignKeyConstraint(['org_id'], ['organizations.id'], name=op.f('fk_org_members_org_id_organizations'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_org_members_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_org_members')),
    sa.UniqueConstraint('org_id', 'user_id', name=op.f('uq_org_members_org_id_user_id'))
    )
    with op.batch_alter_table('org_members', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_org_members_user_id'), ['user_id'], unique=False)

    op.create_table('org_policies',
    sa.Column('id', sa.Text(), nullable=False, comment='org-policy-<adjective>-<noun>-<suffix>'),
    sa.Column('org_id', sa.Text(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('document', sa.Text(), server_default='{}', nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_org_policies_id_is_id')),
    sa.CheckConstraint("length(org_id) BETWEEN 1 AND 80 AND trim(org_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_org_policies_org_id_is_id')),
    sa.ForeignKeyConstraint(['org_id'], ['organizations.id'], name=op.f('fk_org_policies_org_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_org_policies')),
    sa.UniqueConstraint('org_id', 'name', name=op.f('uq_org_policies_org_id_name'))
    )
    op.create_table('skills',
    sa.Column('id', sa.Text(), nullable=False, comment='skill-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('owner_id', sa.Text(), nullable=False, comment='the ACTOR who published it (legacy rows: the SCOPE), not an FK'),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_skills_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_skills_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_skills_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_skills')),
    sa.UniqueConstraint('tenant_id', 'name', name=op.f('uq_skills_tenant_id_name'))
    )
    with op.batch_alter_table('skills', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_skills_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('agent_config_permissions',
    sa.Column('id', sa.Text(), nullable=False, comment='agent-config-permission-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('scope', sa.Text(), nullable=False, comment='the group or guild SCOPE the grant applies to'),
    sa.Column('config_type', sa.Text(), nullable=False),
    sa.Column('sender_id', sa.Text(), nullable=False, comment='the ACTOR the grant names'),
    sa.Column('allow', sa.Boolean(), nullable=False),
    sa.Column('granted_by', sa.Text(), nullable=True),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("config_type IN ('file_writer', 'cron', 'context_file')", name=op.f('ck_agent_config_permissions_config_type_known')),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_agent_config_permissions_agent_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_agent_config_permissions_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_agent_config_permissions_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_agent_config_permissions_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_agent_config_permissions_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_agent_config_permissions')),
    sa.UniqueConstraint('agent_id', 'scope', 'config_type', 'sender_id', name='uq_agent_config_permissions_grant')
    )
    with op.batch_alter_table('agent_config_permissions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_agent_config_permissions_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('agent_links',
    sa.Column('id', sa.Text(), nullable=False, comment='agent-link-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('source_agent_id', sa.Text(), nullable=False),
    sa.Column('target_agent_id', sa.Text(), nullable=False),
    sa.Column('kind', sa.Text(), server_default='delegate', nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_agent_links_id_is_id')),
    sa.CheckConstraint("length(source_agent_id) BETWEEN 1 AND 80 AND trim(source_agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_agent_links_source_agent_id_is_id')),
    sa.CheckConstraint("length(target_agent_id) BETWEEN 1 AND 80 AND trim(target_agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_agent_links_target_agent_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_agent_links_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['source_agent_id'], ['agents.id'], name=op.f('fk_agent_links_source_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['target_agent_id'], ['agents.id'], name=op.f('fk_agent_links_target_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_agent_links_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_agent_links')),
    sa.UniqueConstraint('source_agent_id', 'target_agent_id', 'kind', name=op.f('uq_agent_links_source_agent_id_target_agent_id_kind'))
    )
    with op.batch_alter_table('agent_links', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_agent_links_source_agent_id'), ['source_agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_agent_links_target_agent_id'), ['target_agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_agent_links_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('agent_mcp_servers',
    sa.Column('id', sa.Text(), nullable=False, comment='agent-mcp-server-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('url', sa.Text(), nullable=False),
    sa.Column('config', sa.Text(), server_default='{}', nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_agent_mcp_servers_agent_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_agent_mcp_servers_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_agent_mcp_servers_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_agent_mcp_servers_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_agent_mcp_servers_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_agent_mcp_servers')),
    sa.UniqueConstraint('agent_id', 'name', name=op.f('uq_agent_mcp_servers_agent_id_name'))
    )
    with op.batch_alter_table('agent_mcp_servers', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_agent_mcp_servers_agent_id'), ['agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_agent_mcp_servers_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('cron_jobs',
    sa.Column('id', sa.Text(), nullable=False, comment='cron-job-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('created_by', sa.Text(), nullable=False, comment='the ACTOR'),
    sa.Column('user_id', sa.Text(), nullable=False, comment='the SCOPE it runs in (empty: none)'),
    sa.Column('schedule', sa.Text(), nullable=False),
    sa.Column('payload', sa.Text(), server_default='{}', nullable=False),
    sa.Column('enabled', sa.Boolean(), server_default=sa.true(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_cron_jobs_agent_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_cron_jobs_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_cron_jobs_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_cron_jobs_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_cron_jobs_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cron_jobs'))
    )
    with op.batch_alter_table('cron_jobs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_cron_jobs_agent_id'), ['agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_cron_jobs_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('episodic_summaries',
    sa.Column('id', sa.Text(), nullable=False, comment='episodic-summary-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('user_id', sa.Text(), nullable=False),
    sa.Column('session_key', sa.Text(), nullable=False),
    sa.Column('compaction_count', sa.Integer(), nullable=False),
    sa.Column('summary', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.Column('promoted_at', sa.Text(), nullable=True),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_episodic_summaries_agent_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_episodic_summaries_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_episodic_summaries_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_episodic_summaries_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_episodic_summaries_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_episodic_summaries')),
    sa.UniqueConstraint('tenant_id', 'session_key', 'compaction_count', name=op.f('uq_episodic_summaries_tenant_id_session_key_compaction_count'))
    )
    with op.batch_alter_table('episodic_summaries', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_episodic_summaries_agent_id'), ['agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_episodic_summaries_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('kg_entities',
    sa.Column('id', sa.Text(), nullable=False, comment='kg-entity-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('user_id', sa.Text(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('entity_type', sa.Text(), nullable=False),
    sa.Column('properties', sa.Text(), server_default='{}', nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_kg_entities_agent_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_kg_entities_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_kg_entities_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_kg_entities_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_kg_entities_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_kg_entities'))
    )
    with op.batch_alter_table('kg_entities', schema=None) as batch_op:
        batch_op.create_index('ix_kg_entities_agent_name', ['agent_id', 'name'], unique=False)
        batch_op.create_index(batch_op.f('ix_kg_entities_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('memory_documents',
    sa.Column('id', sa.Text(), nullable=False, comment='memory-document-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('user_id', sa.Text(), nullable=False, comment="the memory SCOPE (empty: the agent's own)"),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('metadata', sa.Text(), server_default='{}', nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.Column('updated_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_memory_documents_agent_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_memory_documents_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_memory_documents_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_memory_documents_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_memory_documents_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memory_documents')),
    sa.UniqueConstraint('agent_id', 'user_id', 'path', name=op.f('uq_memory_documents_agent_id_user_id_path'))
    )
    with op.batch_alter_table('memory_documents', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_memory_documents_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('sessions',
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('session_key', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('user_id', sa.Text(), nullable=False, comment='the memory SCOPE (group:…, guild:…, or the sender)'),
    sa.Column('status', sa.Text(), server_default='open', nullable=False),
    sa.Column('compaction_count', sa.Integer(), server_default='0', nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.Column('completed_at', sa.Text(), nullable=True),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_sessions_agent_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_sessions_tenant_id_is_id')),
    sa.CheckConstraint("status IN ('open', 'completed')", name=op.f('ck_sessions_status_known')),
    sa.CheckConstraint('length(session_key) BETWEEN 1 AND 200', name=op.f('ck_sessions_session_key_length')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_sessions_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_sessions_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('tenant_id', 'session_key', name=op.f('pk_sessions'))
    )
    with op.batch_alter_table('sessions', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_sessions_agent_id'), ['agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_sessions_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('teams',
    sa.Column('id', sa.Text(), nullable=False, comment='team-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('lead_agent_id', sa.Text(), nullable=True),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_teams_id_is_id')),
    sa.CheckConstraint("length(lead_agent_id) BETWEEN 1 AND 80 AND trim(lead_agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_teams_lead_agent_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_teams_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['lead_agent_id'], ['agents.id'], name=op.f('fk_teams_lead_agent_id_agents'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_teams_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_teams'))
    )
    with op.batch_alter_table('teams', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_teams_lead_agent_id'), ['lead_agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_teams_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('vault_documents',
    sa.Column('id', sa.Text(), nullable=False, comment='vault-document-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('content_type', sa.Text(), nullable=False),
    sa.Column('size', sa.Integer(), nullable=False),
    sa.Column('content', sa.LargeBinary(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_vault_documents_agent_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_vault_documents_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_vault_documents_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_vault_documents_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_vault_documents_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_vault_documents')),
    sa.UniqueConstraint('agent_id', 'path', name=op.f('uq_vault_documents_agent_id_path'))
    )
    with op.batch_alter_table('vault_documents', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_vault_documents_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('kg_relations',
    sa.Column('id', sa.Text(), nullable=False, comment='kg-relation-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('source_entity_id', sa.Text(), nullable=False),
    sa.Column('target_entity_id', sa.Text(), nullable=False),
    sa.Column('relation', sa.Text(), nullable=False),
    sa.Column('properties', sa.Text(), server_default='{}', nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_kg_relations_agent_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_kg_relations_id_is_id')),
    sa.CheckConstraint("length(source_entity_id) BETWEEN 1 AND 80 AND trim(source_entity_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_kg_relations_source_entity_id_is_id')),
    sa.CheckConstraint("length(target_entity_id) BETWEEN 1 AND 80 AND trim(target_entity_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_kg_relations_target_entity_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_kg_relations_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_kg_relations_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['source_entity_id'], ['kg_entities.id'], name=op.f('fk_kg_relations_source_entity_id_kg_entities'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['target_entity_id'], ['kg_entities.id'], name=op.f('fk_kg_relations_target_entity_id_kg_entities'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_kg_relations_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_kg_relations'))
    )
    with op.batch_alter_table('kg_relations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_kg_relations_agent_id'), ['agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_kg_relations_source_entity_id'), ['source_entity_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_kg_relations_target_entity_id'), ['target_entity_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_kg_relations_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('memory_chunks',
    sa.Column('id', sa.Text(), nullable=False, comment='memory-chunk-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('document_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('content', sa.Text(), nullable=False),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_memory_chunks_agent_id_is_id')),
    sa.CheckConstraint("length(document_id) BETWEEN 1 AND 80 AND trim(document_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_memory_chunks_document_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_memory_chunks_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_memory_chunks_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_memory_chunks_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['document_id'], ['memory_documents.id'], name=op.f('fk_memory_chunks_document_id_memory_documents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_memory_chunks_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memory_chunks'))
    )
    with op.batch_alter_table('memory_chunks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_memory_chunks_agent_id'), ['agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_memory_chunks_document_id'), ['document_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_memory_chunks_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('session_messages',
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('session_key', sa.Text(), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('role', sa.Text(), nullable=False),
    sa.Column('sender_id', sa.Text(), nullable=True, comment='the ACTOR, when a person sent it'),
    sa.Column('content', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_session_messages_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['tenant_id', 'session_key'], ['sessions.tenant_id', 'sessions.session_key'], name=op.f('fk_session_messages_tenant_id_session_key_sessions'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('tenant_id', 'session_key', 'seq', name=op.f('pk_session_messages'))
    )
    op.create_table('team_api_keys',
    sa.Column('id', sa.Text(), nullable=False, comment='team-api-key-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('team_id', sa.Text(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('key_prefix', sa.Text(), nullable=False, comment='the first characters, shown to identify the key'),
    sa.Column('key_hash', sa.Text(), nullable=False, comment='SHA-256 of the key; the key itself is not stored'),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.Column('revoked_at', sa.Text(), nullable=True),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_api_keys_id_is_id')),
    sa.CheckConstraint("length(team_id) BETWEEN 1 AND 80 AND trim(team_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_api_keys_team_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_api_keys_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_team_api_keys_team_id_teams'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_team_api_keys_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_team_api_keys')),
    sa.UniqueConstraint('key_hash', name=op.f('uq_team_api_keys_key_hash'))
    )
    with op.batch_alter_table('team_api_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_team_api_keys_team_id'), ['team_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_team_api_keys_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('team_members',
    sa.Column('id', sa.Text(), nullable=False, comment='team-member-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('team_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('role', sa.Text(), server_default='member', nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_members_agent_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_members_id_is_id')),
    sa.CheckConstraint("length(team_id) BETWEEN 1 AND 80 AND trim(team_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_members_team_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_members_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_team_members_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_team_members_team_id_teams'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_team_members_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_team_members')),
    sa.UniqueConstraint('team_id', 'agent_id', name=op.f('uq_team_members_team_id_agent_id'))
    )
    with op.batch_alter_table('team_members', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_team_members_agent_id'), ['agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_team_members_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('team_tasks',
    sa.Column('id', sa.Text(), nullable=False, comment='team-task-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('team_id', sa.Text(), nullable=False),
    sa.Column('created_by_agent_id', sa.Text(), nullable=True),
    sa.Column('assignee_agent_id', sa.Text(), nullable=True),
    sa.Column('title', sa.Text(), nullable=False),
    sa.Column('status', sa.Text(), server_default='open', nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(assignee_agent_id) BETWEEN 1 AND 80 AND trim(assignee_agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_tasks_assignee_agent_id_is_id')),
    sa.CheckConstraint("length(created_by_agent_id) BETWEEN 1 AND 80 AND trim(created_by_agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_tasks_created_by_agent_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_tasks_id_is_id')),
    sa.CheckConstraint("length(team_id) BETWEEN 1 AND 80 AND trim(team_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_tasks_team_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_tasks_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['assignee_agent_id'], ['agents.id'], name=op.f('fk_team_tasks_assignee_agent_id_agents'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['created_by_agent_id'], ['agents.id'], name=op.f('fk_team_tasks_created_by_agent_id_agents'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_team_tasks_team_id_teams'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_team_tasks_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_team_tasks'))
    )
    with op.batch_alter_table('team_tasks', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_team_tasks_assignee_agent_id'), ['assignee_agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_team_tasks_created_by_agent_id'), ['created_by_agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_team_tasks_team_id'), ['team_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_team_tasks_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('team_task_attachments',
    sa.Column('id', sa.Text(), nullable=False, comment='team-task-attachment-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('task_id', sa.Text(), nullable=False),
    sa.Column('created_by_agent_id', sa.Text(), nullable=True),
    sa.Column('vault_document_id', sa.Text(), nullable=True),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(created_by_agent_id) BETWEEN 1 AND 80 AND trim(created_by_agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_task_attachments_created_by_agent_id_is_id')),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_task_attachments_id_is_id')),
    sa.CheckConstraint("length(task_id) BETWEEN 1 AND 80 AND trim(task_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_task_attachments_task_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_task_attachments_tenant_id_is_id')),
    sa.CheckConstraint("length(vault_document_id) BETWEEN 1 AND 80 AND trim(vault_document_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_team_task_attachments_vault_document_id_is_id')),
    sa.ForeignKeyConstraint(['created_by_agent_id'], ['agents.id'], name=op.f('fk_team_task_attachments_created_by_agent_id_agents'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['task_id'], ['team_tasks.id'], name=op.f('fk_team_task_attachments_task_id_team_tasks'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_team_task_attachments_tenant_id_organizations'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['vault_document_id'], ['vault_documents.id'], name=op.f('fk_team_task_attachments_vault_document_id_vault_documents'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_team_task_attachments'))
    )
    with op.batch_alter_table('team_task_attachments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_team_task_attachments_created_by_agent_id'), ['created_by_agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_team_task_attachments_task_id'), ['task_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_team_task_attachments_tenant_id'), ['tenant_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_team_task_attachments_vault_document_id'), ['vault_document_id'], unique=False)




def downgrade() -> None:

    with op.batch_alter_table('team_task_attachments', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_team_task_attachments_vault_document_id'))
        batch_op.drop_index(batch_op.f('ix_team_task_attachments_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_team_task_attachments_task_id'))
        batch_op.drop_index(batch_op.f('ix_team_task_attachments_created_by_agent_id'))

    op.drop_table('team_task_attachments')
    with op.batch_alter_table('team_tasks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_team_tasks_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_team_tasks_team_id'))
        batch_op.drop_index(batch_op.f('ix_team_tasks_created_by_agent_id'))
        batch_op.drop_index(batch_op.f('ix_team_tasks_assignee_agent_id'))

    op.drop_table('team_tasks')
    with op.batch_alter_table('team_members', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_team_members_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_team_members_agent_id'))

    op.drop_table('team_members')
    with op.batch_alter_table('team_api_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_team_api_keys_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_team_api_keys_team_id'))

    op.drop_table('team_api_keys')
    op.drop_table('session_messages')
    with op.batch_alter_table('memory_chunks', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_memory_chunks_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_memory_chunks_document_id'))
        batch_op.drop_index(batch_op.f('ix_memory_chunks_agent_id'))

    op.drop_table('memory_chunks')
    with op.batch_alter_table('kg_relations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_kg_relations_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_kg_relations_target_entity_id'))
        batch_op.drop_index(batch_op.f('ix_kg_relations_source_entity_id'))
        batch_op.drop_index(batch_op.f('ix_kg_relations_agent_id'))

    op.drop_table('kg_relations')
    with op.batch_alter_table('vault_documents', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_vault_documents_tenant_id'))

    op.drop_table('vault_documents')
    with op.batch_alter_table('teams', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_teams_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_teams_lead_agent_id'))

    op.drop_table('teams')
    with op.batch_alter_table('sessions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_sessions_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_sessions_agent_id'))

    op.drop_table('sessions')
    with op.batch_alter_table('memory_documents', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_memory_documents_tenant_id'))

    op.drop_table('memory_documents')
    with op.batch_alter_table('kg_entities', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_kg_entities_tenant_id'))
        batch_op.drop_index('ix_kg_entities_agent_name')

    op.drop_table('kg_entities')
    with op.batch_alter_table('episodic_summaries', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_episodic_summaries_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_episodic_summaries_agent_id'))

    op.drop_table('episodic_summaries')
    with op.batch_alter_table('cron_jobs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_cron_jobs_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_cron_jobs_agent_id'))

    op.drop_table('cron_jobs')
    with op.batch_alter_table('agent_mcp_servers', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_agent_mcp_servers_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_agent_mcp_servers_agent_id'))

    op.drop_table('agent_mcp_servers')
    with op.batch_alter_table('agent_links', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_agent_links_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_agent_links_target_agent_id'))
        batch_op.drop_index(batch_op.f('ix_agent_links_source_agent_id'))

    op.drop_table('agent_links')
    with op.batch_alter_table('agent_config_permissions', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_agent_config_permissions_tenant_id'))

    op.drop_table('agent_config_permissions')
    with op.batch_alter_table('skills', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_skills_tenant_id'))

    op.drop_table('skills')
    op.drop_table('org_policies')
    with op.batch_alter_table('org_members', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_org_members_user_id'))

    op.drop_table('org_members')
    op.drop_table('org_credentials')
    with op.batch_alter_table('agents', schema=None) as batch_op:
        batch_op.drop_index('uq_agents_tenant_key', sqlite_where=sa.text('deleted_at IS NULL'), postgresql_where=sa.text('deleted_at IS NULL'))
        batch_op.drop_index(batch_op.f('ix_agents_tenant_id'))

    op.drop_table('agents')
    op.drop_table('users')
    with op.batch_alter_table('usage_snapshots', schema=None) as batch_op:
        batch_op.drop_index('ix_usage_snapshots_tenant_id')
        batch_op.drop_index('ix_usage_snapshots_agent_id')

    op.drop_table('usage_snapshots')
    with op.batch_alter_table('traces', schema=None) as batch_op:
        batch_op.drop_index('ix_traces_tenant_id')
        batch_op.drop_index('ix_traces_agent_id')

    op.drop_table('traces')
    with op.batch_alter_table('spans', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_spans_trace_id'))
        batch_op.drop_index('ix_spans_tenant_id')
        batch_op.drop_index('ix_spans_agent_id')

    op.drop_table('spans')
    op.drop_table('organizations')
    with op.batch_alter_table('org_audit', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_org_audit_org_id'))

    op.drop_table('org_audit')

