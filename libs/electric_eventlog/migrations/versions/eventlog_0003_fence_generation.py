"""Fencing scopes: eventlog_fences.generation (the consumer group generation of the
assignment that took a scope, such as a partition; docs/scaling.md §2).

Revision ID: eventlog_0003
Revises: eventlog_0002
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "eventlog_0003"
down_revision: str | Sequence[str] | None = "eventlog_0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("eventlog_fences") as batch:
        batch.add_column(sa.Column("generation", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("eventlog_fences") as batch:
        batch.drop_column("generation")
