"""Conversions between database rows, envelopes and timestamps."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from electric.eventlog.v1.envelope_pb2 import Envelope


def to_utc(moment: datetime) -> datetime:
    """``moment`` as an aware UTC datetime truncated to microseconds (what the DB keeps).

    SQLite hands back naive datetimes; they were written as UTC, so UTC is assumed.
    """
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def envelope_from_row(row: Mapping[Any, Any]) -> Envelope:
    """Rebuild the stored :class:`Envelope` from a row of ``eventlog_events``."""
    envelope = Envelope(
        event_id=row["event_id"],
        stream_id=row["stream_id"],
        stream_version=row["stream_version"],
        global_position=row["global_position"],
        event_type=row["event_type"],
        correlation_id=row["correlation_id"],
        causation_id=row["causation_id"],
        prev_hash=row["prev_hash"],
        hash=row["hash"],
        producer=row["producer"],
    )
    envelope.occurred_at.FromDatetime(to_utc(row["occurred_at"]))
    envelope.payload.type_url = row["payload_type_url"]
    envelope.payload.value = bytes(row["payload"])
    return envelope


def row_from_envelope(envelope: Envelope, recorded_at: datetime) -> dict[str, Any]:
    """The ``eventlog_events`` row for ``envelope``."""
    return {
        "global_position": envelope.global_position,
        "stream_id": envelope.stream_id,
        "stream_version": envelope.stream_version,
        "event_id": envelope.event_id,
        "event_type": envelope.event_type,
        "occurred_at": envelope.occurred_at.ToDatetime(tzinfo=UTC),
        "recorded_at": recorded_at,
        "correlation_id": envelope.correlation_id,
        "causation_id": envelope.causation_id,
        "producer": envelope.producer,
        "payload_type_url": envelope.payload.type_url,
        "payload": envelope.payload.value,
        "prev_hash": envelope.prev_hash,
        "hash": envelope.hash,
    }
