"""Registration's event streams: one per table, appended with optimistic concurrency."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from electric_eventlog import NO_STREAM, EventStore
from google.protobuf.message import Message
from sqlalchemy import Connection


def table_stream(table_id: str) -> str:
    """Event stream of a registration table."""
    return f"registration-table-{table_id}"


def append(
    store: EventStore,
    conn: Connection,
    table_id: str,
    version: int,
    events: Sequence[Message],
    *,
    correlation_id: str,
    at: datetime,
) -> int:
    """Append to the table's stream at ``version`` (the one in its row; a concurrent append
    raises ``ConcurrencyError``); the new version."""
    stored = store.append(
        conn,
        table_stream(table_id),
        version if version > 0 else NO_STREAM,
        list(events),
        correlation_id=correlation_id,
        causation_id=correlation_id,
        occurred_at=at,
    )
    return stored[-1].stream_version
