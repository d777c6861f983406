"""Rebuilding payout's read models from payout's own events, and checking them against them.

Payout appends five event types of its own (protos/electric/payout/v1), each in the same
transaction as the rows it describes: PrizeAwarded, PrizeCredited and PrizeCheckFailed
(stream ``payout-<table>``, :mod:`electric_payout.handlers`), CasinoWinOwed and
CasinoWinCredited (stream ``payout-casino-<round>``, :mod:`electric_payout.casino.wins`).
:func:`fold_events` folds them (in global order) into the rows they determine,
:func:`rebuild_and_compare` names every difference between that fold and the tables (empty
list = consistent) and :func:`rebuild_projections` writes the fold into the tables in one
transaction (after a backup restore and the re-import of the events after the dump).

Table by table (what payout's events carry decides it):

- ``payout_prizes``: a projection of PrizeAwarded + PrizeCredited, **rebuilt** (rows without
  a PrizeAwarded are dropped) and **compared** on the columns the events determine: ids,
  entry, amount, multiplier, pay table version, ``tied_count``, ``awarded_at`` (the award's
  ``occurred_at``: the decision writes row and event with one clock reading), ``status`` /
  ``wallet_transfer_id`` / ``credited_at`` (PrizeCredited, same clock reading),
  ``transfer_key`` (``prize_transfer_id``) and ``prize_pool_cents`` (the sum of the
  tournament's awards: a tournament is awarded only when the audit re-check found the
  published prizes sum to the pool, and every non-zero published prize is awarded, in one
  append). Not in the events, so neither compared nor derived: ``buy_in_cents`` and ``seat``
  (kept from the replaced row, else taken from the consumed ``payout_tournaments`` row /
  stored TournamentFinished, else 0) and the credit attempt bookkeeping ``attempts`` /
  ``last_error`` (kept from the replaced row, else 0 / "").
- ``payout_casino_wins``: a projection of CasinoWinOwed + CasinoWinCredited, **rebuilt** and
  **compared** the same way. Not in the events: ``stake_transfer_id`` (kept from the replaced
  row, else ""; a win owed after the dump and not yet credited is then credited without its
  stake's funding split) and ``attempts`` / ``last_error``.
- ``payout_casino_rounds``: the consumed first RoundSettled / RoundVoided of each round. A
  round with at least one CasinoWinOwed was settled, and its row is determined (``settled``,
  reason "", the RoundSettled's id as ``source_event_id``, ``decided_at`` = the owed event's
  ``occurred_at``): those rows are **compared and rebuilt** (written when missing, so a
  RoundSettled delivered again pays nothing). Voided and losing rounds leave no payout
  event: their rows are **left** as they are.
- ``payout_results``: the consumed TournamentFinished (serialized), which payout's events do
  not carry: rows are never created or deleted here. Their decision columns are payout's
  own: ``awarded_at`` = the PrizeAwarded's ``occurred_at``, ``held_at`` = the
  PrizeCheckFailed's; for rows present they are **compared and set**. (A tournament decided
  with no prize at all appends nothing and is not checked.)
- ``payout_tournaments`` and ``payout_hand_buttons``: consumed TournamentStarted /
  HandStarted facts, **left** as they are (not derivable from payout's events).

How consumed facts recover after a restore: they do not, in normal operation. The consumer
groups' offsets are in Kafka, past the events consumed after the dump, so those are not
delivered again; a group reset would re-apply them (the de-dup records are as of the dump).
A re-delivered TournamentStarted / TournamentFinished of a tournament already decided in
the events whose ``payout_results`` row was lost would decide again: its ``NO_STREAM``
append raises ConcurrencyError (nothing is awarded twice), which the worker retries as
transient, without end. The event-store's own tables (events, outbox, consumer records) are
not projections.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import casino_events_pb2 as ce
from electric.payout.v1 import events_pb2 as pe
from electric.table.v1 import events_pb2 as table_events
from electric_domain.payout import prize_transfer_id
from electric_eventlog.codec import to_utc
from electric_eventlog.engine import read_only
from electric_eventlog.store import EventStore
from google.protobuf.message import Message
from sqlalchemy import Connection, Engine, Table, delete, insert, select, update

from electric_payout.store import tables as t

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_M = TypeVar("_M", bound=Message)
_R = TypeVar("_R", bound="DataclassInstance")


@dataclass(frozen=True)
class Prize:
    """The columns of a ``payout_prizes`` row that payout's events determine."""

    tournament_id: str
    place: int
    player_id: str
    entry_id: str
    table_id: str
    amount_cents: int
    prize_pool_cents: int
    multiplier: int
    paytable_version: str
    status: str
    wallet_transfer_id: str
    awarded_at: datetime
    credited_at: datetime | None
    transfer_key: str
    tied_count: int


