"""Player settings, table cancellation and turn columns, per-seat progress for My Tables.

Revision ID: registration_0003
Revises: registration_0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "registration_0003"
down_revision: str | Sequence[str] | None = "registration_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("registration_tables") as batch:
        batch.add_column(sa.Column("cancelled_at", _TS, nullable=True))
        batch.add_column(sa.Column("cancel_reason", sa.Text(), nullable=False, server_default=""))
        batch.add_column(sa.Column("turn_seat", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("turn_deadline", _TS, nullable=True))
        batch.add_column(sa.Column("ended_at", _TS, nullable=True))
    op.create_table(
        "registration_player_settings",
        sa.Column("player_id", sa.String(200), primary_key=True),
        sa.Column("display_name", sa.String(64), nullable=False),
        sa.Column("muck_winning_hands", sa.Integer(), nullable=False),
        sa.Column("muck_losing_hands", sa.Integer(), nullable=False),
        sa.Column("four_color_deck", sa.Integer(), nullable=False),
        sa.Column("alert_sounds", sa.Integer(), nullable=False),
        sa.Column("sound_fx", sa.Integer(), nullable=False),
        sa.Column("show_details", sa.Integer(), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
    )
    op.create_table(
        "registration_seat_progress",
        sa.Column("table_id", sa.String(64), primary_key=True),
        sa.Column("player_id", sa.String(200), primary_key=True),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("stack", sa.BigInteger(), nullable=False),
        sa.Column("eliminated", sa.Integer(), nullable=False),
        sa.Column("finishing_place", sa.Integer(), nullable=False),
        sa.Column("prize_cents", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", _TS, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("registration_seat_progress")
    op.drop_table("registration_player_settings")
    with op.batch_alter_table("registration_tables") as batch:
        for column in ("ended_at", "turn_deadline", "turn_seat", "cancel_reason", "cancelled_at"):
            batch.drop_column(column)
