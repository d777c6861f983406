"""Registration follows the table topic to keep "My Tables" current (idempotent).

Consumer ``registration.table-status`` on ``electric.table.events``: TableStarted and
HandStarted → running with the current hand number; TournamentFinished → finished. The
applied-record and the row update commit together (``IdempotentConsumer``), so a redelivered
event changes nothing; the hand number only moves forward. Other event types are skipped
without being recorded. Players at the table are notified after the commit.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import events_pb2 as table_events
from electric_eventlog import (
    ConsumerWorker,
    EventBus,
    IdempotentConsumer,
    ReceivedMessage,
    topic_for,
)
from sqlalchemy import Connection, Engine, case, select, update

from electric_registration.store import repo
from electric_registration.store import tables as t

CONSUMER_NAME = "registration.table-status"
SOURCE_TOPIC = topic_for("table")
HANDLED = {
    table_events.TableStarted.DESCRIPTOR.full_name,
    table_events.HandStarted.DESCRIPTOR.full_name,
    table_events.TournamentFinished.DESCRIPTOR.full_name,
}


def apply_table_event(conn: Connection, envelope: Envelope) -> set[str]:
    """Effect of one table event on registration's tables; the players to notify."""
    payload = envelope.payload
    started = table_events.TableStarted()
    hand = table_events.HandStarted()
    finished = table_events.TournamentFinished()
    tables = t.tables
    if payload.Is(started.DESCRIPTOR):
        payload.Unpack(started)
        table_id = started.table_id
        conn.execute(
            update(tables)
            .where(tables.c.table_id == table_id, tables.c.status.in_(("filled", "running")))
            .values(status="running")
        )
    elif payload.Is(hand.DESCRIPTOR):
        payload.Unpack(hand)
        table_id = hand.table_id
        conn.execute(
            update(tables)
            .where(tables.c.table_id == table_id)
            .values(
                current_hand_number=case(
                    (tables.c.current_hand_number < hand.hand_number, hand.hand_number),
                    else_=tables.c.current_hand_number,
                ),
                status=case((tables.c.status == "filled", "running"), else_=tables.c.status),
            )
        )
    elif payload.Is(finished.DESCRIPTOR):
        payload.Unpack(finished)
        table_id = finished.table_id or finished.tournament_id
        conn.execute(
            update(tables)
            .where(tables.c.table_id == table_id)
            .values(
                status="finished",
                finished_at=envelope.occurred_at.ToDatetime(tzinfo=UTC),
                current_hand_number=case(
                    (
                        tables.c.current_hand_number < finished.hands_played,
                        finished.hands_played,
                    ),
                    else_=tables.c.current_hand_number,
                ),
            )
        )
    else:
        return set()
    exists = conn.execute(select(tables.c.table_id).where(tables.c.table_id == table_id)).first()
    return repo.table_players(conn, [table_id]) if exists else set()


class TableStatusConsumer:
    """ConsumerWorker over the table topic; players are notified after each commit."""

    def __init__(self, engine: Engine, bus: EventBus, notify: Callable[[set[str]], None]) -> None:
        self._notify = notify
        self._touched: set[str] = set()
        self.worker = ConsumerWorker(
            engine=engine,
            bus=bus,
            consumer=IdempotentConsumer(CONSUMER_NAME),
            topics=[SOURCE_TOPIC],
            effect=self._effect,
        )

    def _effect(self, conn: Connection, envelope: Envelope) -> None:
        self._touched |= apply_table_event(conn, envelope)

    async def handle(self, message: ReceivedMessage) -> None:
        """Apply one message if it is a handled type (the others are skipped unrecorded)."""
        if message.header("event-type") not in _WANTED:
            return
        self._touched = set()
        await self.worker.handle(message)
        touched, self._touched = self._touched, set()
        if touched:
            self._notify(touched)

    async def run(self, stop: asyncio.Event) -> None:
        """Consume until ``stop``."""
        w = self.worker
        await w.bus.consume(w.topics, group_id=w.group_id, handler=self.handle, stop=stop)


_WANTED = {name.encode() for name in HANDLED}
