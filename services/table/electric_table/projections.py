"""Rebuilding the table service's read models from its event log, and checking them.

The table service appends to two kinds of streams (producer ``table``): ``table-<table_id>``
(a tournament table) and ``casino-<round_id>`` (a THB or UTH round). Its read models are
written in the same transaction as each append. :func:`fold_events` folds every event of the
store (global order) into the rows those writers would have produced;
:func:`rebuild_and_compare` reports every difference between that fold and the tables (empty
list = consistent) and :func:`rebuild_projections` replaces the tables with the fold in one
transaction (after a backup restore, or a schema change). Run both with the service stopped.

Table by table:

* ``table_tables`` — rebuilt and compared, every column. ``TableStarted`` carries the row
  (``created_at`` is its ``occurred_at``: the consumer appends it with the TournamentStarted's
  time); status ``starting`` (``invalid`` when the TableStarted has no domain record: the
  consumer's unplayable fallback), ``running`` from the first HandStarted, ``finished`` at
  TournamentFinished; ``stream_version`` is the stream's last version.
* ``table_seats`` — rebuilt and compared, every column: TableStarted's seats at the starting
  stack, then each HandEnded's stacks.
* ``table_casino_rounds`` — rebuilt and compared except two columns. Derived: ``table_id``,
  ``game``, ``player_id``, ``game_number`` (CasinoRoundStarted), ``status`` (THB: settled at
  CasinoRoundSettled; UTH: settled at CasinoRoundEnded; both: voided at CasinoRoundVoided),
  ``acknowledged`` (THB: CasinoResultAcknowledged; UTH rows are always true),
  ``stream_version``. Not derivable: ``seed_hex`` while the deck is withheld (published only by
  CasinoDeckRevealed, so it is compared and rebuilt for revealed rounds only, and kept from
  the existing row otherwise) and ``created_at`` (the writer's clock, not an event's; kept,
  or the CasinoRoundStarted time for a re-created row). A round whose row is missing and whose
  seed was never revealed cannot be re-created (the secret is gone): the rebuild leaves it
  out, logs it, and the comparison keeps naming it.
* ``table_casino_uth_players`` — rebuilt and compared except ``created_at`` (writer's clock;
  kept, else the time of the event that added the row). Players with stakes when betting
  closed (the domain BettingClosed record's seats, named by CasinoUthSeatTaken) or refunded by
  a CasinoRoundVoided; ``acknowledged`` from CasinoResultAcknowledged.
* Left out, not derivable from the table's own events: ``table_requests`` and
  ``table_casino_requests`` (de-duplication of commands, refusals included, which append
  nothing), ``table_deck_seeds`` (secrets withheld until their hand ends), ``table_casino_bets``
  (wallet work owed: intents exist before any event; ``owed_op``/``op_done``/``last_error``
  follow the wallet calls), and the rows the registration consumers write from
  registration's events, which are not in this store: ``table_multiplier_seeds``
  (TableFilled), ``table_player_settings`` (PlayerSettingsChanged), ``table_casino_seats``
  (CasinoSeatTaken / CasinoSeatReleased). Those are kept as restored.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import electric_domain.casino.uth.events as uth
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import casino_events_pb2 as cev
from electric.table.v1 import events_pb2 as tev
from electric_eventlog.engine import read_only
from electric_eventlog.store import EventStore
from sqlalchemy import Connection, Engine, Table, delete, insert, select

from electric_table.casino import records as casino_records
from electric_table.casino import repo as casino_repo
from electric_table.casino import uth_records
from electric_table.runtime import config_for
from electric_table.store import tables as t
from electric_table.store.repo import TableStatus

#: The ending of a difference a rebuild cannot repair: an open round whose row is lost (its
#: deck seed was only in the row). The round needs an operator void (docs/chaos.md, section 5).
NOT_REBUILDABLE = "not rebuildable (its deck seed was never published)"

log = logging.getLogger(__name__)

Row = dict[str, Any]
Key = tuple[Any, ...]
TABLE_PREFIX, CASINO_PREFIX = "table-", "casino-"


@dataclass
class Fold:
    """The derivable rows of each projection, by primary key."""

    tables: dict[Key, Row] = field(default_factory=dict)
    seats: dict[Key, Row] = field(default_factory=dict)
    rounds: dict[Key, Row] = field(default_factory=dict)
    uth_players: dict[Key, Row] = field(default_factory=dict)
    #: ``created_at`` for a re-created casino row (not compared: the writer's own clock).
    created: dict[Key, datetime] = field(default_factory=dict)
    #: UTH seat -> player, per round.
    uth_seats: dict[str, dict[int, str]] = field(default_factory=dict)
    events: int = 0


def _at(env: Envelope) -> datetime:
    return env.occurred_at.ToDatetime(tzinfo=UTC)


def _table_event(fold: Fold, env: Envelope, msg: Any) -> None:
    tid = env.stream_id.removeprefix(TABLE_PREFIX)
    if isinstance(msg, tev.TableStarted):
        stack = config_for(
            action_timer_ms=0, time_bank_ms=0, level_ms=0, starting_stack=msg.starting_stack
        ).starting_stack
        valid = msg.HasField("domain")
        fold.tables[(tid,)] = {
            "table_id": tid,
            "table_name": msg.table_name,
            "status": (TableStatus.STARTING if valid else TableStatus.INVALID).value,
            "multiplier": msg.multiplier,
            "prize_pool_cents": msg.prize_pool.cents,
            "buy_in_cents": msg.buy_in.cents,
            "starting_stack": stack,
            "stream_version": env.stream_version,
            "created_at": _at(env),
        }
        for s in msg.seats:
            fold.seats[(tid, s.seat)] = {
                "table_id": tid,
                "seat": s.seat,
                "player_id": s.player_id,
                "entry_id": s.entry_id,
                "display_name": s.display_name,
                "stack": stack,
            }
        return
    row = fold.tables[(tid,)]
    row["stream_version"] = env.stream_version
    if isinstance(msg, tev.HandStarted):
        row["status"] = TableStatus.RUNNING.value
    elif isinstance(msg, tev.TournamentFinished):
        row["status"] = TableStatus.FINISHED.value
    elif isinstance(msg, tev.HandEnded):
        for after in msg.stacks:
            fold.seats[(tid, after.seat)]["stack"] = after.stack


def _casino_event(fold: Fold, env: Envelope, msg: Any) -> None:
    rid = env.stream_id.removeprefix(CASINO_PREFIX)
    if isinstance(msg, cev.CasinoRoundStarted):
        fold.rounds[(rid,)] = {
            "round_id": rid,
            "table_id": msg.table_id,
            "game": msg.game,
            "player_id": msg.player_id,
            "game_number": msg.game_number,
            "status": casino_repo.OPEN,
            "acknowledged": msg.game == uth_records.GAME,  # UTH acks are per player
        }
        fold.created[(rid,)] = _at(env)
    row = fold.rounds[(rid,)]
    row["stream_version"] = env.stream_version
    uth_game = row["game"] == uth_records.GAME
    added: Iterable[str] = ()
    # THB settles with its CasinoRoundSettled; UTH with the CasinoRoundEnded that follows.
    thb_settled = isinstance(msg, cev.CasinoRoundSettled) and not uth_game
    uth_ended = isinstance(msg, cev.CasinoRoundEnded) and row["status"] == casino_repo.OPEN
    if thb_settled or uth_ended:
        row["status"] = casino_repo.SETTLED
    elif isinstance(msg, cev.CasinoRoundVoided):
        row["status"] = casino_repo.VOIDED
        added = [p.player_id for p in msg.players] if uth_game else ()
    elif isinstance(msg, cev.CasinoDeckRevealed):
        row["seed_hex"] = msg.deck_seed_hex
    elif isinstance(msg, cev.CasinoResultAcknowledged):
        if uth_game:
            fold.uth_players[(rid, msg.player_id)]["acknowledged"] = True
        else:
            row["acknowledged"] = True
    elif isinstance(msg, cev.CasinoUthSeatTaken):
        fold.uth_seats.setdefault(rid, {})[msg.seat] = msg.player_id
    elif isinstance(msg, cev.CasinoBettingClosed):
        closed = casino_records.decode(msg, "")
        assert isinstance(closed, uth.BettingClosed), closed
        added = [fold.uth_seats[rid][seat] for seat, _, _ in closed.stakes]
    for p in added:
        if (rid, p) not in fold.uth_players:
            fold.uth_players[(rid, p)] = {
                "round_id": rid,
                "player_id": p,
                "table_id": row["table_id"],
                "acknowledged": False,
            }
            fold.created[(rid, p)] = _at(env)


def fold_events(conn: Connection, events: EventStore) -> Fold:
    """Fold every table and casino event of the store, in global order."""
    fold = Fold()
    for env in events.iter_all(conn):
        if env.stream_id.startswith(TABLE_PREFIX):
            _table_event(fold, env, events.decode(env))
        elif env.stream_id.startswith(CASINO_PREFIX):
            _casino_event(fold, env, events.decode(env))
        else:
            continue
        fold.events += 1
    return fold


# ------------------------------------------------------------------------------ compare


def _projections(fold: Fold) -> list[tuple[Table, tuple[str, ...], dict[Key, Row]]]:
    """(table, primary key columns, the fold's rows) of each rebuilt projection."""
    return [
        (t.tables, ("table_id",), fold.tables),
        (t.seats, ("table_id", "seat"), fold.seats),
        (t.casino_rounds, ("round_id",), fold.rounds),
        (t.casino_uth_players, ("round_id", "player_id"), fold.uth_players),
    ]


def _norm(value: Any) -> Any:
    if isinstance(value, datetime):  # SQLite returns naive UTC
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value


def _rows(conn: Connection, table: Table, key: tuple[str, ...]) -> dict[Key, Row]:
    out: dict[Key, Row] = {}
    for r in conn.execute(select(table)).mappings():
        row = {k: _norm(v) for k, v in r.items()}
        out[tuple(row[c] for c in key)] = row
    return out


def _snapshot_tx(engine: Engine) -> Connection:
    if engine.dialect.name == "postgresql":
        return engine.connect().execution_options(isolation_level="REPEATABLE READ")
    return read_only(engine.connect())


def _differences(name: str, want: Mapping[Key, Row], got: Mapping[Key, Row]) -> list[str]:
    """Only the columns the fold knows are compared (see the module doc)."""
    diffs: list[str] = []
    for key in sorted(set(want) | set(got), key=repr):
        w, g = want.get(key), got.get(key)
        label = f"{name}{list(key)}"
        if w is None:
            diffs.append(f"{label}: in the table but not in the events")
        elif g is None:
            lost = name == t.casino_rounds.name and "seed_hex" not in w
            why = f" and {NOT_REBUILDABLE}" if lost else ""
            diffs.append(f"{label}: missing{why}; events say {w}")
        else:
            bad = {c: (v, g[c]) for c, v in w.items() if _norm(v) != g[c]}
            if bad:
                said = ", ".join(f"{c} events {v!r} table {h!r}" for c, (v, h) in bad.items())
                diffs.append(f"{label}: {said}")
    return diffs


def rebuild_and_compare(engine: Engine, events: EventStore) -> list[str]:
    """Differences between the projections and a fold of the events (one consistent
    snapshot of both). An empty list means the read models are exactly the fold."""
    with _snapshot_tx(engine) as conn:
        fold = fold_events(conn, events)
        diffs: list[str] = []
        for table, key, want in _projections(fold):
            diffs += _differences(table.name, want, _rows(conn, table, key))
    return diffs


# ------------------------------------------------------------------------------ rebuild


def rebuild_projections(engine: Engine, events: EventStore) -> int:
    """Replace the projection tables with a fold of the events (one transaction); returns
    the number of events folded. Columns the events do not carry are kept from the
    existing rows (module doc)."""
    with engine.begin() as conn:
        fold = fold_events(conn, events)
        kept_rounds = _rows(conn, t.casino_rounds, ("round_id",))
        kept_players = _rows(conn, t.casino_uth_players, ("round_id", "player_id"))
        for table, _, _ in reversed(_projections(fold)):
            conn.execute(delete(table))
        _insert(conn, t.tables, list(fold.tables.values()))
        _insert(conn, t.seats, list(fold.seats.values()))
        rounds: list[Row] = []
        for key, row in fold.rounds.items():
            old = kept_rounds.get(key, {})
            seed = row.get("seed_hex") or old.get("seed_hex")
            if not seed:
                log.error("table.rebuild.round_lost", extra={"round_id": key[0]})
                continue
            created = old.get("created_at", fold.created[key])
            rounds.append({**row, "seed_hex": seed, "created_at": created})
        _insert(conn, t.casino_rounds, rounds)
        players = [
            {**row, "created_at": kept_players.get(key, {}).get("created_at", fold.created[key])}
            for key, row in fold.uth_players.items()
        ]
        _insert(conn, t.casino_uth_players, players)
    return fold.events


def _insert(conn: Connection, table: Table, rows: list[Row]) -> None:
    if rows:
        conn.execute(insert(table), rows)
