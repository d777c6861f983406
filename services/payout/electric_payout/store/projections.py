"""Payout's one projector: the rows payout reads about its own decisions are written by one
fold over its own events, live inside the append's transaction and for rebuilds.

Payout appends five event types of its own (protos/electric/payout/v1, mapped by
:mod:`electric_payout.codec`): PrizeAwarded, PrizeCredited and PrizeCheckFailed (stream
``payout-<table>``, :mod:`electric_payout.handlers`), CasinoWinOwed and CasinoWinCredited
(stream ``payout-casino-<round>``, :mod:`electric_payout.casino.wins`).

* The fold is :meth:`Changes.add` (one fact at a time, in order); :func:`write` is the one
  writer of the rows a run of facts determines.
* Live: the handlers hand the facts they decided to :func:`project` (the fold + ``write``)
  and then to ``codec.append``, in one transaction. A credit's row is updated only while it
  is still owed (``awarded`` / ``owed``): :func:`project` says whether it was, and the
  handler appends the credit only then, so a credit recorded twice is recorded once.
* Rebuilds: :func:`fold_events` folds every payout event from nothing with the same
  :meth:`Changes.add`; :func:`rebuild_projections` writes that fold with the same
  :func:`write` (after a backup restore and the re-import of the events after the dump),
  :func:`rebuild_and_compare` names every difference between it and the tables (empty list
  = consistent).

Table by table (what payout's events carry decides it):

- ``payout_prizes``: PrizeAwarded + PrizeCredited, **written by the fold** live and
  **rebuilt** (rows without a PrizeAwarded are dropped); **compared** on the columns the
  events determine: ids, entry, amount, multiplier, pay table version, ``tied_count``,
  ``awarded_at`` (the award's ``occurred_at``), ``status`` / ``wallet_transfer_id`` /
  ``credited_at`` (PrizeCredited), ``transfer_key`` (``prize_transfer_id``) and
  ``prize_pool_cents`` (the sum of the tournament's awards: a tournament is awarded only
  when the audit re-check found the published prizes sum to the pool, and every non-zero
  published prize is awarded, in one append). Row context the events do not carry
  (``facts`` module doc): ``buy_in_cents`` and ``seat``, from the deciding handler live;
  in a rebuild kept from the replaced row, else taken from the consumed
  ``payout_tournaments`` row / stored TournamentFinished, else 0. Owed-work bookkeeping:
  ``attempts`` / ``last_error`` (0 / "" when written, counted by ``repo.note_credit_failure``,
  kept by a rebuild).
- ``payout_casino_wins``: CasinoWinOwed + CasinoWinCredited, the same way. Row context:
  ``stake_transfer_id`` (kept from the replaced row, else ""; a win owed after the dump and
  not yet credited is then credited without its stake's funding split); owed-work
  bookkeeping ``attempts`` / ``last_error``.
- ``payout_casino_rounds``: the first RoundSettled / RoundVoided consumed for a round. A
  round with owed wins has its row **written by the fold** from its first CasinoWinOwed
  (``settled``, reason "", the RoundSettled's id, ``decided_at`` = the owed event's
  ``occurred_at``), live and in a rebuild (so a RoundSettled delivered again after a
  restore pays nothing). A voided or losing round leaves no payout event: its row is a
  de-duplication record the casino handler writes itself (``casino.repo.add_round``) and a
  rebuild **leaves** it.
- ``payout_results``: the consumed TournamentFinished, which payout's events do not carry
  (written by the consumer, ``repo.add_result``; never created or deleted here). Its
  decision columns are payout's own and **written by the fold**: ``awarded_at`` = the
  PrizeAwarded's ``occurred_at``, ``held_at`` = the PrizeCheckFailed's. The one decision
  that appends nothing — a tournament with no prize at all — is marked by
  :func:`mark_awarded_without_prizes` (not checked by a rebuild: nothing to fold).
- ``payout_tournaments`` and ``payout_hand_buttons``: consumed TournamentStarted /
  HandStarted facts, written by the consumers and **left** as they are (not derivable from
  payout's events).

How consumed facts recover after a restore: they do not, in normal operation. The consumer
groups' offsets are in Kafka, past the events consumed after the dump, so those are not
delivered again; a group reset would re-apply them (the de-dup records are as of the dump).
A result delivered again whose decision is in the log but not in its row has its row
caught up from the log (:func:`project_logged_decision`), nothing is decided twice. The
event store's own tables (events, outbox, consumer records) are not projections.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from electric.table.v1 import events_pb2 as table_events
from electric_domain.payout import prize_transfer_id
from electric_eventlog.codec import to_utc
from electric_eventlog.engine import read_only
from electric_eventlog.store import EventStore
from sqlalchemy import Connection, Engine, Table, Update, bindparam, delete, insert, select, update

from electric_payout import codec
from electric_payout import facts as f
from electric_payout.store import tables as t

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

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

#: Defaults of the columns a fact may leave to the rebuild (row context, bookkeeping).
PRIZE_EXTRA: dict[str, Any] = {"buy_in_cents": 0, "seat": 0, "attempts": 0, "last_error": ""}
WIN_EXTRA: dict[str, Any] = {"stake_transfer_id": "", "attempts": 0, "last_error": ""}


@dataclass
class Changes:
    """What a run of payout facts writes (module doc): the prizes and wins it creates (with
    their state at the end of the run), the credits of prizes and wins created before it,
    the rounds and the decisions it determines.

    ``fresh``: the run starts from nothing (a rebuild), so a credit of a prize or win the
    run has not created contradicts the events (a problem); live, it updates the row."""

    fresh: bool = False
    prizes: dict[PrizeKey, Prize] = field(default_factory=dict)
    prize_extra: dict[PrizeKey, dict[str, Any]] = field(default_factory=dict)
    prizes_credited: dict[PrizeKey, f.PrizeCredited] = field(default_factory=dict)
    wins: dict[WinKey, Win] = field(default_factory=dict)
    win_extra: dict[WinKey, dict[str, Any]] = field(default_factory=dict)
    wins_credited: dict[WinKey, f.CasinoWinCredited] = field(default_factory=dict)
    rounds: dict[str, Round] = field(default_factory=dict)
    decisions: dict[str, Decided] = field(default_factory=dict)
    #: Events that contradict the fold (e.g. a credit of an unknown prize).
    problems: list[str] = field(default_factory=list)
    events: int = 0

    def add(self, fact: f.Fact, event_id: str = "") -> None:
        """Fold ``fact`` (``event_id`` names it in a problem, which is not counted)."""
        problems = len(self.problems)
        self._fold(fact, event_id)
        self.events += len(self.problems) == problems

    def _fold(self, fact: f.Fact, event_id: str) -> None:
        if isinstance(fact, f.PrizeAwarded):
            self._awarded(fact)
        elif isinstance(fact, f.PrizeCredited):
            key = (fact.tournament_id, fact.place, fact.player_id)
            if key in self.prizes:
                self.prizes[key] = replace(
                    self.prizes[key],
                    status="credited",
                    wallet_transfer_id=fact.wallet_transfer_id,
                    credited_at=fact.occurred_at,
                )
            elif self.fresh:
                self.problems.append(f"event {event_id}: PrizeCredited of unawarded prize {key}")
            else:
                self.prizes_credited[key] = fact
        elif isinstance(fact, f.PrizeCheckFailed):
            self.decisions[fact.table_id] = Decided(awarded_at=None, held_at=fact.occurred_at)
        elif isinstance(fact, f.CasinoWinOwed):
            self._owed(fact)
        else:
            wkey = (fact.round_id, fact.player_id, fact.bet_kind)
            if wkey in self.wins:
                self.wins[wkey] = replace(
                    self.wins[wkey],
                    status="credited",
                    wallet_transfer_id=fact.wallet_transfer_id,
                    credited_at=fact.occurred_at,
                )
            elif self.fresh:
                self.problems.append(f"event {event_id}: CasinoWinCredited of unowed win {wkey}")
            else:
                self.wins_credited[wkey] = fact

    def _awarded(self, a: f.PrizeAwarded) -> None:
        key = (a.tournament_id, a.place, a.player_id)
        self.prizes[key] = Prize(
            tournament_id=a.tournament_id,
            place=a.place,
            player_id=a.player_id,
            entry_id=a.entry_id,
            table_id=a.table_id,
            amount_cents=a.amount_cents,
            prize_pool_cents=0,  # the sum of the tournament's awards: see prize_rows
            multiplier=a.multiplier,
            paytable_version=a.paytable_version,
            status="awarded",
            wallet_transfer_id="",
            awarded_at=a.occurred_at,
            credited_at=None,
            transfer_key=prize_transfer_id(a.table_id, a.player_id, a.place),
            tied_count=a.tied_count,
        )
        context = {"buy_in_cents": a.buy_in_cents, "seat": a.seat}
        self.prize_extra[key] = {k: v for k, v in context.items() if v is not None}
        self.decisions[a.tournament_id] = Decided(awarded_at=a.occurred_at, held_at=None)

    def _owed(self, o: f.CasinoWinOwed) -> None:
        wkey = (o.round_id, o.player_id, o.bet_kind)
        self.wins[wkey] = Win(
            round_id=o.round_id,
            player_id=o.player_id,
            bet_kind=o.bet_kind,
            table_id=o.table_id,
            game=o.game,
            stake_cents=o.stake_cents,
            win_cents=o.win_cents,
            status="owed",
            transfer_key=o.idempotency_key,
            wallet_transfer_id="",
            source_event_id=o.source_event_id,
            owed_at=o.occurred_at,
            credited_at=None,
        )
        has = o.stake_transfer_id is not None
        self.win_extra[wkey] = {"stake_transfer_id": o.stake_transfer_id} if has else {}
        if o.round_id not in self.rounds:
            self.rounds[o.round_id] = Round(
                o.round_id, o.table_id, o.game, "settled", "", o.source_event_id, o.occurred_at
            )

    def prize_rows(self) -> dict[PrizeKey, Prize]:
        """The prizes created, each with its tournament's pool (the sum of its awards: all
        of a tournament's awards are one append, so one run has them all)."""
        pools: dict[str, int] = {}
        for p in self.prizes.values():
            pools[p.tournament_id] = pools.get(p.tournament_id, 0) + p.amount_cents
        return {
            k: replace(p, prize_pool_cents=pools[p.tournament_id]) for k, p in self.prizes.items()
        }