@dataclass(frozen=True)
class Win:
    """The columns of a ``payout_casino_wins`` row that payout's events determine."""

    round_id: str
    player_id: str
    bet_kind: str
    table_id: str
    game: str
    stake_cents: int
    win_cents: int
    status: str
    transfer_key: str
    wallet_transfer_id: str
    source_event_id: str
    owed_at: datetime
    credited_at: datetime | None


@dataclass(frozen=True)
class Round:
    """A ``payout_casino_rounds`` row implied by a round's CasinoWinOwed."""

    round_id: str
    table_id: str
    game: str
    outcome: str
    reason: str
    source_event_id: str
    decided_at: datetime


@dataclass(frozen=True)
class Decided:
    """The decision columns of a ``payout_results`` row."""

    awarded_at: datetime | None
    held_at: datetime | None


PrizeKey = tuple[str, int, str]
WinKey = tuple[str, str, str]


@dataclass
class Fold:
    """Payout's rows as its events determine them."""

    prizes: dict[PrizeKey, Prize]
    wins: dict[WinKey, Win]
    rounds: dict[str, Round]
    decisions: dict[str, Decided]
    #: Events that contradict the fold (e.g. a credit of an unknown prize).
    problems: list[str]
    events: int = 0


def _unpack(envelope: Envelope, cls: type[_M]) -> _M:
    msg = cls()
    envelope.payload.Unpack(msg)
    return msg


