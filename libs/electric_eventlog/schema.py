"""SQLAlchemy Core tables of the event log (created by the package's Alembic migrations).

All names start with ``eventlog_`` so they never clash with a service's own tables in the
same database.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

# On SQLite an INTEGER PRIMARY KEY is the rowid: the cheapest clustered key there is.
Position = BigInteger().with_variant(Integer(), "sqlite")

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

#: One row per event. ``global_position`` is allocated gap-free under the head-row lock.
events = Table(
    "eventlog_events",
    metadata,
    Column("global_position", Position, primary_key=True, autoincrement=False),
    Column("stream_id", String(200), nullable=False),
    Column("stream_version", BigInteger, nullable=False),
    Column("event_id", String(64), nullable=False),
    Column("event_type", String(300), nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    Column("recorded_at", DateTime(timezone=True), nullable=False),
    Column("correlation_id", String(200), nullable=False),
    Column("causation_id", String(200), nullable=False),
    Column("producer", String(100), nullable=False),
    Column("payload_type_url", String(400), nullable=False),
    Column("payload", LargeBinary, nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    UniqueConstraint("stream_id", "stream_version"),
    UniqueConstraint("event_id"),
)

#: Single row (id = 1) holding the last allocated global position. Updating it is the lock
#: that serialises "allocate positions ... commit" across writers (see docs/event-store.md).
head = Table(
    "eventlog_head",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("last_position", BigInteger, nullable=False),
)

#: Transactional outbox: one row per event and destination topic, written with the event.
outbox = Table(
    "eventlog_outbox",
    metadata,
    Column(
        "global_position",
        Position,
        ForeignKey("eventlog_events.global_position"),
        nullable=False,
    ),
    Column("topic", String(250), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("sent_at", DateTime(timezone=True), nullable=True),
    PrimaryKeyConstraint("global_position", "topic"),
    Index(
        "ix_eventlog_outbox_unsent",
        "global_position",
        postgresql_where=text("sent_at IS NULL"),
        sqlite_where=text("sent_at IS NULL"),
    ),
)

#: Optional snapshots of a stream's folded state after ``stream_version`` events.
snapshots = Table(
    "eventlog_snapshots",
    metadata,
    Column("stream_id", String(200), nullable=False),
    Column("stream_version", BigInteger, nullable=False),
    Column("state_type_url", String(400), nullable=False),
    Column("state", LargeBinary, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("stream_id", "stream_version"),
)

#: What each named consumer has applied (or dead-lettered), recorded with the effect.
applied = Table(
    "eventlog_applied",
    metadata,
    Column("consumer", String(200), nullable=False),
    Column("event_id", String(64), nullable=False),
    Column("stream_id", String(200), nullable=False),
    Column("stream_version", BigInteger, nullable=False),
    #: "applied" or "dead_lettered".
    Column("outcome", String(20), nullable=False),
    Column("applied_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("consumer", "event_id"),
)

#: Poison events a consumer gave up on, with the reason (also sent to ``<topic>.dlq``).
dead_letters = Table(
    "eventlog_dead_letters",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("consumer", String(200), nullable=False),
    Column("topic", String(250), nullable=False),
    Column("partition", Integer, nullable=False),
    Column("offset", BigInteger, nullable=False),
    Column("event_id", String(64), nullable=False),
    Column("reason", Text, nullable=False),
    Column("message", LargeBinary, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

#: Fencing epochs (:mod:`electric_eventlog.fencing`): one row per fenced resource (e.g. a
#: table), its current owner's epoch; taking ownership increments it, every fenced write
#: checks it in the write's transaction.
fences = Table(
    "eventlog_fences",
    metadata,
    Column("resource", String(200), primary_key=True),
    Column("epoch", BigInteger, nullable=False),
    Column("owner", String(200), nullable=False),
    Column("taken_at", DateTime(timezone=True), nullable=False),
    # The consumer group generation of the assignment that took a scope (a partition);
    # NULL for resources taken on demand (migration eventlog_0003).
    Column("generation", BigInteger, nullable=True),
)
