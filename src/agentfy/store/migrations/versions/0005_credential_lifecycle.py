"""credential lifecycle: API keys that expire, invitations to join an organization; the SQLite change log

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.add_column(sa.Column('expires_at', sa.Text(), nullable=True,
                                      comment='the key stops working then (NULL: never)'))

    op.create_table('org_invitations',
    sa.Column('id', sa.Text(), nullable=False, comment='org-invitation-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('user_id', sa.Text(), nullable=False),
    sa.Column('role', sa.Text(), nullable=False),
    sa.Column('status', sa.Text(), server_default='pending', nullable=False),
    sa.Column('invited_by', sa.Text(), nullable=True),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.Column('expires_at', sa.Text(), nullable=False),
    sa.Column('responded_at', sa.Text(), nullable=True),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_org_invitations_id_is_id')),
    sa.CheckConstraint("length(invited_by) BETWEEN 1 AND 80 AND trim(invited_by, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_org_invitations_invited_by_is_id')),
    sa.CheckConstraint("length(tenant_id) BETWEEN 1 AND 80 AND trim(tenant_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_org_invitations_tenant_id_is_id')),
    sa.CheckConstraint("length(user_id) BETWEEN 1 AND 80 AND trim(user_id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_org_invitations_user_id_is_id')),
    sa.CheckConstraint("role IN ('owner', 'admin', 'operator', 'member')", name=op.f('ck_org_invitations_role_known')),
    sa.CheckConstraint("status IN ('pending', 'accepted', 'declined', 'withdrawn')", name=op.f('ck_org_invitations_status_known')),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_org_invitations_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_org_invitations'))
    )
    with op.batch_alter_table('org_invitations', schema=None) as batch_op:
        batch_op.create_index('ix_org_invitations_pending', ['tenant_id', 'user_id'], unique=True,
                              sqlite_where=sa.text("status = 'pending'"), postgresql_where=sa.text("status = 'pending'"))
        batch_op.create_index('ix_org_invitations_user_id', ['user_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_org_invitations_tenant_id'), ['tenant_id'], unique=False)


    op.create_table('change_log',
    sa.Column('seq', sa.Integer(), autoincrement=True, nullable=False),
    sa.Column('origin', sa.Text(), nullable=False, comment='the process (feed) that made the change'),
    sa.Column('payload', sa.Text(), nullable=False),
    sa.Column('created_at', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('seq', name=op.f('pk_change_log')),
    sqlite_autoincrement=True
    )


def downgrade() -> None:
    op.drop_table('change_log')
    with op.batch_alter_table('org_invitations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_org_invitations_tenant_id'))
        batch_op.drop_index('ix_org_invitations_user_id')
        batch_op.drop_index('ix_org_invitations_pending')
    op.drop_table('org_invitations')
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_column('expires_at')
