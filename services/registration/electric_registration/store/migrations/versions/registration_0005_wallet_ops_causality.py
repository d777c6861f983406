"""Owed wallet ops keep the causality of the decision that owes them (additive).

Revision ID: registration_0005
Revises: registration_0004
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "registration_0005"
down_revision: str | Sequence[str] | None = "registration_0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("registration_wallet_ops") as batch:
        batch.add_column(
            sa.Column("correlation_id", sa.String(200), nullable=False, server_default="")
        )
        batch.add_column(
            sa.Column("causation_id", sa.String(200), nullable=False, server_default="")
        )


def downgrade() -> None:
    with op.batch_alter_table("registration_wallet_ops") as batch:
        batch.drop_column("causation_id")
        batch.drop_column("correlation_id")
