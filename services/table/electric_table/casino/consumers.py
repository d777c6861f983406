"""The casino seats registration grants (consumer ``table.casino_seats`` on its topic).

``CasinoSeatTaken`` lets the player bet at the table (a row in ``table_casino_seats``);
``CasinoSeatReleased`` of the same session removes it. A released player's unfinished rounds
stay resumable (THB) — releasing a seat never voids or settles anything.
"""

from __future__ import annotations

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import casino_events_pb2 as reg_casino
from electric_eventlog import ConsumerWorker, EventBus, IdempotentConsumer, topic_for
from sqlalchemy import Connection, Engine

from electric_table.casino import repo

CONSUMER_NAME = "table.casino_seats"
SOURCE_TOPIC = topic_for("registration")


def on_seat_taken(conn: Connection, envelope: Envelope, e: reg_casino.CasinoSeatTaken) -> None:
    repo.take_seat(conn, e.table_id, e.player_id, e.game, e.seat, e.session_id)


def on_seat_released(
    conn: Connection, envelope: Envelope, e: reg_casino.CasinoSeatReleased
) -> None:
    repo.release_seat(conn, e.table_id, e.player_id, e.session_id)


def seats_worker(engine: Engine, bus: EventBus, *, group_id: str = "") -> ConsumerWorker:
    """The ConsumerWorker of ``table.casino_seats``; run it with ``worker.run(stop)``."""
    worker = ConsumerWorker(
        engine=engine,
        bus=bus,
        consumer=IdempotentConsumer(CONSUMER_NAME),
        topics=[SOURCE_TOPIC],
        group_id=group_id or None,
    )
    worker.on(reg_casino.CasinoSeatTaken, on_seat_taken)
    worker.on(reg_casino.CasinoSeatReleased, on_seat_released)
    return worker
