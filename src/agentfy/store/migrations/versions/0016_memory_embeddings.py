"""memory embeddings: a vector per memory document and episodic summary, per embeddings model

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-03

``memory_embeddings`` holds one row per (source, model): the source's tenant, agent and memory SCOPE (copied,
so the search filters them in SQL without a join), the model's name and the vector's dimensions, and the
vector itself as float32 bytes of unit length (``agentfy.store.repos.vectors``).  The same bytes on both
engines: PostgreSQL has no ``vector`` type here (pgvector is not installed), so similarity is computed over
the SQL-filtered candidates.  Existing memory gets its vectors when an agent's embeddings are configured
(``PUT /v1/agents/{agent}/embeddings`` queues the catch-up), not here: a migration makes no network calls.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

_ID = "length({0}) BETWEEN 1 AND 80 AND trim({0}, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''"


def upgrade() -> None:
    op.create_table(
        'memory_embeddings',
        sa.Column('source_id', sa.Text(), nullable=False, comment='the memory document or episodic summary embedded'),
        sa.Column('tenant_id', sa.Text(), nullable=False),
        sa.Column('agent_id', sa.Text(), nullable=False),
        sa.Column('user_id', sa.Text(), nullable=False, comment="the memory SCOPE of the source (empty: the agent's own)"),
        sa.Column('kind', sa.Text(), nullable=False, comment='memory (a memory document) or episodic (a summary)'),
        sa.Column('document_id', sa.Text(), nullable=True),
        sa.Column('summary_id', sa.Text(), nullable=True),
        sa.Column('source_version', sa.Text(), nullable=False, comment="the source's updated_at (a summary's created_at) when its text was embedded"),
        sa.Column('model', sa.Text(), nullable=False, comment='the embeddings model that made the vector'),
        sa.Column('dimensions', sa.Integer(), nullable=False),
        sa.Column('vector', sa.LargeBinary(), nullable=False, comment='float32 little-endian, unit length'),
        sa.Column('created_at', sa.Text(), nullable=False),
        sa.CheckConstraint("(kind = 'memory' AND document_id = source_id AND summary_id IS NULL) OR "
                           "(kind = 'episodic' AND summary_id = source_id AND document_id IS NULL)",
                           name=op.f('ck_memory_embeddings_kind_names_its_source')),
        sa.CheckConstraint('dimensions > 0 AND length(vector) = 4 * dimensions',
                           name=op.f('ck_memory_embeddings_vector_has_its_dimensions')),
        *(sa.CheckConstraint(_ID.format(column), name=op.f(f'ck_memory_embeddings_{column}_is_id'))
          for column in ('source_id', 'tenant_id', 'agent_id', 'document_id', 'summary_id')),
        sa.ForeignKeyConstraint(['agent_id'], ['agents.id'], name=op.f('fk_memory_embeddings_agent_id_agents'),
                                ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['document_id'], ['memory_documents.id'],
                                name=op.f('fk_memory_embeddings_document_id_memory_documents'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['summary_id'], ['episodic_summaries.id'],
                                name=op.f('fk_memory_embeddings_summary_id_episodic_summaries'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'],
                                name=op.f('fk_memory_embeddings_tenant_id_organizations'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('source_id', 'model', name=op.f('pk_memory_embeddings')),
    )
    with op.batch_alter_table('memory_embeddings', schema=None) as batch_op:
        batch_op.create_index('ix_memory_embeddings_candidates',
                              ['tenant_id', 'agent_id', 'user_id', 'model', 'dimensions'], unique=False)
        batch_op.create_index(batch_op.f('ix_memory_embeddings_document_id'), ['document_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_memory_embeddings_summary_id'), ['summary_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_memory_embeddings_tenant_id'), ['tenant_id'], unique=False)


def downgrade() -> None:
    op.drop_table('memory_embeddings')
