"""Registration's event streams: one per table, appended with optimistic concurrency."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from electric.eventlog.v1.envelope_pb2 import Envelope
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
    causation_id: str = "",
) -> int:
    """Append to the table's stream at ``version`` (the one in its row; a concurrent append
    raises ``ConcurrencyError``); the new version. See :func:`append_stored`."""
    stored = append_stored(
        store,
        conn,
        table_id,
        version,
        events,
        correlation_id=correlation_id,
        at=at,
        causation_id=causation_id,
    )
    return stored[-1].stream_version


def append_stored(
    store: EventStore,
    conn: Connection,
    table_id: str,
    version: int,
    events: Sequence[Message],
    *,
    correlation_id: str,
    at: datetime,
    causation_id: str = "",
) -> list[Envelope]:
    """:func:`append`, returning the stored envelopes. Empty ids default to the bound causal
    context (inside a call: its correlation id and the request id as causation)."""
    return store.append(
        conn,
        table_stream(table_id),
        version if version > 0 else NO_STREAM,
        list(events),
        correlation_id=correlation_id,
        causation_id=causation_id,
        occurred_at=at,
    )
