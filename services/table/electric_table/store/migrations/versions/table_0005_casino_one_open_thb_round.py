"""One open THB round per table and player, enforced by the database (a second table
instance's concurrent Deal loses on the unique partial index instead of opening a second
round).

Revision ID: table_0005
Revises: table_0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "table_0005"
down_revision: str | Sequence[str] | None = "table_0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "uq_table_casino_rounds_open_thb"
WHERE = "status = 'open' AND game = 'thb'"


def upgrade() -> None:
    op.create_index(
        INDEX,
        "table_casino_rounds",
        ["table_id", "player_id"],
        unique=True,
        postgresql_where=sa.text(WHERE),
        sqlite_where=sa.text(WHERE),
    )


def downgrade() -> None:
    op.drop_index(INDEX, table_name="table_casino_rounds")
