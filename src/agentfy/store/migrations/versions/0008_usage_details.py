"""usage snapshots: cached tokens, the provider, the run and its session; a (tenant, day) index for summaries

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade() -> None:

    with op.batch_alter_table('usage_snapshots', schema=None) as batch_op:
        batch_op.add_column(sa.Column('cached_tokens', sa.Integer(), nullable=True, comment='prompt tokens the provider served from its cache; NULL when it does not say'))
        batch_op.add_column(sa.Column('provider', sa.Text(), nullable=True, comment='the agent\'s config.model.provider (offline, openai)'))
        batch_op.add_column(sa.Column('run_id', sa.Text(), nullable=True, comment='the run that made the call (16 hex); a run makes one call per round of tool calls'))
        batch_op.add_column(sa.Column('session_key', sa.Text(), nullable=True, comment='the session the run belongs to'))
        batch_op.create_index(batch_op.f('ix_usage_snapshots_tenant_id_recorded_at'), ['tenant_id', 'recorded_at'], unique=False)


def downgrade() -> None:

    with op.batch_alter_table('usage_snapshots', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_usage_snapshots_tenant_id_recorded_at'))
        batch_op.drop_column('session_key')
        batch_op.drop_column('run_id')
        batch_op.drop_column('provider')
        batch_op.drop_column('cached_tokens')
