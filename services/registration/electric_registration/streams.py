"""Recording a registration decision: the mapper appends its events (:func:`.codec.append`,
the only append), then the projector writes their rows (:func:`.store.projector.project`),
both in the caller's transaction, so rows and events commit or roll back together."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import EventStore
from google.protobuf.message import Message
from sqlalchemy import Connection

from electric_registration import codec
from electric_registration.store import projector

table_stream = codec.table_stream


def record(
    store: EventStore,
    conn: Connection,
    stream_id: str,
    version: int,
    events: Sequence[Message],
    *,
    correlation_id: str,
    at: datetime,
    causation_id: str = "",
    withheld: projector.Withheld | None = None,
) -> list[Envelope]:
    """Append ``events`` to ``stream_id`` at ``version`` (the one in its row; a concurrent
    append raises ``ConcurrencyError``) and project them; the stored envelopes. Empty ids
    default to the bound causal context (inside a call: its correlation id and the request
    id as causation). ``withheld``: what the rows need beyond the events (the seed of a
    table that opens, the TournamentStarted prepared at a fill)."""
    stored = codec.append(
        store,
        conn,
        stream_id,
        codec.expected(version),
        events,
        correlation_id=correlation_id,
        at=at,
        causation_id=causation_id,
    )
    projector.project(conn, stored, events, withheld)
    return stored


def record_table(
    store: EventStore,
    conn: Connection,
    table_id: str,
    version: int,
    events: Sequence[Message],
    *,
    correlation_id: str,
    at: datetime,
    causation_id: str = "",
    withheld: projector.Withheld | None = None,
) -> list[Envelope]:
    """:func:`record` on the table's stream."""
    return record(
        store,
        conn,
        codec.table_stream(table_id),
        version,
        events,
        correlation_id=correlation_id,
        at=at,
        causation_id=causation_id,
        withheld=withheld,
    )