# ------------------------------------------------------------------------------ writing


def _credit(table: Table, key: Sequence[str], owed: str) -> Update:
    """The conditional credit of one row (by its primary key ``key``, bound as ``k_<col>``):
    only while its status is still ``owed``."""
    where = [table.c[k] == bindparam(f"k_{k}") for k in key]
    return (
        update(table)
        .where(*where, table.c.status == owed)
        .values(
            status="credited", wallet_transfer_id=bindparam("wtid"), credited_at=bindparam("at")
        )
    )


_PRIZE_KEY = ("tournament_id", "place", "player_id")
_WIN_KEY = ("round_id", "player_id", "bet_kind")


def write(conn: Connection, changes: Changes) -> bool:
    """Write ``changes`` (the one writer of the fold's rows, live and in a rebuild). True
    when every credit found its row still owed; False when one was credited already (its
    row is left as it was, and the caller must not append the credit)."""
    prizes = changes.prize_rows()
    if prizes:
        conn.execute(
            insert(t.prizes),
            [
                {**asdict(p), **PRIZE_EXTRA, **changes.prize_extra.get(k, {})}
                for k, p in prizes.items()
            ],
        )
    if changes.wins:
        conn.execute(
            insert(t.casino_wins),
            [
                {**asdict(w), **WIN_EXTRA, **changes.win_extra.get(k, {})}
                for k, w in changes.wins.items()
            ],
        )
    if changes.rounds:
        conn.execute(insert(t.casino_rounds), [asdict(r) for r in changes.rounds.values()])
    for tid, d in changes.decisions.items():
        conn.execute(update(t.results).where(t.results.c.tournament_id == tid).values(asdict(d)))
    done = True
    for key, pc in changes.prizes_credited.items():
        params = {f"k_{c}": v for c, v in zip(_PRIZE_KEY, key, strict=True)}
        params |= {"wtid": pc.wallet_transfer_id, "at": pc.occurred_at}
        done &= conn.execute(_credit(t.prizes, _PRIZE_KEY, "awarded"), params).rowcount == 1
    for wkey, wc in changes.wins_credited.items():
        params = {f"k_{c}": v for c, v in zip(_WIN_KEY, wkey, strict=True)}
        params |= {"wtid": wc.wallet_transfer_id, "at": wc.occurred_at}
        done &= conn.execute(_credit(t.casino_wins, _WIN_KEY, "owed"), params).rowcount == 1
    return done


