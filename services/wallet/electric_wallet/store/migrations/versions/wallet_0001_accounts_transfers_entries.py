"""Wallet projections: accounts, transfers, statement entries.

Revision ID: wallet_0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "wallet_0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = ("wallet",)
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "wallet_accounts",
        sa.Column("account_id", sa.String(200), primary_key=True),
        sa.Column("kind", sa.Integer(), nullable=False),
        sa.Column("player_id", sa.String(100), nullable=False),
        sa.Column("posted", sa.BigInteger(), nullable=False),
        sa.Column("reserved", sa.BigInteger(), nullable=False),
        sa.Column("incoming", sa.BigInteger(), nullable=False),
        sa.Column("opened_at", _TS, nullable=False),
    )
    op.create_index("ix_wallet_accounts_player_id", "wallet_accounts", ["player_id"])
    op.create_table(
        "wallet_transfers",
        sa.Column("transfer_id", sa.String(200), primary_key=True),
        sa.Column("state", sa.Integer(), nullable=False),
        sa.Column("spec", sa.LargeBinary(), nullable=False),
        sa.Column("legs", sa.String(), nullable=False),
        sa.Column("posted_legs", sa.String(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("posted_amount", sa.BigInteger(), nullable=False),
        sa.Column("code", sa.String(64), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("resolved_at", _TS, nullable=True),
    )
    op.create_table(
        "wallet_entries",
        sa.Column("entry_id", _ID, primary_key=True, autoincrement=True),
        sa.Column("account_id", sa.String(200), nullable=False),
        sa.Column("player_id", sa.String(100), nullable=False),
        sa.Column("account_kind", sa.Integer(), nullable=False),
        sa.Column("transfer_id", sa.String(200), nullable=False),
        sa.Column("entry_type", sa.Integer(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("posted_after", sa.BigInteger(), nullable=False),
        sa.Column("available_after", sa.BigInteger(), nullable=False),
        sa.Column("code", sa.String(64), nullable=False),
        sa.Column("memo", sa.String(512), nullable=False),
        sa.Column("occurred_at", _TS, nullable=False),
    )
    op.create_index("ix_wallet_entries_player", "wallet_entries", ["player_id", "entry_id"])
    op.create_index("ix_wallet_entries_account", "wallet_entries", ["account_id", "entry_id"])


def downgrade() -> None:
    op.drop_table("wallet_entries")
    op.drop_table("wallet_transfers")
    op.drop_table("wallet_accounts")
