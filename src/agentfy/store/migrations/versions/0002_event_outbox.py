"""event outbox

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table('event_outbox',
    sa.Column('id', sa.Text(), nullable=False, comment='domain-event-<adjective>-<noun>-<suffix>'),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('type', sa.Text(), nullable=False),
    sa.Column('source_id', sa.Text(), nullable=False, comment='what the event is about; dedup key with tenant and type'),
    sa.Column('agent_id', sa.Text(), nullable=True),
    sa.Column('user_id', sa.Text(), nullable=True),
    sa.Column('occurred_at', sa.Text(), nullable=False),
    sa.Column('payload', sa.Text(), server_default='{}', nullable=False),
    sa.Column('status', sa.Text(), server_default='pending', nullable=False),
    sa.Column('attempts', sa.Integer(), server_default='0', nullable=False),
    sa.Column('available_at', sa.Text(), nullable=False),
    sa.Column('claimed_by', sa.Text(), nullable=True),
    sa.Column('claimed_until', sa.Text(), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('finished_at', sa.Text(), nullable=True),
    sa.CheckConstraint("length(id) BETWEEN 1 AND 80 AND trim(id, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''", name=op.f('ck_event_outbox_id_is_id')),
    sa.CheckConstraint("status IN ('pending', 'processing', 'done', 'dead')", name=op.f('ck_event_outbox_status_known')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_event_outbox')),
    sa.UniqueConstraint('tenant_id', 'type', 'source_id', name='uq_event_outbox_dedup')
    )
    with op.batch_alter_table('event_outbox', schema=None) as batch_op:
        batch_op.create_index('ix_event_outbox_status_available', ['status', 'available_at'], unique=False)




def downgrade() -> None:

    with op.batch_alter_table('event_outbox', schema=None) as batch_op:
        batch_op.drop_index('ix_event_outbox_status_available')

    op.drop_table('event_outbox')