def project(conn: Connection, facts: Sequence[f.Fact]) -> bool:
    """Live: write the rows of ``facts`` (just decided, about to be appended in the same
    transaction). False when a credit among them was recorded already (:func:`write`)."""
    changes = Changes()
    for fact in facts:
        changes.add(fact)
    return write(conn, changes)


def project_logged_decision(conn: Connection, fact: f.Fact) -> None:
    """The decision columns of a result whose decision is in the log (``fact``: its
    stream's first event) but not in its row: a dump restored with rows older than the
    re-imported events, then the result delivered again (docs/chaos.md, section 5)."""
    changes = Changes()
    changes.add(fact)
    write(conn, Changes(decisions=changes.decisions))


def mark_awarded_without_prizes(conn: Connection, table_id: str, at: datetime) -> None:
    """The one decision payout's events do not record: a tournament awarded with no prize
    (nothing to append). Its row is marked here so the decision is taken once."""
    write(conn, Changes(decisions={table_id: Decided(awarded_at=at, held_at=None)}))


# ------------------------------------------------------------------------------ folding


def fold_events(conn: Connection, events: EventStore) -> Changes:
    """Fold every payout event of the store, in global order, from nothing."""
    changes = Changes(fresh=True)
    for envelope, fact in codec.read_all(events, conn):
        changes.add(fact, envelope.event_id)
    return changes


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
    diffs += _differences("prize", fold.prize_rows(), prizes, Prize)
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


