"""organization credentials: when the secret was last replaced

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:

    with op.batch_alter_table('org_credentials', schema=None) as batch_op:
        batch_op.add_column(sa.Column('rotated_at', sa.Text(), nullable=True, comment='when the secret was last replaced (NULL: never)'))


def downgrade() -> None:

    with op.batch_alter_table('org_credentials', schema=None) as batch_op:
        batch_op.drop_column('rotated_at')
