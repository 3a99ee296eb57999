"""gateway credentials

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table('platform_settings',
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('value', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_platform_settings'))
    )
    op.create_table('api_keys',
    sa.Column('id', sa.Text(), nullable=False, comment='api-key-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('name', sa.Text(), nullable=False),
    sa.Column('role', sa.Text(), nullable=False),
    sa.Column('user_id', sa.Text(), nullable=True),
    sa.Column('platform_admin', sa.Boolean(), server_default=sa.false(), nullable=False),
    sa.Column('key_prefix', sa.Text(), nullable=False),
    sa.Column('key_hash', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.Column('revoked_at', sa.Text(), nullable=True),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_api_keys_id_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_api_keys_tenant_id_is_id')),
    sa.CheckConstraint("length(user_id) BETWEEN 1 AND 80 AND trim(user_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_api_keys_user_id_is_id')),
    sa.CheckConstraint("role IN ('owner', 'admin', 'operator', 'member')", name=op.f('ck_api_keys_role_known')),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_api_keys_tenant_id_organizations'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_api_keys_user_id_users'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_keys')),
    sa.UniqueConstraint('key_hash', name=op.f('uq_api_keys_key_hash'))
    )
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_keys_tenant_id'), ['tenant_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_api_keys_user_id'), ['user_id'], unique=False)




def downgrade() -> None:

    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_keys_user_id'))
        batch_op.drop_index(batch_op.f('ix_api_keys_tenant_id'))

    op.drop_table('api_keys')
    op.drop_table('platform_settings')

