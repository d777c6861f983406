"""Fencing epochs: eventlog_fences (one row per fenced resource, e.g. a table).

Revision ID: eventlog_0002
Revises: eventlog_0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "eventlog_0002"
down_revision: str | Sequence[str] | None = "eventlog_0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "eventlog_fences",
        sa.Column("resource", sa.String(200), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("owner", sa.String(200), nullable=False),
        sa.Column("taken_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("resource", name="pk_eventlog_fences"),
    )


def downgrade() -> None:
    op.drop_table("eventlog_fences")
