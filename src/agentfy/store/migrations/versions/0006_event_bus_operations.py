"""event bus operations: worker stops per event, suspects index, durable counters

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:

    with op.batch_alter_table('event_outbox', schema=None) as batch_op:
        batch_op.add_column(sa.Column('stops', sa.Integer(), server_default='0', nullable=False, comment='leases that ran out while a worker held it (the worker stopped)'))
        batch_op.create_index('ix_event_outbox_suspects', ['status', 'stops', 'available_at'], unique=False, sqlite_where=sa.text('stops > 0'), postgresql_where=sa.text('stops > 0'))

    op.create_table('event_bus_counters',
    sa.Column('day', sa.Text(), nullable=False, comment='UTC date, YYYY-MM-DD'),
    sa.Column('name', sa.Text(), nullable=False, comment='e.g. eventbus.non_id_agent_id, eventbus.dead_letter'),
    sa.Column('total', sa.Integer(), server_default='0', nullable=False),
    sa.PrimaryKeyConstraint('day', 'name', name=op.f('pk_event_bus_counters'))
    )


def downgrade() -> None:

    op.drop_table('event_bus_counters')
    with op.batch_alter_table('event_outbox', schema=None) as batch_op:
        batch_op.drop_index('ix_event_outbox_suspects', sqlite_where=sa.text('stops > 0'), postgresql_where=sa.text('stops > 0'))
        batch_op.drop_column('stops')
