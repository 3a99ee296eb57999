"""cron schedule: a job's time zone, next and last run and origin conversation; the runs it fired

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02

Existing jobs keep ``next_run_at`` NULL: the scheduler's first pass computes it from their schedule (a
schedule that no longer parses disables the job and records a ``skipped`` run saying why), so this
migration needs no schedule parser of its own.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None

_ID = "BETWEEN 1 AND 80 AND trim({0}, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''"


def upgrade() -> None:

    with op.batch_alter_table('cron_jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('timezone', sa.Text(), server_default='UTC', nullable=False, comment='IANA name a cron expression is read in'))
        batch_op.add_column(sa.Column('next_run_at', sa.Text(), nullable=True, comment='when it is due next; NULL: not computed yet (rows from before 0013) or nothing left'))
        batch_op.add_column(sa.Column('last_run_at', sa.Text(), nullable=True, comment='the due time of the last run claimed'))
        batch_op.add_column(sa.Column('origin_channel', sa.Text(), server_default=sa.text("''"), nullable=False, comment='the channel the job was created from (telegram, api, …; empty: none)'))
        batch_op.add_column(sa.Column('origin_conversation', sa.Text(), server_default=sa.text("''"), nullable=False, comment='the conversation its runs answer in (telegram:<chat>, …; empty: its own)'))
        batch_op.create_index(batch_op.f('ix_cron_jobs_next_run_at'), ['next_run_at'], unique=False)
        batch_op.create_check_constraint(batch_op.f('ck_cron_jobs_timezone_shape'), "length(timezone) BETWEEN 1 AND 64")
        batch_op.create_check_constraint(batch_op.f('ck_cron_jobs_origin_shape'), "length(origin_channel) <= 300 AND length(origin_conversation) <= 300")

    op.create_table('cron_runs',
    sa.Column('job_id', sa.Text(), nullable=False),
    sa.Column('due_at', sa.Text(), nullable=False),
    sa.Column('tenant_id', sa.Text(), nullable=False),
    sa.Column('cause', sa.Text(), nullable=False),
    sa.Column('started_at', sa.Text(), nullable=False),
    sa.Column('ended_at', sa.Text(), nullable=True),
    sa.Column('outcome', sa.Text(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True, comment='why it failed, was denied or skipped (short, no secrets)'),
    sa.Column('session_key', sa.Text(), nullable=True, comment="the session the run's messages are in"),
    sa.CheckConstraint("outcome IN ('running', 'ok', 'failed', 'denied', 'skipped')", name=op.f('ck_cron_runs_outcome_known')),
    sa.CheckConstraint("cause IN ('schedule', 'manual')", name=op.f('ck_cron_runs_cause_known')),
    sa.CheckConstraint("error IS NULL OR length(error) <= 500", name=op.f('ck_cron_runs_error_short')),
    sa.CheckConstraint("length(job_id) " + _ID.format('job_id'), name=op.f('ck_cron_runs_job_id_is_id')),
    sa.CheckConstraint("length(tenant_id) " + _ID.format('tenant_id'), name=op.f('ck_cron_runs_tenant_id_is_id')),
    sa.ForeignKeyConstraint(['job_id'], ['cron_jobs.id'], name=op.f('fk_cron_runs_job_id_cron_jobs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'], name=op.f('fk_cron_runs_tenant_id_organizations'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('job_id', 'due_at', name=op.f('pk_cron_runs'))
    )
    with op.batch_alter_table('cron_runs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_cron_runs_tenant_id'), ['tenant_id'], unique=False)


def downgrade() -> None:

    with op.batch_alter_table('cron_runs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_cron_runs_tenant_id'))

    op.drop_table('cron_runs')
    with op.batch_alter_table('cron_jobs', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('ck_cron_jobs_origin_shape'), type_='check')
        batch_op.drop_constraint(batch_op.f('ck_cron_jobs_timezone_shape'), type_='check')
        batch_op.drop_index(batch_op.f('ix_cron_jobs_next_run_at'))
        batch_op.drop_column('origin_conversation')
        batch_op.drop_column('origin_channel')
        batch_op.drop_column('last_run_at')
        batch_op.drop_column('next_run_at')
        batch_op.drop_column('timezone')
