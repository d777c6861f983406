"""The table service's one projector: the one fold of its own events into the rows it reads
(``table_tables``, ``table_seats``, ``table_casino_rounds``, ``table_casino_uth_players``).

:func:`changes_for` is the fold: what one stored event changes, as data (:class:`Put`,
:class:`Set`, :class:`AckPlayer`, :class:`UthSeat`, :class:`AddUthPlayers`,
:class:`Unknown`). It has two sinks:

* :func:`project` writes the changes with SQL, live, in the transaction of the append
  (``electric_table.journal``, the service's one append: ``append_table`` projects and then
  appends, as the table's writers always did — the append takes the store's position lock
  until the commit, so a table's rows come first, issue 16; ``append_round`` appends and
  then projects, as the casino writers always did). The handlers write none of these rows
  themselves. The changes of one append are written together: those of one row become one
  statement, the seats of a HandEnded one batch.
* ``electric_table.projections.Fold`` applies the same changes to rows in memory, to rebuild
  the tables after a restore and to compare them with the log.

Two inputs are in no event, so the live path passes them as :class:`Withheld`:

* a casino round's deck seed (secret until CasinoDeckRevealed publishes it; only its
  commitment is in CasinoRoundStarted), and
* the time a casino row is created (``created_at``: the writer's clock, not compared).

Without them (a rebuild) the round's seed is :class:`Unknown` until it is revealed (the
rebuild keeps it from the existing row) and a casino row's ``created_at`` is the time of the
event that creates it (the rebuild keeps the existing row's).

A tournament table's ``created_at`` is its TableStarted's ``occurred_at`` (the consumer
appends it with the TournamentStarted's time), so it is derived like every other column.

The UTH players of a round are named by seat in its BettingClosed (the domain record's
stakes); a seat's player is in the round's CasinoUthSeatTaken, an earlier event of the same
stream. The memory sink remembers them (:class:`UthSeat`); the SQL sink takes them from the
same append, else reads them from the round's stream (once per round).

The service's other rows are not a fold of its events and stay written by its handlers and
consumers: request de-duplication, withheld hand deck seeds, owed wallet work (casino
bets), and the rows registration's events feed (``electric_table.projections`` says why
for each; docs/table-service.md, "One projector").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, TypeGuard

import electric_domain.casino.uth.events as uth
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import casino_events_pb2 as cev
from electric.table.v1 import events_pb2 as tev
from electric_domain.tournament import default_config
from electric_eventlog.dataclass_codec import DataclassCodec
from electric_eventlog.once import insert_once
from electric_eventlog.store import EventStore
from google.protobuf.message import Message
from sqlalchemy import Connection, Table, bindparam, case, insert, update

from electric_table.store import tables as t
from electric_table.store.repo import TableStatus

Row = dict[str, Any]
Key = tuple[Any, ...]

#: Stream name prefixes: a tournament table's events, a casino round's.
TABLE_PREFIX, CASINO_PREFIX = "table-", "casino-"

#: Each projected table by its name in the changes, with its primary key columns.
TABLES: dict[str, tuple[Table, tuple[str, ...]]] = {
    "tables": (t.tables, ("table_id",)),
    "seats": (t.seats, ("table_id", "seat")),
    "rounds": (t.casino_rounds, ("round_id",)),
    "uth_players": (t.casino_uth_players, ("round_id", "player_id")),
}

#: Decodes the one domain record the fold reads (a UTH BettingClosed's stakes).
_UTH = DataclassCodec({"uth": uth})


@dataclass(frozen=True)
class Withheld:
    """What the live path knows beyond the events (module doc)."""

    #: CasinoRoundStarted: the round's secret deck seed, hex.
    seed_hex: str | None = None
    #: ``created_at`` of the casino rows the append creates (the writer's clock).
    created_at: datetime | None = None


@dataclass(frozen=True)
class Put:
    """Insert a row."""

    table: str
    row: Row


@dataclass(frozen=True)
class Set:
    """Update the row ``key`` of ``table``."""

    table: str
    key: Key
    values: Row


@dataclass(frozen=True)
class SettledIfOpen:
    """A status value: ``settled`` if the round is ``open``, else its status unchanged (a UTH
    round ends after it settled or was voided)."""


SETTLED_IF_OPEN = SettledIfOpen()


@dataclass(frozen=True)
class AckPlayer:
    """The player saw the result of UTH round ``round_id`` (no row for a THB round: its
    ``acknowledged`` is the round row's)."""

    round_id: str
    player_id: str


@dataclass(frozen=True)
class UthSeat:
    """Seat ``seat`` of UTH round ``round_id`` is ``player_id``'s (no row: module doc)."""

    round_id: str
    seat: int
    player_id: str


@dataclass(frozen=True)
class AddUthPlayers:
    """The players of a UTH round owed its result, each once: ``players`` by id, ``seats``
    by the round's seat (module doc)."""

    round_id: str
    table_id: str
    players: tuple[str, ...]
    seats: tuple[int, ...]
    created_at: datetime


@dataclass(frozen=True)
class Unknown:
    """The events do not say these columns of a row (module doc): nothing is written."""

    table: str
    key: Key
    columns: tuple[str, ...]


Change = Put | Set | AckPlayer | UthSeat | AddUthPlayers | Unknown


def _at(envelope: Envelope) -> datetime:
    return envelope.occurred_at.ToDatetime(tzinfo=UTC)


def changes_for(
    envelope: Envelope, event: Message, withheld: Withheld | None = None
) -> list[Change]:
    """What ``event`` (stored as ``envelope``) changes in the rows; [] for an event of
    another service's stream. ``withheld``: module doc."""
    if envelope.stream_id.startswith(TABLE_PREFIX):
        return _table(envelope.stream_id.removeprefix(TABLE_PREFIX), envelope, event)
    if envelope.stream_id.startswith(CASINO_PREFIX):
        rid = envelope.stream_id.removeprefix(CASINO_PREFIX)
        return _casino(rid, envelope, event, withheld or Withheld())
    return []


def _table(tid: str, envelope: Envelope, e: Message) -> list[Change]:
    version = envelope.stream_version
    if isinstance(e, tev.TableStarted):
        stack = e.starting_stack or default_config().starting_stack
        valid = e.HasField("domain")  # none: the consumer's unplayable fallback
        row: Row = {
            "table_id": tid,
            "table_name": e.table_name,
            "status": (TableStatus.STARTING if valid else TableStatus.INVALID).value,
            "multiplier": e.multiplier,
            "prize_pool_cents": e.prize_pool.cents,
            "buy_in_cents": e.buy_in.cents,
            "starting_stack": stack,
            "stream_version": version,
            "created_at": _at(envelope),
        }
        seats: list[Change] = [
            Put(
                "seats",
                {
                    "table_id": tid,
                    "seat": s.seat,
                    "player_id": s.player_id,
                    "entry_id": s.entry_id,
                    "display_name": s.display_name,
                    "stack": stack,
                },
            )
            for s in e.seats
        ]
        return [Put("tables", row), *seats]
    values: Row = {"stream_version": version}
    if isinstance(e, tev.HandStarted):
        values["status"] = TableStatus.RUNNING.value
    elif isinstance(e, tev.TournamentFinished):
        values["status"] = TableStatus.FINISHED.value
    out: list[Change] = [Set("tables", (tid,), values)]
    if isinstance(e, tev.HandEnded):
        out += [Set("seats", (tid, s.seat), {"stack": s.stack}) for s in e.stacks]
    return out


def _casino(rid: str, envelope: Envelope, e: Message, w: Withheld) -> list[Change]:
    version, at = envelope.stream_version, w.created_at or _at(envelope)
    if isinstance(e, cev.CasinoRoundStarted):
        row: Row = {
            "round_id": rid,
            "table_id": e.table_id,
            "game": e.game,
            "player_id": e.player_id,
            "game_number": e.game_number,
            "status": t.ROUND_OPEN,
            "acknowledged": e.game == t.UTH_GAME,  # a UTH result is acknowledged per player
            "seed_hex": w.seed_hex or "",
            "stream_version": version,
            "created_at": at,
        }
        unknown = [Unknown("rounds", (rid,), ("seed_hex",))] if w.seed_hex is None else []
        return [Put("rounds", row), *unknown]
    values: Row = {"stream_version": version}
    out: list[Change] = [Set("rounds", (rid,), values)]
    # THB settles with its CasinoRoundSettled; UTH with the CasinoRoundEnded that follows.
    if isinstance(e, cev.CasinoRoundSettled) and e.game != t.UTH_GAME:
        values["status"] = t.ROUND_SETTLED
    elif isinstance(e, cev.CasinoRoundEnded):
        values["status"] = SETTLED_IF_OPEN
    elif isinstance(e, cev.CasinoRoundVoided):
        values["status"] = t.ROUND_VOIDED
        if e.game == t.UTH_GAME:  # every player refunded is owed the result
            players = tuple(p.player_id for p in e.players)
            out.append(AddUthPlayers(rid, e.table_id, players, (), at))
    elif isinstance(e, cev.CasinoDeckRevealed):
        values["seed_hex"] = e.deck_seed_hex
    elif isinstance(e, cev.CasinoResultAcknowledged):
        values["acknowledged"] = True  # THB; a UTH round's is always true
        out.append(AckPlayer(rid, e.player_id))
    elif isinstance(e, cev.CasinoUthSeatTaken):
        out.append(UthSeat(rid, e.seat, e.player_id))
    elif isinstance(e, cev.CasinoBettingClosed):
        closed = _UTH.decode(e.domain.canonical_json)
        assert isinstance(closed, uth.BettingClosed), closed
        seats = tuple(seat for seat, _, _ in closed.stakes)
        out.append(AddUthPlayers(rid, e.table_id, (), seats, at))
    return out


def key_of(change: Put | Set) -> Key:
    """The primary key of the row ``change`` writes."""
    if isinstance(change, Set):
        return change.key
    return tuple(change.row[c] for c in TABLES[change.table][1])


def settled_if_open(status: str) -> str:
    """:data:`SETTLED_IF_OPEN` applied to a round whose status is ``status``."""
    return t.ROUND_SETTLED if status == t.ROUND_OPEN else status


# ------------------------------------------------------------------------- the SQL sink


def project(
    conn: Connection,
    stored: Sequence[Envelope],
    events: Sequence[Message],
    withheld: Withheld | None = None,
    *,
    store: EventStore | None = None,
) -> None:
    """Write the rows of ``events`` appended (or about to be appended) as ``stored``, in
    ``conn``'s transaction (the live sink). ``store``: where the SQL sink reads a UTH
    round's seats taken by an earlier append (module doc)."""
    changes = [
        c
        for envelope, event in zip(stored, events, strict=True)
        for c in changes_for(envelope, event, withheld)
    ]
    _Sql(conn, store).write(coalesce(changes))


def coalesce(changes: Iterable[Change]) -> list[Change]:
    """``changes`` with those of one row merged into its first (one statement per row), in
    order otherwise. The merged changes are of other rows than the ones between them, and a
    :data:`SETTLED_IF_OPEN` that follows a known status is applied to it."""
    out: list[Change] = []
    first: dict[tuple[str, Key], int] = {}
    for change in changes:
        if isinstance(change, Put | Set):
            k = (change.table, key_of(change))
            i = first.get(k)
            if i is not None and isinstance(change, Set):
                out[i] = _merge(out[i], change)
                continue
            first[k] = len(out)
        out.append(change)
    return out


def _merge(into: Change, change: Set) -> Change:
    assert isinstance(into, Put | Set)
    values = dict(into.row if isinstance(into, Put) else into.values)
    for column, value in change.values.items():
        before = values.get(column)
        if isinstance(value, SettledIfOpen) and isinstance(before, str):
            value = settled_if_open(before)
        values[column] = value
    return replace(into, row=values) if isinstance(into, Put) else replace(into, values=values)


@dataclass
class _Sql:
    """Writes changes with SQL: runs of inserts into one table, and of plain updates of the
    same columns of one table, each as one batch."""

    conn: Connection
    store: EventStore | None
    seats: dict[str, dict[int, str]] = field(default_factory=dict)

    def write(self, changes: Sequence[Change]) -> None:
        run: list[Put | Set] = []
        for change in changes:
            if run and not _same_run(run[-1], change):
                self._flush(run)
                run = []
            if _batched(change):
                run.append(change)
            else:
                self._one(change)
        if run:
            self._flush(run)

    def _flush(self, run: Sequence[Put | Set]) -> None:
        table, key = TABLES[run[0].table]
        if isinstance(run[0], Put):
            self.conn.execute(insert(table), [c.row for c in run if isinstance(c, Put)])
            return
        sets = [c for c in run if isinstance(c, Set)]
        columns = list(sets[0].values)
        stmt = (
            update(table)
            .where(*(table.c[k] == bindparam(f"k_{k}") for k in key))
            .values({c: bindparam(f"v_{c}") for c in columns})
        )
        params = [
            {
                **{f"k_{k}": v for k, v in zip(key, s.key, strict=True)},
                **{f"v_{c}": s.values[c] for c in columns},
            }
            for s in sets
        ]
        self.conn.execute(stmt, params)

    def _one(self, change: Change) -> None:
        if isinstance(change, Set):  # with a SETTLED_IF_OPEN status
            table, key = TABLES[change.table]
            status = table.c.status
            values = {
                c: case((status == t.ROUND_OPEN, t.ROUND_SETTLED), else_=status)
                if isinstance(v, SettledIfOpen)
                else v
                for c, v in change.values.items()
            }
            where = [table.c[k] == v for k, v in zip(key, change.key, strict=True)]
            self.conn.execute(update(table).where(*where).values(values))
        elif isinstance(change, AckPlayer):
            u = t.casino_uth_players.c
            self.conn.execute(
                update(t.casino_uth_players)
                .where(u.round_id == change.round_id, u.player_id == change.player_id)
                .values(acknowledged=True)
            )
        elif isinstance(change, UthSeat):
            self.seats.setdefault(change.round_id, {})[change.seat] = change.player_id
        elif isinstance(change, AddUthPlayers):
            players = change.players + tuple(self._seat(change.round_id, s) for s in change.seats)
            for p in dict.fromkeys(players):
                insert_once(
                    self.conn,
                    t.casino_uth_players,
                    {"round_id": change.round_id, "player_id": p},
                    {
                        "table_id": change.table_id,
                        "acknowledged": False,
                        "created_at": change.created_at,
                    },
                )
        # Unknown: nothing to write (module doc).

    def _seat(self, round_id: str, seat: int) -> str:
        known = self.seats.setdefault(round_id, {})
        if seat not in known:
            assert self.store is not None, "a UTH round's seats are read from its stream"
            known.update(stored_seats(self.store, self.conn, round_id))
        return known[seat]


def stored_seats(store: EventStore, conn: Connection, round_id: str) -> Mapping[int, str]:
    """The seats of UTH round ``round_id`` taken by its stored CasinoUthSeatTaken."""
    taken = cev.CasinoUthSeatTaken.DESCRIPTOR.full_name
    out: dict[int, str] = {}
    for envelope in store.read_stream(conn, CASINO_PREFIX + round_id):
        if envelope.event_type == taken:
            e = store.decode(envelope)
            assert isinstance(e, cev.CasinoUthSeatTaken)
            out[e.seat] = e.player_id
    return out


def _has_marker(change: Set) -> bool:
    return any(isinstance(v, SettledIfOpen) for v in change.values.values())


def _batched(change: Change) -> TypeGuard[Put | Set]:
    """Written in a run with its like: an insert, or an update without a marker."""
    return isinstance(change, Put) or (isinstance(change, Set) and not _has_marker(change))


def _same_run(last: Put | Set, change: Change) -> bool:
    """``change`` joins the run ending with ``last``: the same statement, other values."""
    if not _batched(change) or change.table != last.table:
        return False
    if isinstance(change, Put) and isinstance(last, Put):
        return list(change.row) == list(last.row)
    if isinstance(change, Set) and isinstance(last, Set):
        return list(change.values) == list(last.values)
    return False
