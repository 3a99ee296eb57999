"""channel bindings: which agent of which tenant a Telegram bot or Discord application is

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table('channel_bindings',
    sa.Column('platform', sa.Text(), nullable=False),
    sa.Column('address', sa.Text(), nullable=False, comment='telegram: the bot\'s username in lower case; discord: the application ID'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('agent_id', sa.Text(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False, comment='the address as the admin wrote it (the bot\'s @username)'),
    sa.Column('verifier', sa.Text(), nullable=False, comment='telegram: SHA-256 (hex) of the webhook\'s secret token; discord: the Ed25519 public key (hex)'),
    sa.Column('token_nonce', sa.LargeBinary(), nullable=True),
    sa.Column('token_ciphertext', sa.LargeBinary(), nullable=True, comment='the bot token, encrypted'),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.Column('updated_at', sa.Text(), nullable=False),
    sa.CheckConstraint("length(address) BETWEEN 1 AND 100", name=op.f('ck_channel_bindings_address_length')),
    sa.CheckConstraint("length(agent_id) BETWEEN 1 AND 80 AND trim(agent_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_channel_bindings_agent_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_channel_bindings_tenant_id_is_id')),
    sa.CheckConstraint("platform IN ('telegram', 'discord')", name=op.f('ck_channel_bindings_platform_known')),
    sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_channel_bindings_agent_id_agents'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_channel_bindings_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('platform', 'address', name=op.f('pk_channel_bindings')),
    sa.UniqueConstraint('tenant_id', 'agent_id', 'platform', name=op.f('uq_channel_bindings_tenant_id_agent_id_platform'))
    )
    with op.batch_alter_table('channel_bindings', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_channel_bindings_agent_id'), ['agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_channel_bindings_tenant_id'), ['tenant_id'], unique=False)


def downgrade() -> None:

    with op.batch_alter_table('channel_bindings', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_channel_bindings_tenant_id'))
        batch_op.drop_index(batch_op.f('ix_channel_bindings_agent_id'))

    op.drop_table('channel_bindings')
