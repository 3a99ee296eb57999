"""session messages: an assistant message's tool calls and a tool result's call id, stored as structures

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:

    with op.batch_alter_table('session_messages', schema=None) as batch_op:
        batch_op.add_column(sa.Column('tool_calls', sa.Text(), nullable=True, comment='an assistant message\'s tool calls: JSON list of {id, name, arguments}'))
        batch_op.add_column(sa.Column('tool_call_id', sa.Text(), nullable=True, comment='a tool result: the id of the call it answers'))
        batch_op.create_check_constraint(batch_op.f('ck_session_messages_tool_calls_on_assistant'), "tool_calls IS NULL OR role = 'assistant'")
        batch_op.create_check_constraint(batch_op.f('ck_session_messages_tool_call_id_on_tool'), "tool_call_id IS NULL OR (role = 'tool' AND length(tool_call_id) BETWEEN 1 AND 200)")


def downgrade() -> None:

    with op.batch_alter_table('session_messages', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('ck_session_messages_tool_call_id_on_tool'), type_='check')
        batch_op.drop_constraint(batch_op.f('ck_session_messages_tool_calls_on_assistant'), type_='check')
        batch_op.drop_column('tool_call_id')
        batch_op.drop_column('tool_calls')
