"""The table service's one writer to the event store: its stream names, its append, and the
projection of what it appends.

Every event the table service stores goes through `append_table` (a tournament table's
stream) or `append_round` (a casino round's stream), so there is one place that names the
streams and one call of the store's ``append`` (issue 25: one module per service appends).
Each stored event is the proto the game's mapper built (`mapping` for tournament tables,
`casino.records` for THB, `casino.uth_records` for UTH); the store encodes it once, and
the same bytes feed the hash chain and the Kafka record (docs/eventlog.md).

Both also write the rows those events determine, with the service's one projector
(:func:`.store.projector.project`), in the same transaction (issue 25 item 3): the handlers
write none of those rows themselves.

* `append_table` projects first and appends last: the append takes the store's position
  lock until the commit, so the shorter the rest of the transaction after it, the better
  (issue 16; handlers.TableHandlers.persist). The rows are projected from the envelopes the
  append then stores: the versions that follow ``expected`` (an exact version, or
  ``NO_STREAM``; any other expectation the append refuses) and one time for the batch,
  given to the append as the events' ``occurred_at``.
* `append_round` appends and then projects the stored envelopes, as the casino writers
  always did; the round's withheld deck seed and the rows' ``created_at`` (the writer's
  clock) go to the projector as :class:`.store.projector.Withheld`. `round_appends` does the
  same for several appends to one round in one transaction (a UTH pass: one per command,
  each with its own causation), projected together at the end: one statement per row for
  the pass, as before.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog.model import NO_STREAM, Expected
from electric_eventlog.store import EventStore
from google.protobuf.message import Message
from sqlalchemy import Connection

from electric_table.store import projector

__all__ = [
    "RoundAppends",
    "append_round",
    "append_table",
    "casino_stream",
    "round_appends",
    "table_stream",
]


def table_stream(table_id: str) -> str:
    """Event stream of a tournament table."""
    return projector.TABLE_PREFIX + table_id


def casino_stream(round_id: str) -> str:
    """Event stream of a casino round (THB or UTH)."""
    return projector.CASINO_PREFIX + round_id


def append_table(
    store: EventStore,
    conn: Connection,
    table_id: str,
    expected: Expected,
    events: Sequence[Message],
    *,
    correlation_id: str = "",
    causation_id: str = "",
    occurred_at: datetime | None = None,
) -> list[Envelope]:
    """Project ``events``, then append them to table ``table_id``'s stream at ``expected``
    (an exact version or ``NO_STREAM``), in ``conn``'s transaction (a concurrent writer or a
    lost fence raises: nothing of it stays); the stored events."""
    stream = table_stream(table_id)
    if expected is NO_STREAM:
        last = 0
    elif isinstance(expected, int):
        last = expected
    else:
        raise ValueError(f"append_table needs an exact version, got {expected}")
    at = occurred_at or datetime.now(UTC)
    pending = []
    for k in range(len(events)):
        envelope = Envelope(stream_id=stream, stream_version=last + k + 1)
        envelope.occurred_at.FromDatetime(at)
        pending.append(envelope)
    projector.project(conn, pending, events)
    return _append(store, conn, stream, expected, events, correlation_id, causation_id, at)


def append_round(
    store: EventStore,
    conn: Connection,
    round_id: str,
    expected: Expected,
    events: Sequence[Message],
    *,
    correlation_id: str = "",
    causation_id: str = "",
    seed_hex: str | None = None,
) -> list[Envelope]:
    """Append ``events`` to casino round ``round_id``'s stream at ``expected`` in
    ``conn``'s transaction, then project them; the stored events. ``seed_hex``: the round's
    withheld deck seed, when ``events`` start it."""
    with round_appends(store, conn, round_id, seed_hex=seed_hex) as journal:
        return journal.append(
            expected, events, correlation_id=correlation_id, causation_id=causation_id
        )


class RoundAppends:
    """Several appends to one casino round's stream in one transaction, each with its own
    causal ids (a UTH pass: one per command), projected together (:func:`round_appends`)."""

    def __init__(self, store: EventStore, conn: Connection, round_id: str) -> None:
        self.store, self.conn, self.stream = store, conn, casino_stream(round_id)
        self.stored: list[Envelope] = []
        self.events: list[Message] = []

    def append(
        self,
        expected: Expected,
        events: Sequence[Message],
        *,
        correlation_id: str = "",
        causation_id: str = "",
    ) -> list[Envelope]:
        """Append ``events`` at ``expected``; the stored events (projected at the end)."""
        stored = _append(
            self.store, self.conn, self.stream, expected, events, correlation_id, causation_id, None
        )
        self.stored += stored
        self.events += events
        return stored


@contextlib.contextmanager
def round_appends(
    store: EventStore, conn: Connection, round_id: str, *, seed_hex: str | None = None
) -> Iterator[RoundAppends]:
    """Appends to round ``round_id`` (:class:`RoundAppends`); when the block ends without an
    error, everything appended is projected, so the changes of one row are one statement for
    the whole transaction. ``seed_hex``: as in :func:`append_round`."""
    journal = RoundAppends(store, conn, round_id)
    yield journal
    withheld = projector.Withheld(seed_hex=seed_hex, created_at=datetime.now(UTC))
    projector.project(conn, journal.stored, journal.events, withheld, store=store)


def _append(
    store: EventStore,
    conn: Connection,
    stream_id: str,
    expected: Expected,
    events: Sequence[Message],
    correlation_id: str,
    causation_id: str,
    occurred_at: datetime | None,
) -> list[Envelope]:
    # Empty ids default to the bound causal context (inside a call: its correlation id and
    # the request id as causation); see electric_eventlog.context.
    return store.append(
        conn,
        stream_id,
        expected,
        list(events),
        correlation_id=correlation_id,
        causation_id=causation_id,
        occurred_at=occurred_at,
    )
