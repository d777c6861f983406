"""Registration follows the table topic to keep "My Tables" current (idempotent).

Consumer ``registration.table-status`` on ``electric.table.events``, handlers registered by
payload type on the shared ``ConsumerWorker``: TableStarted and HandStarted → running with
the current hand number; TournamentFinished → finished. The applied-record and the row
update commit together (``IdempotentConsumer``), so a redelivered event changes nothing;
the hand number only moves forward. Other event types are passed over unrecorded. Players at
the table are notified after the commit.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import events_pb2 as table_events
from electric_eventlog import ConsumerWorker, EventBus, IdempotentConsumer, topic_for
from electric_eventlog.consumer import AfterCommit
from sqlalchemy import Connection, Engine

from electric_registration.store import repo, seating

CONSUMER_NAME = "registration.table-status"
SOURCE_TOPIC = topic_for("table")


class TableStatusConsumer:
    """The table-status handlers on one ``ConsumerWorker`` (run it with ``worker.run``)."""

    def __init__(self, engine: Engine, bus: EventBus, notify: Callable[[set[str]], None]) -> None:
        self._notify = notify
        self.worker = ConsumerWorker(
            engine=engine,
            bus=bus,
            consumer=IdempotentConsumer(CONSUMER_NAME),
            topics=[SOURCE_TOPIC],
        )
        self.worker.on(table_events.TableStarted, self._table_started)
        self.worker.on(table_events.HandStarted, self._hand_started)
        self.worker.on(table_events.TournamentFinished, self._finished)

    def _notify_players(self, conn: Connection, table_id: str, known: bool) -> AfterCommit | None:
        players = repo.table_players(conn, [table_id]) if known else set()
        if not players:
            return None
        return lambda: self._notify(players)

    def _table_started(
        self, conn: Connection, envelope: Envelope, started: table_events.TableStarted
    ) -> AfterCommit | None:
        known = seating.table_running(conn, started.table_id)
        return self._notify_players(conn, started.table_id, known)

    def _hand_started(
        self, conn: Connection, envelope: Envelope, hand: table_events.HandStarted
    ) -> AfterCommit | None:
        known = seating.hand_started(conn, hand.table_id, hand.hand_number)
        return self._notify_players(conn, hand.table_id, known)

    def _finished(
        self, conn: Connection, envelope: Envelope, finished: table_events.TournamentFinished
    ) -> AfterCommit | None:
        known = seating.table_finished(
            conn,
            finished.table_id,
            hands=finished.hands_played,
            at=envelope.occurred_at.ToDatetime(tzinfo=UTC),
        )
        return self._notify_players(conn, finished.table_id, known)
