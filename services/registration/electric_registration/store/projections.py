"""Rebuilding registration's read models from its own event log, and checking them against it.

Registration's table, entry and settings rows are written by ONE fold, the projector's
(:func:`.projector.changes_for`): live, by :func:`.projector.project` in each decision's
transaction right after the mapper's append (``streams.record``), and here, applied in
memory by :class:`Fold`. :func:`rebuild_from_events` folds every event of the store (read
by the mapper, ``codec.read_all``), :func:`rebuild_and_compare` lists every difference
between that fold and the tables (empty list = consistent) and :func:`rebuild_projections`
replaces the tables with it in one transaction (after a backup restore, see docs/chaos.md).
The casino rows are still written by :mod:`..casino.lobby` live; :class:`Fold` folds their
events on its own (docs/registration.md, "One projector").

Table by table (what the events carry decides):

- ``registration_tables``: rebuilt and compared, except the columns fed by the *table
  service's* events through :mod:`..consumers` (``current_hand_number``, ``turn_seat``,
  ``turn_deadline``, ``finished_at``, status ``finished`` and ``ended_at`` of a finished
  table): those are not in registration's log, the rebuild keeps them from the existing row
  (defaults when the row is gone) and the comparison accepts ``finished`` where the log says
  ``running``. Partly derivable columns:

  * ``multiplier_seed`` is secret until the table fills (TableOpened carries only its
    SHA-256): compared with TableFilled once revealed; before, the comparison checks that
    the stored seed still matches the commitment and the rebuild keeps the stored seed. A
    lost unrevealed seed cannot be recovered: the rebuild writes ``''`` (the fill of that
    table then fails: no seed matches the commitment) and the comparison keeps reporting it;
    such a table must be cancelled (CancelTable gives every buy-in back).
  * ``tournament_started``, ``payouts_json``, ``positions_paid`` are prepared at the fill
    from the tournament configuration and logged only with TournamentStarted (appended once
    the buy-ins are posted): derived from TournamentStarted (or the defaults of a table that
    never filled); for a table filled but not started they are kept from the existing row
    (a missing one is reported: without it the tournament can never start).
  The two losses a rebuild cannot repair are reported with :data:`NEEDS_CANCEL` suffixes.
- ``registration_entries``: every column (PlayerRegistered, then TableFilled confirms,
  PlayerUnregistered withdraws, TableCancelled cancels).
- ``registration_player_settings``: every column (PlayerSettingsChanged carries the whole
  state; a shown name equal to the default is stored as ``''``, as ``lobby.apply_update``
  does).
- ``registration_casino_tables``: every column but ``opened_at`` (written from a second read
  of the clock, microseconds from the event's ``occurred_at``): kept from the existing row,
  else the event's time.
- ``registration_casino_sessions``: the open sessions (CasinoSeatTaken minus
  CasinoSeatReleased) with every column but ``started_at`` (second clock read, as above) and
  ``last_active_at`` (TouchSession and the table service's casino events refresh it without
  a registration event): kept from the existing row, else the event's time.

Left out (not a function of the log): ``registration_tiers`` (the tournament
configuration, re-synced at every start by ``handlers.sync_tiers``),
``registration_requests`` (Register de-duplication and attempts, including failed ones that
append nothing), ``registration_wallet_ops`` (wallet calls owed and their progress:
attempts, errors, done) and ``registration_seat_progress`` (fed only by the table service's
events).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import casino_events_pb2 as casino_ev
from electric.registration.v1 import events_pb2 as ev
from electric_domain.lobby.casino import game_of
from electric_domain.tournament.fairness import commitment
from electric_eventlog.engine import read_only
from electric_eventlog.store import EventStore
from google.protobuf.message import Message
from sqlalchemy import Connection, Engine, Table, delete, insert, select

from electric_registration import codec
from electric_registration.store import tables as t
from electric_registration.store.projector import (
    TABLES,
    Change,
    Put,
    Row,
    RunningIfFilled,
    Set,
    SetEntries,
    changes_for,
)

#: Columns of ``registration_tables`` fed by the table service's events (module doc).
CONSUMER_COLUMNS = ("current_hand_number", "turn_seat", "turn_deadline", "finished_at")
#: Columns written from their own clock read or by event-less activity (module doc).
CASINO_TABLE_TIMES = ("opened_at",)
CASINO_SESSION_TIMES = ("started_at", "last_active_at")
#: The differences a rebuild cannot repair (state that was only in a lost row, never in an
#: event): such a table must be cancelled (CancelTable gives every buy-in back).
SEED_LOST = "multiplier_seed: does not match its commitment"
START_LOST = "tournament_started: prepared at the fill, not in the events, lost"
NEEDS_CANCEL = (SEED_LOST, START_LOST)


@dataclass
class Fold:
    """The rows the events say registration's projections hold (module doc): the
    projector's changes (:func:`.projector.changes_for`, the same fold the live path
    writes) applied in memory; per table only the columns the events give; ``times`` are
    the events' times for the casino's columns not derivable."""

    tables: dict[str, Row] = field(default_factory=dict)
    #: Tables whose seed is still secret (TableOpened without TableFilled).
    unrevealed: dict[str, str] = field(default_factory=dict)
    entries: dict[str, Row] = field(default_factory=dict)
    settings: dict[str, Row] = field(default_factory=dict)
    casino_tables: dict[str, Row] = field(default_factory=dict)
    casino_sessions: dict[str, Row] = field(default_factory=dict)
    times: dict[str, datetime] = field(default_factory=dict)
    events: int = 0

    def apply(self, envelope: Envelope, event: Message) -> bool:
        """Fold one event; False when it is not one of registration's."""
        at = envelope.occurred_at.ToDatetime(tzinfo=UTC)
        if isinstance(event, casino_ev.CasinoTableOpened | casino_ev.CasinoSeatTaken):
            self._casino(event, at)
        elif isinstance(event, casino_ev.CasinoSeatReleased):
            self.casino_sessions.pop(event.session_id, None)
        else:
            changes = changes_for(envelope, event, None)
            if not changes:
                return False
            for change in changes:
                self._change(change)
        self.events += 1
        return True

    def _rows(self, table: str) -> dict[str, Row]:
        return {"tables": self.tables, "entries": self.entries, "settings": self.settings}[table]

    def _change(self, change: Change) -> None:
        """The memory sink of a change (:func:`.projector.project` is the SQL one)."""
        if isinstance(change, Put):
            self._rows(change.table)[change.row[TABLES[change.table][1]]] = dict(change.row)
            if change.table == "tables":
                self.unrevealed[change.row["table_id"]] = change.row["multiplier_seed_commitment"]
        elif isinstance(change, Set):
            row = self._rows(change.table)[change.key]
            for column, value in change.values.items():
                if isinstance(value, RunningIfFilled):
                    value = "running" if row["status"] == "filled" else row["status"]
                row[column] = value
            if change.table == "tables" and "multiplier_seed" in change.values:
                self.unrevealed.pop(change.key, None)  # TableFilled revealed it
        elif isinstance(change, SetEntries):
            for entry in self.entries.values():
                if entry["table_id"] == change.table_id and entry["status"] in change.statuses:
                    entry["status"] = change.status
        else:  # Unknown: not compared; a rebuild keeps the stored value (_table_row)
            for column in change.columns:
                self.tables[change.table_id].pop(column, None)

    def _casino(self, event: Any, at: datetime) -> None:
        if isinstance(event, casino_ev.CasinoTableOpened):
            self.casino_tables[event.table_id] = {
                "table_id": event.table_id,
                "game": game_of(event.table_id).value,
                "number": int(event.table_id.partition("-")[2]),
                "owner_id": event.owner_id,
            }
            self.times[f"casino-table:{event.table_id}"] = at
            return
        self.casino_sessions[event.session_id] = {
            "session_id": event.session_id,
            "table_id": event.table_id,
            "game": event.game,
            "player_id": event.player_id,
            "seat": event.seat,
        }
        self.times[f"casino-session:{event.session_id}"] = at


