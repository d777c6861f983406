"""An index for the lobby's running tables per tier, newest first (additive).

Revision ID: registration_0006
Revises: registration_0005
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "registration_0006"
down_revision: str | Sequence[str] | None = "registration_0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_registration_tables_status_started",
        "registration_tables",
        ["status", "tier_id", "started_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_registration_tables_status_started", table_name="registration_tables")
