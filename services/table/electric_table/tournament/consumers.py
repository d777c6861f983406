"""Subscriptions of the table service, as typed handlers on the shared `ConsumerWorker`.

``table.tournaments`` on ``electric.registration.events`` (idempotent: the applied-record
and the effect in one transaction; other event types are passed over unrecorded):

* TableFilled → remember the revealed multiplier seed (``table_multiplier_seeds``).
* PlayerSettingsChanged → keep the player's latest Muck Winning / Muck Losing Hands
  settings (``table_player_settings``); every deal passes them into the hand.
* TournamentStarted → start the tournament aggregate with the multiplier (and first
  button) registration drew — the table does not draw them again — and append its first
  events to ``table-<id>`` (TableStarted carrying the domain TournamentStarted, then
  LevelAdvanced), exactly once even on redelivery (the stream must not exist yet); the
  journal's projector writes the read model (``table_tables``, ``table_seats``) from them in
  the same transaction. The seed recorded with it is the event's ``multiplier_seed``, else
  the one TableFilled revealed. After the commit the table's runtime is loaded (its driver
  deals). A TournamentStarted that cannot be played (no revealed seed, wrong number of
  seats, an unknown buy-in or multiplier) still creates the table (TableStarted without a
  domain record, which the projector writes with status ``invalid``) so GetTable answers,
  and logs an error; no hands are dealt there.

The table id is the identity: registration's ``tournament_id`` equals it.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC

from electric.common.v1 import tournament_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as registration_events
from electric.table.v1 import events_pb2 as table_events
from electric_clients import convert
from electric_domain.tournament import Rejected, Tournament, TournamentConfig
from electric_eventlog import (
    NO_STREAM,
    ConsumerWorker,
    EventBus,
    EventStore,
    IdempotentConsumer,
    topic_for,
)
from electric_eventlog.consumer import AfterCommit
from sqlalchemy import Connection, Engine

from electric_table.journal import append_table
from electric_table.store import repo
from electric_table.tournament import mapping
from electric_table.tournament.runtime import TableManager, config_for
from electric_table.tournament.tableinfo import SeatInfo, TableInfo

log = logging.getLogger(__name__)

CONSUMER_NAME = "table.tournaments"
SOURCE_TOPIC = topic_for("registration")


def on_table_filled(
    conn: Connection, envelope: Envelope, filled: registration_events.TableFilled
) -> None:
    """Remember the multiplier seed TableFilled reveals (TournamentStarted may lack it)."""
    if filled.multiplier_seed:
        repo.put_multiplier_seed(conn, filled.table_id, filled.multiplier_seed, filled.multiplier)


def on_player_settings(
    conn: Connection, envelope: Envelope, changed: registration_events.PlayerSettingsChanged
) -> None:
    """Keep the latest showdown settings of the player (a newer version is never replaced by
    an older one delivered late); the next hand dealt at any of their tables uses them."""
    repo.put_player_settings(
        conn,
        changed.player_id,
        repo.PlayerSettings(
            muck_winning_hands=changed.muck_winning_hands,
            muck_losing_hands=changed.muck_losing_hands,
            version=changed.version,
        ),
    )


def start_table(
    store: EventStore,
    conn: Connection,
    envelope: Envelope,
    started: registration_events.TournamentStarted,
) -> str:
    """Create the table of ``started`` (see the module doc); returns its id."""
    table_id = started.table_id
    level_ms = (
        started.level_duration.ToMilliseconds()
        if started.HasField("level_duration")
        else (started.levels[0].duration.ToMilliseconds() if started.levels else 0)
    )
    cfg = config_for(
        action_timer_ms=started.action_timer.ToMilliseconds(),
        time_bank_ms=(
            started.time_bank.ToMilliseconds() if started.HasField("time_bank") else 10_000
        ),
        level_ms=level_ms,
        starting_stack=started.starting_stack,
    )
    seats = sorted(started.seats, key=lambda s: s.seat)
    info = TableInfo(
        table_id=table_id,
        table_name=started.table_name,
        seats=tuple(SeatInfo(s.seat, s.player_id, s.entry_id, s.display_name) for s in seats),
        action_timer_ms=cfg.action_timer_ms,
        source_event_id=envelope.event_id,
    )
    occurred = envelope.occurred_at.ToDatetime(tzinfo=UTC)
    messages, problem = _tournament_events(conn, started, cfg, info)
    if problem:
        log.error("table.unplayable", extra={"table_id": table_id, "problem": problem})
    # The read model (table_tables, table_seats) is the projector's: append_table writes it
    # from these events, then appends them last (see handlers.TableHandlers.persist).
    append_table(
        store,
        conn,
        table_id,
        NO_STREAM,
        messages,
        correlation_id=envelope.correlation_id,
        causation_id=envelope.event_id,
        occurred_at=occurred,
    )
    return table_id


def _first_button(started: registration_events.TournamentStarted, info: TableInfo) -> int | None:
    """The domain seat of registration's first button (None when it did not say)."""
    if not started.first_button_seat:
        return None
    for i, s in enumerate(info.seats):
        if s.seat == started.first_button_seat:
            return i
    return -1  # not a seat of this table: the domain refuses it


def _tournament_events(
    conn: Connection,
    started: registration_events.TournamentStarted,
    cfg: TournamentConfig,
    info: TableInfo,
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
    seed_hex = started.multiplier_seed or repo.get_multiplier_seed(conn, info.table_id) or ""
    if not seed_hex:
        return [fallback], "no revealed multiplier seed (TournamentStarted nor TableFilled)"
    try:
        t = Tournament.start(
            cfg,
            tournament_id=info.table_id,
            players=tuple(s.player_id for s in info.seats),
            buy_in_cents=started.buy_in.cents,
            multiplier_seed=bytes.fromhex(seed_hex),
            multiplier=started.multiplier,
            first_button=_first_button(started, info),
            at=time.time_ns() // 1_000_000,
        )
    except (ValueError, Rejected) as exc:
        return [fallback], f"tournament rejected: {exc}"
    mapped = mapping.to_protos(
        list(t.history),
        info,
        [],
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
                duration=convert.ms_duration(cfg.level_duration_ms),
            )
            for i, lv in enumerate(cfg.blind_levels[: t.state.levels])
        )
    return out, ""


def tournament_worker(
    engine: Engine,
    bus: EventBus,
    store: EventStore,
    manager: TableManager | None = None,
    *,
    group_id: str | None = None,
) -> ConsumerWorker:
    """The ConsumerWorker of ``table.tournaments`` (Kafka consumer group ``group_id``,
    default the consumer name); after a TournamentStarted commits, ``manager`` loads the
    table. Run it with ``worker.run(stop)``."""
    worker = ConsumerWorker(
        engine=engine,
        bus=bus,
        consumer=IdempotentConsumer(CONSUMER_NAME),
        topics=[SOURCE_TOPIC],
        group_id=group_id or None,
    )

    def on_started(
        conn: Connection, envelope: Envelope, started: registration_events.TournamentStarted
    ) -> AfterCommit | None:
        table_id = start_table(store, conn, envelope, started)
        if manager is None:
            return None
        return lambda: manager.load_soon(table_id)

    worker.on(registration_events.TableFilled, on_table_filled)
    worker.on(registration_events.PlayerSettingsChanged, on_player_settings)
    worker.on(registration_events.TournamentStarted, on_started)
    return worker
