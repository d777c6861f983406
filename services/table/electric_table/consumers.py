"""Subscriptions of the table service (idempotent: applied-record and effect in one tx).

``table.tournaments``: TournamentStarted on ``electric.registration.events`` → the table's
TableStarted event (first of stream ``table-<id>``) and its read model, exactly once even on
redelivery. Other event types on that topic are skipped without being recorded.
"""

from __future__ import annotations

import asyncio
from datetime import UTC

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as registration_events
from electric.table.v1 import events_pb2 as table_events
from electric_eventlog import (
    NO_STREAM,
    ConsumerWorker,
    EventBus,
    EventStore,
    IdempotentConsumer,
    ReceivedMessage,
    topic_for,
)
from sqlalchemy import Connection, Engine

from electric_table.store import repo

CONSUMER_NAME = "table.tournaments"
SOURCE_TOPIC = topic_for("registration")
TOURNAMENT_STARTED = registration_events.TournamentStarted.DESCRIPTOR.full_name


def table_stream(table_id: str) -> str:
    """Event stream of a live table."""
    return f"table-{table_id}"


def start_table(store: EventStore, conn: Connection, envelope: Envelope) -> None:
    """Effect for TournamentStarted: append TableStarted and create the read model."""
    started = registration_events.TournamentStarted()
    if not envelope.payload.Unpack(started):
        return  # another type: nothing to do
    event = table_events.TableStarted(
        table_id=started.table_id,
        table_name=started.table_name,
        seats=started.seats,
        starting_stack=started.starting_stack,
        levels=started.levels,
        action_timer=started.action_timer,
        time_bank=started.time_bank,
        multiplier=started.multiplier,
        prize_pool=started.prize_pool,
        buy_in=started.buy_in,
        source_event_id=envelope.event_id,
        first_button_seat=min((s.seat for s in started.seats), default=1),
    )
    occurred = envelope.occurred_at.ToDatetime(tzinfo=UTC)
    [stored] = store.append(
        conn,
        table_stream(started.table_id),
        NO_STREAM,
        [event],
        correlation_id=envelope.correlation_id,
        causation_id=envelope.event_id,
        occurred_at=occurred,
    )
    repo.insert_table(
        conn,
        table_id=started.table_id,
        table_name=started.table_name,
        multiplier=started.multiplier,
        prize_pool_cents=started.prize_pool.cents,
        buy_in_cents=started.buy_in.cents,
        starting_stack=started.starting_stack,
        stream_version=stored.stream_version,
        created_at=occurred,
        seats=[
            repo.SeatRow(
                seat=s.seat,
                player_id=s.player_id,
                entry_id=s.entry_id,
                display_name=s.display_name,
                stack=started.starting_stack,
            )
            for s in started.seats
        ],
    )


def tournament_worker(engine: Engine, bus: EventBus, store: EventStore) -> ConsumerWorker:
    """The ConsumerWorker applying TournamentStarted exactly once."""
    return ConsumerWorker(
        engine=engine,
        bus=bus,
        consumer=IdempotentConsumer(CONSUMER_NAME),
        topics=[SOURCE_TOPIC],
        effect=lambda conn, env: start_table(store, conn, env),
    )


async def run_tournament_consumer(worker: ConsumerWorker, stop: asyncio.Event) -> None:
    """Consume the registration topic, handing only TournamentStarted to ``worker``."""

    async def handle(message: ReceivedMessage) -> None:
        if message.header("event-type") == TOURNAMENT_STARTED.encode():
            await worker.handle(message)

    await worker.bus.consume(worker.topics, group_id=worker.group_id, handler=handle, stop=stop)