def fold_events(conn: Connection, events: EventStore) -> Fold:
    """Fold every payout event of the store, in global order."""
    f = Fold({}, {}, {}, {}, [])
    for env in events.iter_all(conn):
        at = env.occurred_at.ToDatetime(tzinfo=UTC)
        name = env.event_type
        if name == pe.PrizeAwarded.DESCRIPTOR.full_name:
            a = _unpack(env, pe.PrizeAwarded)
            f.prizes[(a.tournament_id, a.place, a.player_id)] = Prize(
                tournament_id=a.tournament_id,
                place=a.place,
                player_id=a.player_id,
                entry_id=a.entry_id,
                table_id=a.table_id,
                amount_cents=a.amount.cents,
                prize_pool_cents=0,  # the sum of the tournament's awards, below
                multiplier=a.multiplier,
                paytable_version=a.paytable_version,
                status="awarded",
                wallet_transfer_id="",
                awarded_at=at,
                credited_at=None,
                transfer_key=prize_transfer_id(a.table_id, a.player_id, a.place),
                tied_count=a.tied_count,
            )
            f.decisions[a.tournament_id] = Decided(awarded_at=at, held_at=None)
        elif name == pe.PrizeCredited.DESCRIPTOR.full_name:
            c = _unpack(env, pe.PrizeCredited)
            key = (c.tournament_id, c.place, c.player_id)
            if key not in f.prizes:
                f.problems.append(f"event {env.event_id}: PrizeCredited of unawarded prize {key}")
                continue
            f.prizes[key] = replace(
                f.prizes[key],
                status="credited",
                wallet_transfer_id=c.wallet_transfer_id,
                credited_at=at,
            )
        elif name == pe.PrizeCheckFailed.DESCRIPTOR.full_name:
            held = _unpack(env, pe.PrizeCheckFailed)
            f.decisions[held.table_id] = Decided(awarded_at=None, held_at=at)
        elif name == ce.CasinoWinOwed.DESCRIPTOR.full_name:
            o = _unpack(env, ce.CasinoWinOwed)
            f.wins[(o.round_id, o.player_id, o.bet_kind)] = Win(
                round_id=o.round_id,
                player_id=o.player_id,
                bet_kind=o.bet_kind,
                table_id=o.table_id,
                game=o.game,
                stake_cents=o.stake.cents,
                win_cents=o.win.cents,
                status="owed",
                transfer_key=o.idempotency_key,
                wallet_transfer_id="",
                source_event_id=o.source_event_id,
                owed_at=at,
                credited_at=None,
            )
            if o.round_id not in f.rounds:
                f.rounds[o.round_id] = Round(
                    o.round_id, o.table_id, o.game, "settled", "", o.source_event_id, at
                )
        elif name == ce.CasinoWinCredited.DESCRIPTOR.full_name:
            w = _unpack(env, ce.CasinoWinCredited)
            wkey = (w.round_id, w.player_id, w.bet_kind)
            if wkey not in f.wins:
                f.problems.append(f"event {env.event_id}: CasinoWinCredited of unowed win {wkey}")
                continue
            f.wins[wkey] = replace(
                f.wins[wkey],
                status="credited",
                wallet_transfer_id=w.wallet_transfer_id,
                credited_at=at,
            )
        else:
            continue
        f.events += 1
    pools: dict[str, int] = {}
    for p in f.prizes.values():
        pools[p.tournament_id] = pools.get(p.tournament_id, 0) + p.amount_cents
    f.prizes = {k: replace(p, prize_pool_cents=pools[p.tournament_id]) for k, p in f.prizes.items()}
    return f


# ------------------------------------------------------------------------------ reading rows


def _value(v: Any) -> Any:
    return to_utc(v) if isinstance(v, datetime) else v


def _as(cls: type[_R], row: Mapping[str, Any]) -> _R:
    """The dataclass ``cls`` from the like-named columns of ``row`` (datetimes in UTC)."""
    return cls(**{f.name: _value(row[f.name]) for f in fields(cls)})


def _rows(conn: Connection, table: Table, key: Iterable[str]) -> dict[Any, dict[str, Any]]:
    cols = list(key)
    out: dict[Any, dict[str, Any]] = {}
    for r in conn.execute(select(table)).mappings():
        k = tuple(r[c] for c in cols) if len(cols) > 1 else r[cols[0]]
        out[k] = dict(r)
    return out


def _prize_rows(conn: Connection) -> dict[Any, dict[str, Any]]:
    return _rows(conn, t.prizes, ("tournament_id", "place", "player_id"))


def _win_rows(conn: Connection) -> dict[Any, dict[str, Any]]:
    return _rows(conn, t.casino_wins, ("round_id", "player_id", "bet_kind"))


def _snapshot_tx(engine: Engine) -> Connection:
    if engine.dialect.name == "postgresql":
        return engine.connect().execution_options(isolation_level="REPEATABLE READ")
    return read_only(engine.connect())


# ------------------------------------------------------------------------------ comparing


def _differences(
    what: str, want: Mapping[Any, Any], got: Mapping[Any, dict[str, Any]], cls: type[Any]
) -> list[str]:
    """One line per key of ``want`` ∪ ``got`` whose row differs (naming the columns)."""
    out: list[str] = []
    for key in sorted(set(want) | set(got), key=repr):
        w, row = want.get(key), got.get(key)
        if row is None:
            out.append(f"{what} {key}: in the events, missing from the table")
        elif w is None:
            out.append(f"{what} {key}: in the table, not in the events")
        else:
            g = _as(cls, row)
            cols = [
                f"{c}: events say {getattr(w, c)!r}, table has {getattr(g, c)!r}"
                for c in (f.name for f in fields(cls))
                if getattr(w, c) != getattr(g, c)
            ]
            if cols:
                out.append(f"{what} {key}: " + "; ".join(cols))
    return out


