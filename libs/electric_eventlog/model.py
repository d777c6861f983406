"""Value types of the event log: expected-version markers, new events, snapshots."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from google.protobuf.message import Message


class ExpectedVersion(enum.Enum):
    """Symbolic expected versions for :meth:`EventStore.append` (an ``int`` is exact)."""

    #: Append whatever the stream's current version is (no concurrency check).
    ANY = "any"
    #: The stream must not exist yet (same as the exact version ``0``).
    NO_STREAM = "no_stream"
    #: The stream must already have at least one event.
    STREAM_EXISTS = "stream_exists"


ANY = ExpectedVersion.ANY
NO_STREAM = ExpectedVersion.NO_STREAM
STREAM_EXISTS = ExpectedVersion.STREAM_EXISTS

#: What ``expected_version`` accepts: the exact current version (0 = empty) or a marker.
Expected = int | ExpectedVersion


@dataclass(frozen=True)
class NewEvent:
    """An event to append, with optional per-event overrides.

    ``payload`` is any protobuf message; its type name comes from its descriptor. A
    ``google.protobuf.Any`` payload is stored as is (its ``type_url`` names the type), which is
    how events of types unknown to this process pass through untouched.
    """

    payload: Message
    #: UUID text; generated (uuid4) when empty.
    event_id: str = ""
    #: Overrides the ``occurred_at`` given to ``append`` for this event.
    occurred_at: datetime | None = None
    #: Overrides the ``causation_id`` given to ``append`` for this event.
    causation_id: str | None = None


@dataclass(frozen=True)
class Snapshot:
    """A stored snapshot: the state of ``stream_id`` after ``stream_version`` events."""

    stream_id: str
    stream_version: int
    #: Fully qualified protobuf type of ``state``.
    state_type: str
    #: The state message, decoded when its type is known, else a ``google.protobuf.Any``.
    state: Message
