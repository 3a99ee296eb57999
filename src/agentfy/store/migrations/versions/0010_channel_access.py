"""channel access: an agent's DM and group policy, its allowlisted senders and pending pairings

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

_ID = "BETWEEN 1 AND 80 AND trim({0}, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''"


def upgrade() -> None:

    op.create_table('channel_access',
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('dm_policy', sa.Text(), nullable=False, comment='open, allowlist or pairing'),
    sa.Column('group_policy', sa.Text(), nullable=False, comment='mention or all'),
    sa.Column('updated_at', sa.Text(), nullable=False),
    sa.CheckConstraint("dm_policy IN ('open', 'allowlist', 'pairing')", name=op.f('ck_channel_access_dm_policy_known')),
    sa.CheckConstraint("group_policy IN ('mention', 'all')", name=op.f('ck_channel_access_group_policy_known')),
    sa.CheckConstraint("length(agent_id) " + _ID.format('agent_id'), name=op.f('ck_channel_access_agent_id_is_id')),
    sa.CheckConstraint("length(tenant_id) " + _ID.format('tenant_id'), name=op.f('ck_channel_access_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_channel_access_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_channel_access_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('agent_id', name=op.f('pk_channel_access'))
    )
    with op.batch_alter_table('channel_access', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_channel_access_tenant_id'), ['tenant_id'], unique=False)

    op.create_table('channel_senders',
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('platform', sa.Text(), nullable=False),
    sa.Column('sender_id', sa.Text(), nullable=False, comment='the platform\'s numeric user ID, as decimal text'),
    sa.Column('status', sa.Text(), nullable=False, comment='allowed or pending'),
    sa.Column('code_digest', sa.Text(), nullable=True, comment='SHA-256 (hex) of the pairing code; NULL if none'),
    sa.Column('expires_at', sa.Text(), nullable=True, comment='when the pairing code stops working'),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.Column('approved_at', sa.Text(), nullable=True),
    sa.CheckConstraint("platform IN ('telegram', 'discord')", name=op.f('ck_channel_senders_platform_known')),
    sa.CheckConstraint("status IN ('allowed', 'pending')", name=op.f('ck_channel_senders_status_known')),
    sa.CheckConstraint("length(sender_id) BETWEEN 1 AND 20 AND trim(sender_id, '0123456789') = ''", name=op.f('ck_channel_senders_sender_id_is_number')),
    sa.CheckConstraint("length(agent_id) " + _ID.format('agent_id'), name=op.f('ck_channel_senders_agent_id_is_id')),
    sa.CheckConstraint("length(tenant_id) " + _ID.format('tenant_id'), name=op.f('ck_channel_senders_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_channel_senders_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_channel_senders_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('agent_id', 'platform', 'sender_id', name=op.f('pk_channel_senders'))
    )
    with op.batch_alter_table('channel_senders', schema=None) as batch_op:
        batch_op.create_index('ix_channel_senders_agent_id_code_digest', ['agent_id', 'code_digest'], unique=False)
        batch_op.create_index(batch_op.f('ix_channel_senders_tenant_id'), ['tenant_id'], unique=False)


def downgrade() -> None:

    with op.batch_alter_table('channel_senders', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_channel_senders_tenant_id'))
        batch_op.drop_index('ix_channel_senders_agent_id_code_digest')

    op.drop_table('channel_senders')
    with op.batch_alter_table('channel_access', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_channel_access_tenant_id'))

    op.drop_table('channel_access')
