"""Reading and acknowledging the transactional outbox (the relay's database side)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from electric.eventlog.v1.envelope_pb2 import Envelope
from sqlalchemy import Connection, delete, func, select, update

from . import schema
from .codec import envelope_from_row


def fetch_unsent(
    conn: Connection,
    *,
    limit: int,
    topic: str | None = None,
    after: int = 0,
    include_sent: bool = False,
) -> list[tuple[str, Envelope]]:
    """Up to ``limit`` unsent ``(topic, envelope)`` pairs after position ``after``, oldest first.

    Position order is commit order (see the store), so publishing in this order keeps every
    stream's events in version order on the wire. ``include_sent`` also returns rows already
    published (to re-seed a bus that lost them).
    """
    query = (
        select(schema.outbox.c.topic, schema.events)
        .join(schema.events, schema.events.c.global_position == schema.outbox.c.global_position)
        .where(schema.outbox.c.global_position > after)
        .order_by(schema.outbox.c.global_position, schema.outbox.c.topic)
        .limit(limit)
    )
    if not include_sent:
        query = query.where(schema.outbox.c.sent_at.is_(None))
    if topic is not None:
        query = query.where(schema.outbox.c.topic == topic)
    return [(row["topic"], envelope_from_row(row)) for row in conn.execute(query).mappings()]


def mark_sent(conn: Connection, sent: Sequence[tuple[str, int]], *, at: datetime) -> None:
    """Mark ``(topic, global_position)`` pairs as published."""
    by_topic: dict[str, list[int]] = {}
    for topic, position in sent:
        by_topic.setdefault(topic, []).append(position)
    for topic, positions in by_topic.items():
        conn.execute(
            update(schema.outbox)
            .where(
                schema.outbox.c.topic == topic,
                schema.outbox.c.global_position.in_(positions),
            )
            .values(sent_at=at)
        )


def unsent_count(conn: Connection, topic: str | None = None) -> int:
    """Number of outbox rows not yet published (the relay's backlog)."""
    query = select(func.count()).select_from(schema.outbox).where(schema.outbox.c.sent_at.is_(None))
    if topic is not None:
        query = query.where(schema.outbox.c.topic == topic)
    return int(conn.execute(query).scalar() or 0)


def purge_sent(conn: Connection, *, before: datetime, topic: str | None = None) -> int:
    """Delete outbox rows published before ``before`` (of ``topic`` only, when given).

    Unsent rows are never deleted. The events themselves stay, with their hash chains: the
    outbox is a separate table that only says what still has to be published.
    """
    query = delete(schema.outbox).where(
        schema.outbox.c.sent_at.is_not(None), schema.outbox.c.sent_at < before
    )
    if topic is not None:
        query = query.where(schema.outbox.c.topic == topic)
    return int(conn.execute(query).rowcount)