def rebuild_from_events(conn: Connection, events: EventStore) -> Fold:
    """Fold every registration event of the store, in global order (read by the mapper)."""
    fold = Fold()
    for envelope, event in codec.read_all(events, conn):
        fold.apply(envelope, event)
    return fold


# ------------------------------------------------------------------------------ compare


def _value(column: str, value: Any) -> Any:
    """A column's value comparable across SQLite and PostgreSQL."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)  # SQLite gives naive UTC times back
    if isinstance(value, bytes | memoryview):
        if column == "tournament_started":  # compare messages, not encodings
            return ev.TournamentStarted.FromString(bytes(value))
        return bytes(value)
    return value


def _read(conn: Connection, table: Table, key: str) -> dict[str, Row]:
    return {
        r[key]: {c: _value(c, v) for c, v in r.items()}
        for r in conn.execute(select(table)).mappings()
    }


@dataclass
class _Current:
    """The projection tables as stored."""

    tables: dict[str, Row]
    entries: dict[str, Row]
    settings: dict[str, Row]
    casino_tables: dict[str, Row]
    casino_sessions: dict[str, Row]


def _current(conn: Connection) -> _Current:
    return _Current(
        _read(conn, t.tables, "table_id"),
        _read(conn, t.entries, "entry_id"),
        _read(conn, t.player_settings, "player_id"),
        _read(conn, t.casino_tables, "table_id"),
        _read(conn, t.casino_sessions, "session_id"),
    )


def _seed_ok(seed: str, want_commitment: str) -> bool:
    try:
        return commitment(bytes.fromhex(seed)) == want_commitment
    except ValueError:
        return False


def _diff_rows(what: str, want: dict[str, Row], got: dict[str, Row], diffs: list[str]) -> None:
    for key in sorted(set(want) | set(got)):
        w, g = want.get(key), got.get(key)
        if g is None:
            diffs.append(f"{what} {key}: in the events, missing from the projection")
            continue
        if w is None:
            diffs.append(f"{what} {key}: in the projection, not in the events")
            continue
        for column, value in w.items():
            have = g.get(column)
            wanted = _value(column, value)
            if column == "status" and (wanted, have) == ("running", "finished"):
                continue  # finished comes from the table service's events
            if have != wanted:
                diffs.append(
                    f"{what} {key}.{column}: events say {wanted!r}, projection has {have!r}"
                )


def rebuild_and_compare(engine: Engine, events: EventStore) -> list[str]:
    """Differences between the projections and a fold of the events (one consistent
    snapshot of both; module doc for the columns compared). Empty: consistent."""
    with _snapshot_tx(engine) as conn:
        fold = rebuild_from_events(conn, events)
        now = _current(conn)
    diffs: list[str] = []
    _diff_rows("table", fold.tables, now.tables, diffs)
    for table_id, wanted in sorted(fold.unrevealed.items()):
        row = now.tables.get(table_id)
        if row is not None and not _seed_ok(row["multiplier_seed"], wanted):
            diffs.append(f"table {table_id}.{SEED_LOST}")
    for table_id, want in sorted(fold.tables.items()):
        row = now.tables.get(table_id)
        if row is not None and want["status"] == "filled" and row["tournament_started"] is None:
            diffs.append(f"table {table_id}.{START_LOST}")
    _diff_rows("entry", fold.entries, now.entries, diffs)
    _diff_rows("player settings", fold.settings, now.settings, diffs)
    _diff_rows("casino table", fold.casino_tables, now.casino_tables, diffs)
    _diff_rows("casino session", fold.casino_sessions, now.casino_sessions, diffs)
    return diffs


def _snapshot_tx(engine: Engine) -> Connection:
    if engine.dialect.name == "postgresql":
        return engine.connect().execution_options(isolation_level="REPEATABLE READ")
    return read_only(engine.connect())


# ------------------------------------------------------------------------------ rebuild


def _table_row(derived: Row, old: Row | None) -> Row:
    """The full row: the fold, with what it cannot know from the existing row."""
    row: Row = {
        "multiplier_seed": "",
        "positions_paid": 0,
        "payouts_json": "[]",
        "tournament_started": None,
        "ended_at": None,
        "current_hand_number": 0,
        "turn_seat": 0,
        "turn_deadline": None,
        "finished_at": None,
    }
    if old is not None:
        row.update({k: old[k] for k in row})
        if isinstance(row["tournament_started"], ev.TournamentStarted):
            row["tournament_started"] = row["tournament_started"].SerializeToString()
    row.update(derived)
    if old is not None and (derived["status"], old["status"]) == ("running", "finished"):
        row["status"] = "finished"  # the table service's TournamentFinished
    elif derived["status"] != "cancelled":
        row["ended_at"] = None  # only a finish (kept above) or a cancel sets it
    return row


def _with_times(
    fold: Fold, kind: str, key: str, derived: Row, old: Row | None, cols: tuple[str, ...]
) -> Row:
    """A casino row with its time columns kept (else the event's time: module doc)."""
    at = fold.times[f"{kind}:{key}"]
    return {**derived, **{c: (old[c] if old is not None else at) for c in cols}}


def rebuild_projections(engine: Engine, events: EventStore) -> int:
    """Replace the projection tables with a fold of the events in one transaction, keeping
    what the events cannot give from the existing rows (module doc). Returns the number of
    events folded. Run it with the service stopped."""
    with engine.begin() as conn:
        fold = rebuild_from_events(conn, events)
        old = _current(conn)
        for table in (t.entries, t.tables, t.player_settings, t.casino_sessions, t.casino_tables):
            conn.execute(delete(table))
        _insert(
            conn,
            t.tables,
            [_table_row(row, old.tables.get(k)) for k, row in fold.tables.items()],
        )
        _insert(conn, t.entries, list(fold.entries.values()))
        _insert(conn, t.player_settings, list(fold.settings.values()))
        _insert(
            conn,
            t.casino_tables,
            [
                _with_times(
                    fold, "casino-table", k, r, old.casino_tables.get(k), CASINO_TABLE_TIMES
                )
                for k, r in fold.casino_tables.items()
            ],
        )
        _insert(
            conn,
            t.casino_sessions,
            [
                _with_times(
                    fold, "casino-session", k, r, old.casino_sessions.get(k), CASINO_SESSION_TIMES
                )
                for k, r in fold.casino_sessions.items()
            ],
        )
    return fold.events


def _insert(conn: Connection, table: Table, rows: list[Row]) -> None:
    if rows:
        conn.execute(insert(table), rows)
