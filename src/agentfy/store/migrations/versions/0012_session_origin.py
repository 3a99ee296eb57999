"""sessions: where the conversation happens (channel and the chat's name), so a message can be sent into it

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None


def upgrade() -> None:

    with op.batch_alter_table('sessions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('channel', sa.Text(), nullable=True, comment='where the conversation happens (telegram, discord, web…)'))
        batch_op.add_column(sa.Column('conversation', sa.Text(), nullable=True, comment="the chat's name on its channel (telegram:-100123…)"))
        batch_op.create_check_constraint(batch_op.f('ck_sessions_channel_length'), 'channel IS NULL OR length(channel) BETWEEN 1 AND 50')
        batch_op.create_check_constraint(batch_op.f('ck_sessions_conversation_length'), 'conversation IS NULL OR length(conversation) BETWEEN 1 AND 500')


def downgrade() -> None:

    with op.batch_alter_table('sessions', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('ck_sessions_conversation_length'), type_='check')
        batch_op.drop_constraint(batch_op.f('ck_sessions_channel_length'), type_='check')
        batch_op.drop_column('conversation')
        batch_op.drop_column('channel')
