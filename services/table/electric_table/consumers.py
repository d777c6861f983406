"""Subscriptions of the table service (idempotent: applied-record and effect in one tx).

``table.tournaments`` on ``electric.registration.events``:

* TableFilled → remember the revealed multiplier seed (``table_multiplier_seeds``).
* TournamentStarted → start the tournament aggregate (`Tournament.start` with the revealed
  multiplier seed and the seats of the event) and append its first events to
  ``table-<id>`` — TableStarted (carrying the domain TournamentStarted) and LevelAdvanced —
  plus the read model, exactly once even on redelivery (the consumer's applied-record is in
  the same transaction, and the stream must not exist yet). The seed is the event's
  ``multiplier_seed``, else the one TableFilled revealed.
  A TournamentStarted that cannot be played (no revealed seed, wrong number of seats, an
  unknown buy-in, a multiplier that disagrees with the seed) still creates the table
  (TableStarted without a domain record) so GetTable answers, and logs an error; no hands
  are dealt there.

Other event types on that topic are skipped without being recorded.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC

from electric.common.v1 import tournament_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as registration_events
from electric.table.v1 import events_pb2 as table_events
from electric_domain.tournament import Rejected, Tournament, TournamentConfig
from electric_eventlog import (
    NO_STREAM,
    ConsumerWorker,
    EventBus,
    EventStore,
    IdempotentConsumer,
    ReceivedMessage,
    decode_envelope,
    topic_for,
)
from sqlalchemy import Connection, Engine

from electric_table import mapping
from electric_table.runtime import TableManager, config_for, table_stream
from electric_table.store import repo

log = logging.getLogger(__name__)

CONSUMER_NAME = "table.tournaments"
SOURCE_TOPIC = topic_for("registration")
TOURNAMENT_STARTED = registration_events.TournamentStarted.DESCRIPTOR.full_name
TABLE_FILLED = registration_events.TableFilled.DESCRIPTOR.full_name
HANDLED_TYPES = {TOURNAMENT_STARTED.encode(), TABLE_FILLED.encode()}


def _seed_of(conn: Connection, started: registration_events.TournamentStarted) -> str:
    if started.multiplier_seed:
        return started.multiplier_seed
    return repo.get_multiplier_seed(conn, started.table_id or started.tournament_id) or ""


def start_table(store: EventStore, conn: Connection, envelope: Envelope) -> None:
    """Effect for TableFilled / TournamentStarted (see the module doc)."""
    filled = registration_events.TableFilled()
    if envelope.payload.Unpack(filled):
        if filled.multiplier_seed:
            repo.put_multiplier_seed(
                conn, filled.table_id, filled.multiplier_seed, filled.multiplier
            )
        return
    started = registration_events.TournamentStarted()
    if not envelope.payload.Unpack(started):
        return  # another type: nothing to do
    table_id = started.table_id or started.tournament_id
    action_timer_ms = started.action_timer.ToMilliseconds()
    level_ms = (
        started.level_duration.ToMilliseconds()
        if started.HasField("level_duration")
        else (started.levels[0].duration.ToMilliseconds() if started.levels else 0)
    )
    cfg = config_for(
        action_timer_ms=action_timer_ms,
        time_bank_ms=(
            started.time_bank.ToMilliseconds() if started.HasField("time_bank") else 10_000
        ),
        level_ms=level_ms,
        starting_stack=started.starting_stack,
    )
    seats = sorted(started.seats, key=lambda s: s.seat)
    info = mapping.TableInfo(
        table_id=table_id,
        table_name=started.table_name,
        seats=tuple(
            mapping.SeatInfo(s.seat, s.player_id, s.entry_id, s.display_name) for s in seats
        ),
        action_timer_ms=cfg.action_timer_ms,
        source_event_id=envelope.event_id,
    )
    occurred = envelope.occurred_at.ToDatetime(tzinfo=UTC)
    messages, problem = _tournament_events(conn, started, cfg, info)
    if problem:
        log.error("table %s cannot be played: %s", table_id, problem)
    stored = store.append(
        conn,
        table_stream(table_id),
        NO_STREAM,
        messages,
        correlation_id=envelope.correlation_id,
        causation_id=envelope.event_id,
        occurred_at=occurred,
    )
    repo.insert_table(
        conn,
        table_id=table_id,
        table_name=started.table_name,
        multiplier=started.multiplier,
        prize_pool_cents=started.prize_pool.cents,
        buy_in_cents=started.buy_in.cents,
        starting_stack=cfg.starting_stack,
        stream_version=stored[-1].stream_version,
        created_at=occurred,
        seats=[
            repo.SeatRow(
                seat=s.seat,
                player_id=s.player_id,
                entry_id=s.entry_id,
                display_name=s.display_name,
                stack=cfg.starting_stack,
            )
            for s in seats
        ],
    )
    if problem:
        repo.update_table(
            conn, table_id, stream_version=stored[-1].stream_version, status="invalid"
        )


def _tournament_events(
    conn: Connection,
    started: registration_events.TournamentStarted,
    cfg: TournamentConfig,
    info: mapping.TableInfo,
) -> tuple[list[table_events.TableStarted | table_events.LevelAdvanced], str]:
    """The first events of the table (and a problem when it cannot be played)."""
    fallback = table_events.TableStarted(
        table_id=info.table_id,
        table_name=started.table_name,
        seats=started.seats,
        starting_stack=started.starting_stack,
        levels=started.levels,
        action_timer=started.action_timer,
        time_bank=started.time_bank,
        multiplier=started.multiplier,
        prize_pool=started.prize_pool,
        buy_in=started.buy_in,
        source_event_id=info.source_event_id,
        first_button_seat=min((s.seat for s in started.seats), default=1),
    )
    seed_hex = _seed_of(conn, started)
    if not seed_hex:
        return [fallback], "no revealed multiplier seed (TournamentStarted nor TableFilled)"
    try:
        seed = bytes.fromhex(seed_hex)
        t = Tournament.start(
            cfg,
            tournament_id=info.table_id,
            players=tuple(s.player_id for s in info.seats),
            buy_in_cents=started.buy_in.cents,
            multiplier_seed=seed,
            at=time.time_ns() // 1_000_000,
        )
    except (ValueError, Rejected) as exc:
        return [fallback], f"tournament rejected: {exc}"
    if t.state.multiplier != started.multiplier:
        return [fallback], (
            f"multiplier {started.multiplier} of TournamentStarted disagrees with the seed's "
            f"draw {t.state.multiplier}"
        )
    proj = mapping.Projector(info)
    mapped = mapping.to_protos(
        list(t.history),
        proj,
        level_ms=cfg.level_duration_ms,
        multiplier=t.state.multiplier,
        prize_pool_cents=t.state.prize_pool_cents,
        buy_in_cents=t.state.buy_in_cents,
    )
    out: list[table_events.TableStarted | table_events.LevelAdvanced] = []
    for m in mapped:
        assert isinstance(m.message, table_events.TableStarted | table_events.LevelAdvanced)
        out.append(m.message)
    first = out[0]
    assert isinstance(first, table_events.TableStarted)
    if started.levels:
        first.levels.extend(started.levels)
    else:
        first.levels.extend(
            tournament_pb2.BlindLevel(
                level=i + 1,
                small_blind=lv.small_blind,
                big_blind=lv.big_blind,
                ante=lv.ante,
                duration=mapping.ms_duration(cfg.level_duration_ms),
            )
            for i, lv in enumerate(cfg.blind_levels[: t.state.levels])
        )
    return out, ""


def tournament_worker(
    engine: Engine, bus: EventBus, store: EventStore, *, group_id: str | None = None
) -> ConsumerWorker:
    """The ConsumerWorker applying TournamentStarted exactly once (Kafka consumer group
    ``group_id``, default the consumer name ``table.tournaments``)."""
    return ConsumerWorker(
        engine=engine,
        bus=bus,
        consumer=IdempotentConsumer(CONSUMER_NAME),
        topics=[SOURCE_TOPIC],
        effect=lambda conn, env: start_table(store, conn, env),
        group_id=group_id or None,
    )


async def run_tournament_consumer(
    worker: ConsumerWorker, stop: asyncio.Event, manager: TableManager | None = None
) -> None:
    """Consume the registration topic; after a TournamentStarted, load the table's runtime."""

    async def handle(message: ReceivedMessage) -> None:
        event_type = message.header("event-type")
        if event_type not in HANDLED_TYPES:
            return
        await worker.handle(message)
        if manager is not None and event_type == TOURNAMENT_STARTED.encode():
            started = registration_events.TournamentStarted()
            if decode_envelope(message).payload.Unpack(started):
                await manager.load(started.table_id or started.tournament_id)

    await worker.bus.consume(worker.topics, group_id=worker.group_id, handler=handle, stop=stop)
