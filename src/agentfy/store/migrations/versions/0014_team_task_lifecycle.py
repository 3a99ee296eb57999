"""team task lifecycle: a fixed status set, the task's description, result, error, claimer, deadline

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-02

A status used to be any lower-case word.  Existing rows are mapped onto the fixed set before its CHECK is
added: a status already in the set is kept; ``todo``, ``new`` and ``pending`` become ``open``;
``doing``, ``started`` and ``in-progress`` become ``in_progress``; ``complete``, ``completed`` and
``closed`` become ``done``; ``canceled`` becomes ``cancelled``; ``error`` becomes ``failed``; anything else
becomes ``open`` (the safe place: someone can claim it again).  ``updated_at`` starts as ``created_at``.  A
row left claimed or in progress gets a deadline one default timeout (an hour) from the migration, so the
sweep can time it out if nobody finishes it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from alembic import op

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None

_KNOWN = ('open', 'claimed', 'in_progress', 'done', 'failed', 'cancelled', 'timed_out')
_RENAMED = {'todo': 'open', 'new': 'open', 'pending': 'open', 'doing': 'in_progress', 'started': 'in_progress',
            'in-progress': 'in_progress', 'complete': 'done', 'completed': 'done', 'closed': 'done',
            'canceled': 'cancelled', 'error': 'failed'}
_ID = "BETWEEN 1 AND 80 AND trim({0}, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''"
_STATUS_IN = "status IN (" + ", ".join(repr(s) for s in _KNOWN) + ")"
_DEFAULT_TIMEOUT_SECONDS = 3600


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _map_statuses() -> None:
    tasks = sa.table('team_tasks', sa.column('status', sa.Text), sa.column('created_at', sa.Text),
                     sa.column('updated_at', sa.Text), sa.column('deadline_at', sa.Text))
    for old, new in _RENAMED.items():
        op.execute(tasks.update().where(tasks.c.status == old).values(status=new))
    op.execute(tasks.update().where(tasks.c.status.not_in(_KNOWN)).values(status='open'))
    op.execute(tasks.update().values(updated_at=tasks.c.created_at))
    deadline = _stamp(datetime.now(UTC) + timedelta(seconds=_DEFAULT_TIMEOUT_SECONDS))
    op.execute(tasks.update().where(tasks.c.status.in_(('claimed', 'in_progress'))).values(deadline_at=deadline))


def upgrade() -> None:

    with op.batch_alter_table('team_tasks', schema=None) as batch_op:
        batch_op.add_column(sa.Column('description', sa.Text(), server_default=sa.text("''"), nullable=False, comment='what the agent that works on it is told, after the title'))
        batch_op.add_column(sa.Column('result', sa.Text(), nullable=True, comment='the answer it was completed with'))
        batch_op.add_column(sa.Column('error', sa.Text(), nullable=True, comment='why it failed, timed out or was cancelled'))
        batch_op.add_column(sa.Column('claimed_by_agent_id', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('claimed_at', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('timeout_seconds', sa.Integer(), server_default=sa.text('3600'), nullable=False, comment='how long it may stay claimed or in progress'))
        batch_op.add_column(sa.Column('deadline_at', sa.Text(), nullable=True, comment='when a claimed or in-progress task times out; NULL: not being worked on'))
        batch_op.add_column(sa.Column('updated_at', sa.Text(), nullable=True, comment='the last change of status'))
        batch_op.add_column(sa.Column('session_key', sa.Text(), nullable=True, comment='the session of its last dispatched run'))

    _map_statuses()

    with op.batch_alter_table('team_tasks', schema=None) as batch_op:
        batch_op.alter_column('updated_at', existing_type=sa.Text(), nullable=False, existing_comment='the last change of status')
        batch_op.create_index(batch_op.f('ix_team_tasks_claimed_by_agent_id'), ['claimed_by_agent_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_team_tasks_deadline_at'), ['deadline_at'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_team_tasks_claimed_by_agent_id_agents'), 'agents', ['claimed_by_agent_id'], ['id'], ondelete='SET NULL')
        batch_op.create_check_constraint(batch_op.f('ck_team_tasks_status_known'), _STATUS_IN)
        batch_op.create_check_constraint(batch_op.f('ck_team_tasks_timeout_range'), "timeout_seconds BETWEEN 1 AND 604800")
        batch_op.create_check_constraint(batch_op.f('ck_team_tasks_text_short'), "(result IS NULL OR length(result) <= 20000) AND (error IS NULL OR length(error) <= 20000) AND length(description) <= 20000")
        batch_op.create_check_constraint(batch_op.f('ck_team_tasks_claimed_by_agent_id_is_id'), "length(claimed_by_agent_id) " + _ID.format('claimed_by_agent_id'))


def downgrade() -> None:

    with op.batch_alter_table('team_tasks', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('ck_team_tasks_claimed_by_agent_id_is_id'), type_='check')
        batch_op.drop_constraint(batch_op.f('ck_team_tasks_text_short'), type_='check')
        batch_op.drop_constraint(batch_op.f('ck_team_tasks_timeout_range'), type_='check')
        batch_op.drop_constraint(batch_op.f('ck_team_tasks_status_known'), type_='check')
        batch_op.drop_constraint(batch_op.f('fk_team_tasks_claimed_by_agent_id_agents'), type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_team_tasks_deadline_at'))
        batch_op.drop_index(batch_op.f('ix_team_tasks_claimed_by_agent_id'))
        batch_op.drop_column('session_key')
        batch_op.drop_column('updated_at')
        batch_op.drop_column('deadline_at')
        batch_op.drop_column('timeout_seconds')
        batch_op.drop_column('claimed_at')
        batch_op.drop_column('claimed_by_agent_id')
        batch_op.drop_column('error')
        batch_op.drop_column('result')
        batch_op.drop_column('description')
