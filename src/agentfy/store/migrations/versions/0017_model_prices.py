"""model prices: what a provider's model costs the organization, per million tokens, from a given time

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-03

``model_prices`` holds the organization's price table: one row per (provider, model, effective_from), the price
of a million prompt and of a million completion tokens in integer micro-units of ``currency`` (ISO 4217; no
floating point for money).  A usage snapshot is costed with the row of its provider and model in effect at its
own ``recorded_at`` (``agentfy.store.repos.prices``), so adding a price never changes what earlier calls cost.
Nothing is priced here: a migration knows no prices, and usage without one is shown as of unknown cost.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None

_ID = "length({0}) BETWEEN 1 AND 80 AND trim({0}, '0123456789abcdefghijklmnopqrstuvwxyz-') = ''"


def upgrade() -> None:
    op.create_table(
        'model_prices',
        sa.Column('tenant_id', sa.Text(), nullable=False),
        sa.Column('provider', sa.Text(), nullable=False,
                  comment='the provider the usage names (openai, anthropic, offline)'),
        sa.Column('model', sa.Text(), nullable=False, comment='the model name as usage snapshots record it'),
        sa.Column('effective_from', sa.Text(), nullable=False,
                  comment="UTC, the store's format: usage from then on"),
        sa.Column('currency', sa.Text(), nullable=False, comment='ISO 4217 code, three upper-case letters'),
        sa.Column('input_micros_per_million', sa.BigInteger(), nullable=False,
                  comment='micro-units of the currency per million prompt tokens'),
        sa.Column('output_micros_per_million', sa.BigInteger(), nullable=False,
                  comment='micro-units of the currency per million completion tokens'),
        sa.Column('created_at', sa.Text(), nullable=False),
        sa.CheckConstraint("length(currency) = 3 AND trim(currency, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ') = ''",
                           name=op.f('ck_model_prices_currency_is_a_code')),
        sa.CheckConstraint('input_micros_per_million >= 0 AND output_micros_per_million >= 0',
                           name=op.f('ck_model_prices_prices_are_not_negative')),
        sa.CheckConstraint(_ID.format('tenant_id'), name=op.f('ck_model_prices_tenant_id_is_id')),
        sa.ForeignKeyConstraint(['tenant_id'], ['organizations.id'],
                                name=op.f('fk_model_prices_tenant_id_organizations'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('tenant_id', 'provider', 'model', 'effective_from', name=op.f('pk_model_prices')),
    )
    with op.batch_alter_table('model_prices', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_model_prices_tenant_id'), ['tenant_id'], unique=False)


def downgrade() -> None:
    op.drop_table('model_prices')
