"""Register/Unregister/fill: requests, wallet work queue, table progress columns,
one active entry per player and seat per table.

Revision ID: registration_0002
Revises: registration_0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "registration_0002"
down_revision: str | Sequence[str] | None = "registration_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TS = sa.DateTime(timezone=True)
_ACTIVE = sa.text("status <> 'unregistered'")


def upgrade() -> None:
    with op.batch_alter_table("registration_tables") as batch:
        batch.add_column(
            sa.Column("current_hand_number", sa.BigInteger(), nullable=False, server_default="0")
        )
        batch.add_column(
            sa.Column("positions_paid", sa.Integer(), nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("payouts_json", sa.Text(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("tournament_started", sa.LargeBinary(), nullable=True))
        batch.add_column(sa.Column("filled_at", _TS, nullable=True))
        batch.add_column(sa.Column("started_at", _TS, nullable=True))
        batch.add_column(sa.Column("finished_at", _TS, nullable=True))
    op.create_index(
        "ux_registration_entries_table_player",
        "registration_entries",
        ["table_id", "player_id"],
        unique=True,
        postgresql_where=_ACTIVE,
        sqlite_where=_ACTIVE,
    )
    op.create_index(
        "ux_registration_entries_table_seat",
        "registration_entries",
        ["table_id", "seat"],
        unique=True,
        postgresql_where=_ACTIVE,
        sqlite_where=_ACTIVE,
    )
    op.create_table(
        "registration_requests",
        sa.Column("request_key", sa.String(64), primary_key=True),
        sa.Column("player_id", sa.String(200), nullable=False),
        sa.Column("request_id", sa.String(200), nullable=False),
        sa.Column("tier_id", sa.String(64), nullable=False),
        sa.Column("entries", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("entry_ids", sa.Text(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_index(
        "ix_registration_requests_status", "registration_requests", ["status", "updated_at"]
    )
    op.create_table(
        "registration_wallet_ops",
        sa.Column("op_id", sa.String(300), primary_key=True),
        sa.Column("table_id", sa.String(64), nullable=False),
        sa.Column("entry_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("transfer_id", sa.String(200), nullable=False),
        sa.Column("from_account", sa.String(200), nullable=False),
        sa.Column("to_account", sa.String(200), nullable=False),
        sa.Column("amount_cents", sa.BigInteger(), nullable=False),
        sa.Column("code", sa.String(64), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("done_at", _TS, nullable=True),
    )
    op.create_index(
        "ix_registration_wallet_ops_status",
        "registration_wallet_ops",
        ["status", "table_id", "seq"],
    )


def downgrade() -> None:
    op.drop_index("ix_registration_wallet_ops_status", "registration_wallet_ops")
    op.drop_table("registration_wallet_ops")
    op.drop_index("ix_registration_requests_status", "registration_requests")
    op.drop_table("registration_requests")
    op.drop_index("ux_registration_entries_table_seat", "registration_entries")
    op.drop_index("ux_registration_entries_table_player", "registration_entries")
    with op.batch_alter_table("registration_tables") as batch:
        for name in (
            "finished_at",
            "started_at",
            "filled_at",
            "tournament_started",
            "payouts_json",
            "positions_paid",
            "current_hand_number",
        ):
            batch.drop_column(name)