def _carry(fold: Changes, conn: Connection) -> None:
    """Fill the columns the events do not carry (module doc) from the rows about to be
    replaced, else from the consumed facts."""
    old_prizes, old_wins = _prize_rows(conn), _win_rows(conn)
    tours = select(t.tournaments.c.tournament_id, t.tournaments.c.buy_in_cents)
    buy_ins = {tid: int(cents) for tid, cents in conn.execute(tours)}
    seats = _seats(conn)
    for key, p in fold.prizes.items():
        old = old_prizes.get(key, {})
        fold.prize_extra[key] = {
            "buy_in_cents": old.get("buy_in_cents", buy_ins.get(p.tournament_id, 0)),
            "seat": old.get("seat", seats.get((p.tournament_id, p.player_id), 0)),
            "attempts": old.get("attempts", 0),
            "last_error": old.get("last_error", ""),
        }
    for wkey in fold.wins:
        old = old_wins.get(wkey, {})
        fold.win_extra[wkey] = {k: old.get(k, v) for k, v in WIN_EXTRA.items()}


def rebuild_projections(engine: Engine, events: EventStore) -> int:
    """Write the fold of payout's events into its tables with the live :func:`write` (one
    transaction; module doc for what is replaced, kept and left). Returns the number of
    events folded."""
    with engine.begin() as conn:
        fold = fold_events(conn, events)
        _carry(fold, conn)
        conn.execute(delete(t.prizes))
        conn.execute(delete(t.casino_wins))
        rounds = list(fold.rounds)
        for i in range(0, len(rounds), 500):  # bounded IN lists
            chunk = rounds[i : i + 500]
            conn.execute(delete(t.casino_rounds).where(t.casino_rounds.c.round_id.in_(chunk)))
        write(conn, fold)
    return fold.events
