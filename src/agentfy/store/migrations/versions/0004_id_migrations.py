"""id migrations

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table('id_migrations',
    sa.Column('old_id', sa.Text(), nullable=False),
    sa.Column('new_id', sa.Text(), nullable=False),
    sa.Column('entity', sa.Text(), nullable=False, comment='the model name, e.g. Organization'),
    sa.Column('run_id', sa.Text(), nullable=False, comment='the cutover run that made the hop'),
    sa.Column('migrated_at', sa.Text(), nullable=False),
    sa.PrimaryKeyConstraint('old_id', name=op.f('pk_id_migrations'))
    )
    with op.batch_alter_table('id_migrations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_id_migrations_new_id'), ['new_id'], unique=False)




def downgrade() -> None:

    with op.batch_alter_table('id_migrations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_id_migrations_new_id'))

    op.drop_table('id_migrations')

