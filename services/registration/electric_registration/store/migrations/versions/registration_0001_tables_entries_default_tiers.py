"""Registration tables and the default buy-in tiers (docs/design.md §5: $1 … $50, rake 7%).

Revision ID: registration_0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "registration_0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = ("registration",)
depends_on: str | Sequence[str] | None = None

_TS = sa.DateTime(timezone=True)

#: (buy-in cents, rake cents): 7% rake, docs/design.md §5.
DEFAULT_TIERS: tuple[tuple[int, int], ...] = (
    (100, 7),
    (500, 35),
    (1000, 70),
    (2500, 175),
    (5000, 350),
)


def upgrade() -> None:
    tiers = op.create_table(
        "registration_tiers",
        sa.Column("tier_id", sa.String(64), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("buy_in_cents", sa.BigInteger(), nullable=False),
        sa.Column("rake_cents", sa.BigInteger(), nullable=False),
        sa.Column("seats", sa.Integer(), nullable=False),
        sa.Column("starting_stack", sa.BigInteger(), nullable=False),
        sa.Column("sort_order", sa.Integer(), nullable=False),
        sa.Column("game_speed", sa.String(32), nullable=False),
        sa.Column("active", sa.Integer(), nullable=False),
    )
    op.create_table(
        "registration_tables",
        sa.Column("table_id", sa.String(64), primary_key=True),
        sa.Column(
            "tier_id",
            sa.String(64),
            sa.ForeignKey("registration_tiers.tier_id"),
            nullable=False,
        ),
        sa.Column("table_name", sa.String(200), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("seats", sa.Integer(), nullable=False),
        sa.Column("players_registered", sa.Integer(), nullable=False),
        sa.Column("multiplier_seed", sa.String(128), nullable=False),
        sa.Column("multiplier_seed_commitment", sa.String(64), nullable=False),
        sa.Column("paytable_version", sa.String(64), nullable=False),
        sa.Column("multiplier", sa.BigInteger(), nullable=False),
        sa.Column("prize_pool_cents", sa.BigInteger(), nullable=False),
        sa.Column("stream_version", sa.BigInteger(), nullable=False),
        sa.Column("opened_at", _TS, nullable=False),
    )
    op.create_index(
        "ix_registration_tables_tier_status", "registration_tables", ["tier_id", "status"]
    )
    op.create_table(
        "registration_entries",
        sa.Column("entry_id", sa.String(64), primary_key=True),
        sa.Column("player_id", sa.String(200), nullable=False),
        sa.Column(
            "table_id",
            sa.String(64),
            sa.ForeignKey("registration_tables.table_id"),
            nullable=False,
        ),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("wallet_transfer_id", sa.String(200), nullable=False),
        sa.Column("request_id", sa.String(200), nullable=False),
        sa.Column("registered_at", _TS, nullable=False),
    )
    op.create_index(
        "ix_registration_entries_player", "registration_entries", ["player_id", "status"]
    )
    op.bulk_insert(
        tiers,
        [
            {
                "tier_id": f"electric-{buy_in}",
                "name": f"${buy_in // 100} Electric Poker",
                "buy_in_cents": buy_in,
                "rake_cents": rake,
                "seats": 3,
                "starting_stack": 500,
                "sort_order": i,
                "game_speed": "hyper_turbo",
                "active": 1,
            }
            for i, (buy_in, rake) in enumerate(DEFAULT_TIERS)
        ],
    )


def downgrade() -> None:
    op.drop_index("ix_registration_entries_player", "registration_entries")
    op.drop_table("registration_entries")
    op.drop_index("ix_registration_tables_tier_status", "registration_tables")
    op.drop_table("registration_tables")
    op.drop_table("registration_tiers")
