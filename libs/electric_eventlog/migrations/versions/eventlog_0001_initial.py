"""Event log tables: events, head (position allocator), outbox, snapshots, applied, dead letters.

Revision ID: eventlog_0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "eventlog_0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = ("eventlog",)
depends_on: str | Sequence[str] | None = None

_POSITION = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_TS = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "eventlog_events",
        sa.Column("global_position", _POSITION, autoincrement=False, nullable=False),
        sa.Column("stream_id", sa.String(200), nullable=False),
        sa.Column("stream_version", sa.BigInteger(), nullable=False),
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("event_type", sa.String(300), nullable=False),
        sa.Column("occurred_at", _TS, nullable=False),
        sa.Column("recorded_at", _TS, nullable=False),
        sa.Column("correlation_id", sa.String(200), nullable=False),
        sa.Column("causation_id", sa.String(200), nullable=False),
        sa.Column("producer", sa.String(100), nullable=False),
        sa.Column("payload_type_url", sa.String(400), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("global_position", name="pk_eventlog_events"),
        sa.UniqueConstraint(
            "stream_id", "stream_version", name="uq_eventlog_events_stream_id_stream_version"
        ),
        sa.UniqueConstraint("event_id", name="uq_eventlog_events_event_id"),
    )
    op.create_table(
        "eventlog_head",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("last_position", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_eventlog_head"),
    )
    op.execute(sa.text("INSERT INTO eventlog_head (id, last_position) VALUES (1, 0)"))
    op.create_table(
        "eventlog_outbox",
        sa.Column("global_position", _POSITION, nullable=False),
        sa.Column("topic", sa.String(250), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.Column("sent_at", _TS, nullable=True),
        sa.ForeignKeyConstraint(
            ["global_position"],
            ["eventlog_events.global_position"],
            name="fk_eventlog_outbox_global_position_eventlog_events",
        ),
        sa.PrimaryKeyConstraint("global_position", "topic", name="pk_eventlog_outbox"),
    )
    op.create_index(
        "ix_eventlog_outbox_unsent",
        "eventlog_outbox",
        ["global_position"],
        postgresql_where=sa.text("sent_at IS NULL"),
        sqlite_where=sa.text("sent_at IS NULL"),
    )
    op.create_table(
        "eventlog_snapshots",
        sa.Column("stream_id", sa.String(200), nullable=False),
        sa.Column("stream_version", sa.BigInteger(), nullable=False),
        sa.Column("state_type_url", sa.String(400), nullable=False),
        sa.Column("state", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("stream_id", "stream_version", name="pk_eventlog_snapshots"),
    )
    op.create_table(
        "eventlog_applied",
        sa.Column("consumer", sa.String(200), nullable=False),
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("stream_id", sa.String(200), nullable=False),
        sa.Column("stream_version", sa.BigInteger(), nullable=False),
        sa.Column("outcome", sa.String(20), nullable=False),
        sa.Column("applied_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("consumer", "event_id", name="pk_eventlog_applied"),
    )
    op.create_table(
        "eventlog_dead_letters",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("consumer", sa.String(200), nullable=False),
        sa.Column("topic", sa.String(250), nullable=False),
        sa.Column("partition", sa.Integer(), nullable=False),
        sa.Column("offset", sa.BigInteger(), nullable=False),
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("message", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", _TS, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_eventlog_dead_letters"),
    )


def downgrade() -> None:
    op.drop_table("eventlog_dead_letters")
    op.drop_table("eventlog_applied")
    op.drop_table("eventlog_snapshots")
    op.drop_index("ix_eventlog_outbox_unsent", table_name="eventlog_outbox")
    op.drop_table("eventlog_outbox")
    op.drop_table("eventlog_head")
    op.drop_table("eventlog_events")