def rebuild_and_compare(engine: Engine, events: EventStore) -> list[str]:
    """Differences between payout's rows and a fold of its events (one consistent snapshot
    of both; module doc for which columns and rows are checked). Empty = consistent."""
    with _snapshot_tx(engine) as conn:
        fold = fold_events(conn, events)
        prizes, wins = _prize_rows(conn), _win_rows(conn)
        rounds = _rows(conn, t.casino_rounds, ("round_id",))
        results = _rows(conn, t.results, ("tournament_id",))
    diffs = list(fold.problems)
    diffs += _differences("prize", fold.prizes, prizes, Prize)
    diffs += _differences("casino win", fold.wins, wins, Win)
    # Rounds and results: only those the events determine (module doc).
    diffs += _differences(
        "casino round", fold.rounds, {k: rounds[k] for k in fold.rounds if k in rounds}, Round
    )
    present = {k: d for k, d in fold.decisions.items() if k in results}
    diffs += _differences("result", present, {k: results[k] for k in present}, Decided)
    return diffs


# ------------------------------------------------------------------------------ rebuilding


def _seats(conn: Connection) -> dict[tuple[str, str], int]:
    """(table, player) → seat, from the stored TournamentFinished of each result."""
    out: dict[tuple[str, str], int] = {}
    for tid, finished in conn.execute(select(t.results.c.tournament_id, t.results.c.finished)):
        for p in table_events.TournamentFinished.FromString(bytes(finished)).places:
            out[(tid, p.player_id)] = p.seat
    return out


def rebuild_projections(engine: Engine, events: EventStore) -> int:
    """Write the fold of payout's events into its tables (one transaction; module doc for
    what is replaced, kept and left). Returns the number of events folded."""
    with engine.begin() as conn:
        fold = fold_events(conn, events)
        old_prizes, old_wins = _prize_rows(conn), _win_rows(conn)
        tours = select(t.tournaments.c.tournament_id, t.tournaments.c.buy_in_cents)
        buy_ins = {tid: int(cents) for tid, cents in conn.execute(tours)}
        seats = _seats(conn)
        conn.execute(delete(t.prizes))
        prize_rows = []
        for key, p in fold.prizes.items():
            old = old_prizes.get(key, {})
            carried = {
                "buy_in_cents": old.get("buy_in_cents", buy_ins.get(p.tournament_id, 0)),
                "seat": old.get("seat", seats.get((p.tournament_id, p.player_id), 0)),
                "attempts": old.get("attempts", 0),
                "last_error": old.get("last_error", ""),
            }
            prize_rows.append({**asdict(p), **carried})
        if prize_rows:
            conn.execute(insert(t.prizes), prize_rows)
        conn.execute(delete(t.casino_wins))
        win_rows = []
        for wkey, w in fold.wins.items():
            old = old_wins.get(wkey, {})
            carried = {
                "stake_transfer_id": old.get("stake_transfer_id", ""),
                "attempts": old.get("attempts", 0),
                "last_error": old.get("last_error", ""),
            }
            win_rows.append({**asdict(w), **carried})
        if win_rows:
            conn.execute(insert(t.casino_wins), win_rows)
        rounds = list(fold.rounds)
        for i in range(0, len(rounds), 500):  # bounded IN lists
            chunk = rounds[i : i + 500]
            conn.execute(delete(t.casino_rounds).where(t.casino_rounds.c.round_id.in_(chunk)))
            conn.execute(insert(t.casino_rounds), [asdict(fold.rounds[r]) for r in chunk])
        for tid, d in fold.decisions.items():
            conn.execute(
                update(t.results).where(t.results.c.tournament_id == tid).values(asdict(d))
            )
    return fold.events
