"""Rebuilding the table service's read models from its event log, and checking them.

The table service appends to two kinds of streams (producer ``table``): ``table-<table_id>``
(a tournament table) and ``casino-<round_id>`` (a THB or UTH round). Its read models are
written by ONE fold, the projector's (:func:`.store.projector.changes_for`): live, by
:func:`.store.projector.project` in each append's transaction (``journal.append_table`` /
``append_round``, the service's one append; no handler writes these rows), and here,
applied in memory by :class:`Fold`. :func:`fold_events` folds every event of the store
(global order); :func:`rebuild_and_compare` reports every difference between that fold and
the tables (empty list = consistent) and :func:`rebuild_projections` replaces the tables
with the fold in one transaction (after a backup restore, or a schema change). Run both with
the service stopped.

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
  ``stream_version``. Not derivable (the live path passes them to the projector as
  ``Withheld``): ``seed_hex`` while the deck is withheld (published only by
  CasinoDeckRevealed, so it is compared and rebuilt for revealed rounds only, and kept from
  the existing row otherwise) and ``created_at`` (the writer's clock, not an event's; kept,
  or the CasinoRoundStarted time for a re-created row). A round whose row is missing and whose
  seed was never revealed cannot be re-created (the secret is gone): the rebuild leaves it
  out, logs it, and the comparison keeps naming it.
* ``table_casino_uth_players`` — rebuilt and compared except ``created_at`` (writer's clock;
  kept, else the time of the event that added the row). Players with stakes when betting
  closed (the domain BettingClosed record's seats, named by CasinoUthSeatTaken) or refunded by
  a CasinoRoundVoided; ``acknowledged`` from CasinoResultAcknowledged.
* Left out, not derivable from the table's own events, and written by the handlers and
  consumers themselves: ``table_requests`` and ``table_casino_requests`` (de-duplication of
  commands, refusals included, which append nothing), ``table_deck_seeds`` (secrets withheld
  until their hand ends), ``table_casino_bets`` (wallet work owed: intents exist before any
  event; ``owed_op``/``op_done``/``last_error`` follow the wallet calls), and the rows the
  registration consumers write from registration's events, which are not in this store:
  ``table_multiplier_seeds`` (TableFilled), ``table_player_settings``
  (PlayerSettingsChanged), ``table_casino_seats`` (CasinoSeatTaken / CasinoSeatReleased).
  Those are kept as restored.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog.engine import read_only
from electric_eventlog.store import EventStore
from google.protobuf.message import Message
from sqlalchemy import Connection, Engine, Table, delete, insert, select

from electric_table.store.projector import (
    CASINO_PREFIX,
    TABLE_PREFIX,
    TABLES,
    AckPlayer,
    AddUthPlayers,
    Change,
    Key,
    Put,
    Row,
    Set,
    SettledIfOpen,
    UthSeat,
    changes_for,
    key_of,
    settled_if_open,
)

#: The ending of a difference a rebuild cannot repair: an open round whose row is lost (its
#: deck seed was only in the row). The round needs an operator void (docs/chaos.md, section 5).
NOT_REBUILDABLE = "not rebuildable (its deck seed was never published)"
#: Columns from the writer's clock, not from an event: not compared; a rebuild keeps them.
CLOCK: dict[str, tuple[str, ...]] = {"rounds": ("created_at",), "uth_players": ("created_at",)}

log = logging.getLogger(__name__)


@dataclass
class Fold:
    """The rows the events say the projections hold, by projection (the projector's names:
    ``tables``, ``seats``, ``rounds``, ``uth_players``) and primary key: the projector's
    changes (:func:`.store.projector.changes_for`, the same fold the live path writes)
    applied in memory. A row holds only the columns the events give (a withheld deck seed
    is absent); the clock columns hold the time of the event that created the row."""

    rows: dict[str, dict[Key, Row]] = field(default_factory=lambda: {n: {} for n in TABLES})
    #: UTH seat -> player, per round (CasinoUthSeatTaken).
    uth_seats: dict[str, dict[int, str]] = field(default_factory=dict)
    events: int = 0

    def apply(self, envelope: Envelope, event: Message) -> None:
        """Fold one event of the table service (the memory sink of its changes)."""
        for change in changes_for(envelope, event, None):
            self._change(change)
        self.events += 1

    def _change(self, change: Change) -> None:
        """The memory sink of a change (:func:`.store.projector.project` is the SQL one)."""
        if isinstance(change, Put):
            self.rows[change.table][key_of(change)] = dict(change.row)
        elif isinstance(change, Set):
            row = self.rows[change.table].get(change.key)
            if row is None:  # the SQL update finds no row either
                return
            for column, value in change.values.items():
                if isinstance(value, SettledIfOpen):
                    value = settled_if_open(row["status"])
                row[column] = value
        elif isinstance(change, AckPlayer):
            player = self.rows["uth_players"].get((change.round_id, change.player_id))
            if player is not None:
                player["acknowledged"] = True
        elif isinstance(change, UthSeat):
            self.uth_seats.setdefault(change.round_id, {})[change.seat] = change.player_id
        elif isinstance(change, AddUthPlayers):
            seats = self.uth_seats.get(change.round_id, {})
            players = change.players + tuple(seats[s] for s in change.seats)
            for p in players:
                self.rows["uth_players"].setdefault(
                    (change.round_id, p),
                    {
                        "round_id": change.round_id,
                        "player_id": p,
                        "table_id": change.table_id,
                        "acknowledged": False,
                        "created_at": change.created_at,
                    },
                )
        else:  # Unknown: not compared; a rebuild keeps the stored value
            unknown = self.rows[change.table].get(change.key, {})
            for column in change.columns:
                unknown.pop(column, None)


def fold_events(conn: Connection, events: EventStore) -> Fold:
    """Fold every table and casino event of the store, in global order."""
    fold = Fold()
    for env in events.iter_all(conn):
        if env.stream_id.startswith((TABLE_PREFIX, CASINO_PREFIX)):
            fold.apply(env, events.decode(env))
    return fold


# ------------------------------------------------------------------------------ compare


def _norm(value: Any) -> Any:
    if isinstance(value, datetime):  # SQLite returns naive UTC
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value


def _rows(conn: Connection, name: str) -> dict[Key, Row]:
    table, key = TABLES[name]
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
    """Only the columns the fold knows are compared, clock columns excepted (module doc)."""
    table = TABLES[name][0].name
    diffs: list[str] = []
    for key in sorted(set(want) | set(got), key=repr):
        w, g = want.get(key), got.get(key)
        label = f"{table}{list(key)}"
        if w is None:
            diffs.append(f"{label}: in the table but not in the events")
            continue
        w = {c: v for c, v in w.items() if c not in CLOCK.get(name, ())}
        if g is None:
            lost = name == "rounds" and "seed_hex" not in w
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
        for name, want in fold.rows.items():
            diffs += _differences(name, want, _rows(conn, name))
    return diffs


# ------------------------------------------------------------------------------ rebuild


def rebuild_projections(engine: Engine, events: EventStore) -> int:
    """Replace the projection tables with a fold of the events (one transaction); returns
    the number of events folded. Columns the events do not carry are kept from the
    existing rows (module doc)."""
    with engine.begin() as conn:
        fold = fold_events(conn, events)
        kept = {name: _rows(conn, name) for name in CLOCK}
        for name in reversed(TABLES):
            conn.execute(delete(TABLES[name][0]))
        for name, rows in fold.rows.items():
            out: list[Row] = []
            for key, row in rows.items():
                old = kept.get(name, {}).get(key, {})
                full = {**row, **{c: old[c] for c in CLOCK.get(name, ()) if c in old}}
                if name == "rounds":
                    full["seed_hex"] = row.get("seed_hex") or old.get("seed_hex")
                    if not full["seed_hex"]:
                        log.error("table.rebuild.round_lost", extra={"round_id": key[0]})
                        continue
                out.append(full)
            _insert(conn, TABLES[name][0], out)
    return fold.events


def _insert(conn: Connection, table: Table, rows: list[Row]) -> None:
    if rows:
        conn.execute(insert(table), rows)
