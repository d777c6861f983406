"""Payout's one projector (issue 25 item 3): for random sequences of payout's inputs through
its handlers — TournamentStarted, HandStarted and TournamentFinished in any order and
delivered again (results the prize re-check agrees with, holds, a tournament without
prizes), the decision of results left pending, prize credits recorded once, twice or
failed, casino rounds settled (winning and losing bets) or voided and delivered again, win
credits recorded once, twice or failed — the rows written live equal, column for column,
the rows a rebuild writes from payout's events:

* ``rebuild_and_compare`` finds no difference, and ``rebuild_projections`` over the live
  rows leaves every row of every payout table as it was;
* the example's prizes, wins and rounds deleted and rebuilt from nothing come back equal,
  the columns the events do not carry aside (a win's ``stake_transfer_id``, the credit
  attempts ``attempts`` / ``last_error``: docs/payout.md, "Projections").

SQLite, and PostgreSQL with the ``integration`` marker. One database per backend for the
whole test; each example works under its own id prefix.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from electric.common.v1 import tournament_pb2
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as reg_events
from electric.table.v1 import events_pb2 as table_events
from electric_domain.tournament import default_config
from electric_eventlog import EventStore, migrate, upgrade
from electric_eventlog.codec import to_utc
from electric_payout.casino import repo as casino_repo
from electric_payout.casino.rules import BetResult, SettledBet, SettledRound
from electric_payout.casino.wins import CasinoWins
from electric_payout.handlers import Payouts
from electric_payout.store import tables as t
from electric_payout.store.projections import rebuild_and_compare, rebuild_projections
from electric_payout.store.tables import VERSIONS_DIR, metadata
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, delete, select

from tests.support.reg_harness import finished_event, usd

TABLES = (t.prizes, t.tournaments, t.results, t.hand_buttons, t.casino_wins, t.casino_rounds)
PLAYERS = ("ava", "bo", "cy")
#: A tournament's result: (places, pool, prizes by seat). Places are (place, seat, player,
#: entry, tied count, hand out). Paid as published / paid with a tie (bo and cy out in hand
#: 4: the re-check agrees only once hand 4's button, seat 2, is in) / held (1st and 2nd
#: swapped) / no prize at all (nothing to award, nothing appended).
_PLAIN = [(1, 1, "ava", "e-ava", 1, 0), (2, 2, "bo", "e-bo", 1, 4), (3, 3, "cy", "e-cy", 1, 3)]
_TIED = [(1, 1, "ava", "e-ava", 1, 0), (2, 2, "bo", "e-bo", 2, 4), (2, 3, "cy", "e-cy", 2, 4)]
RESULTS: dict[str, tuple[list[tuple[int, int, str, str, int, int]], int, dict[int, int]]] = {
    "paid": (_PLAIN, 50_000, {1: 35_000, 2: 10_000, 3: 5_000}),
    "tied": (_TIED, 50_013, {1: 35_010, 2: 7_501, 3: 7_502}),
    "held": (_PLAIN, 50_000, {1: 10_000, 2: 35_000, 3: 5_000}),
    "free": (_PLAIN, 0, {}),
}
#: Per example: never-written columns of a row the events cannot restore (module doc).
NOT_IN_EVENTS = {"stake_transfer_id", "attempts", "last_error"}


@dataclass(frozen=True)
class Cmd:
    """One input; ``n`` picks a tournament, a round or an owed credit."""

    kind: str
    n: int = 0
    result: str = "paid"
    bets: tuple[tuple[str, bool], ...] = ()


_n = st.integers(0, 5)
_bets = st.lists(
    st.tuples(st.sampled_from(("ann", "bob")), st.booleans()), max_size=4, unique_by=lambda b: b[0]
).map(tuple)
# The inputs that lead to awards and credits are drawn more often than the rest, so that
# most sequences pay and credit prizes rather than waiting for a start or a result.
_kinds = ("start", "finish", "credit") * 4 + ("hand", "settle", "wcredit", "again") * 2
_kinds += ("pending", "fail", "void", "wfail")
commands = st.builds(
    Cmd,
    kind=st.sampled_from(_kinds),
    n=_n,
    result=st.sampled_from(("paid", *RESULTS)),
    bets=_bets,
)


def _started(tid: str, pool: int) -> reg_events.TournamentStarted:
    """A 3-seat TournamentStarted paying 70/20/10."""
    return reg_events.TournamentStarted(
        tournament_id=tid,
        table_id=tid,
        tier_id="electric-test",
        seats=[
            tournament_pb2.SeatAssignment(seat=i + 1, player_id=p, entry_id=f"e-{p}")
            for i, p in enumerate(PLAYERS)
        ],
        multiplier=100,
        buy_in=usd(pool // 100),
        prize_pool=usd(pool),
        payouts=[
            tournament_pb2.PrizeShare(place=i + 1, share_bps=b, amount=usd(pool * b // 10_000))
            for i, b in enumerate((7000, 2000, 1000))
        ],
        paytable_version="test-ties-v1",
        table_size=3,
    )


@dataclass
class Service:
    engine: Engine
    store: EventStore
    payouts: Payouts
    wins: CasinoWins


class Run:
    """One example's inputs, under ``prefix``; a tournament's result is the first one drawn
    for it (its start then announces the same pool)."""

    def __init__(self, svc: Service, prefix: str) -> None:
        self.svc, self.prefix = svc, prefix
        self.results: dict[int, str] = {}
        self.credited: list[Any] = []
        self.events = itertools.count()

    def _env(self) -> Envelope:
        n = next(self.events)
        return Envelope(event_id=f"{self.prefix}ev{n}", correlation_id=f"{self.prefix}c{n}")

    def do(self, cmd: Cmd) -> None:
        svc, tid, rid = self.svc, f"{self.prefix}t{cmd.n % 2}", f"{self.prefix}r{cmd.n % 3}"
        result = self.results.setdefault(cmd.n % 2, cmd.result)
        places, pool, prizes = RESULTS[result]
        if cmd.kind in ("start", "hand", "finish"):
            with svc.engine.begin() as conn:
                if cmd.kind == "start":
                    svc.payouts.on_started(conn, self._env(), _started(tid, pool))
                elif cmd.kind == "hand":
                    hand = table_events.HandStarted(table_id=tid, hand_number=4, button_seat=2)
                    svc.payouts.on_hand(conn, hand)
                else:
                    finished = finished_event(tid, places, 100, pool, prizes)
                    svc.payouts.on_finished(conn, self._env(), finished)
        elif cmd.kind == "pending":
            svc.payouts.decide_pending()
        elif cmd.kind in ("credit", "fail"):
            owed = [c for c in svc.payouts.owed_credits() if c.table_id.startswith(self.prefix)]
            if owed:
                c = owed[cmd.n % len(owed)]
                if cmd.kind == "credit":
                    assert svc.payouts.mark_credited(c, f"w-{c.transfer_key}")
                    self.credited.append(c)
                else:
                    svc.payouts.note_failure(c, f"wallet unavailable {cmd.n}")
        elif cmd.kind == "again":
            # A credit recorded again (a crash after the wallet answered): nothing changes.
            for again in self.credited[-1:]:
                if isinstance(again, casino_repo.WinRow):
                    assert not svc.wins.mark_credited(again, "w-late")
                else:
                    assert not svc.payouts.mark_credited(again, "w-late")
        elif cmd.kind == "settle":
            bets = tuple(
                SettledBet(p, "ante", 100, BetResult.WIN if won else BetResult.LOSE, 150 * won)
                if i % 2 == 0
                else SettledBet(p, "trips", 50, BetResult.WIN if won else BetResult.LOSE, 0)
                for i, (p, won) in enumerate(cmd.bets)
            )
            settled = SettledRound(rid, f"{self.prefix}uth", "uth", bets)
            with svc.engine.begin() as conn:
                svc.wins.on_settled(conn, settled, source_event_id=self._env().event_id)
        elif cmd.kind == "void":
            with svc.engine.begin() as conn:
                svc.wins.on_voided(
                    conn,
                    round_id=rid,
                    table_id=f"{self.prefix}thb",
                    game="thb",
                    reason="closed",
                    source_event_id=self._env().event_id,
                )
        else:
            owed_wins = [w for w in svc.wins.owed() if w.round_id.startswith(self.prefix)]
            if owed_wins:
                w = owed_wins[cmd.n % len(owed_wins)]
                if cmd.kind == "wcredit":
                    assert svc.wins.mark_credited(w, f"w-{w.transfer_key}")
                    self.credited.append(w)
                else:
                    svc.wins.note_failure(w, "wallet unavailable")


def _rows(engine: Engine, prefix: str = "") -> dict[str, list[dict[str, Any]]]:
    """Every row (of ids starting with ``prefix``) of payout's tables, every column,
    sorted, datetimes in UTC."""
    out: dict[str, list[dict[str, Any]]] = {}
    with engine.connect() as conn:
        for table in TABLES:
            first = next(iter(table.primary_key.columns))
            rows = [
                {k: to_utc(v) if isinstance(v, datetime) else v for k, v in r.items()}
                for r in conn.execute(select(table).where(first.startswith(prefix))).mappings()
            ]
            out[table.name] = sorted(rows, key=repr)
    return out


def _without(rows: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    return {
        name: [{k: v for k, v in r.items() if k not in NOT_IN_EVENTS} for r in table]
        for name, table in rows.items()
    }


_examples = itertools.count()


@pytest.fixture(scope="module")
def service(module_engine: Engine) -> Iterator[Service]:
    """One migrated payout per backend for the whole test (module doc)."""
    engine = module_engine
    migrate(engine)
    upgrade(
        engine,
        versions_dir=VERSIONS_DIR,
        version_table="alembic_version_payout",
        target_metadata=metadata,
    )
    store = EventStore(engine, producer="payout")
    yield Service(
        engine, store, Payouts(engine, store, default_config()), CasinoWins(engine, store)
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(commands, min_size=8, max_size=40))
def test_live_rows_equal_the_rows_rebuilt_from_the_events(
    service: Service, sequence: list[Cmd]
) -> None:
    prefix = f"x{next(_examples)}-"
    run = Run(service, prefix)
    for cmd in sequence:
        run.do(cmd)
    event(f"credited {len(run.credited)}")
    engine, store = service.engine, service.store
    try:
        _check(engine, store, prefix)
    finally:
        # The tables as the events say: a difference found here does not leak into the
        # next example (which would then fail whatever it draws, and shrink to nothing).
        rebuild_projections(engine, store)


def _check(engine: Engine, store: EventStore, prefix: str) -> None:
    assert rebuild_and_compare(engine, store) == []
    live = _rows(engine)
    assert rebuild_projections(engine, store) >= 0
    assert _rows(engine) == live

    # From nothing: the example's rows the fold writes deleted, then rebuilt. (A round
    # that owes nothing appends nothing: its row is a de-duplication record the handler
    # writes, not the fold's, and stays.)
    mine = _rows(engine, prefix)
    owing = sorted({w["round_id"] for w in mine["payout_casino_wins"]})
    with engine.begin() as conn:
        conn.execute(delete(t.prizes).where(t.prizes.c.tournament_id.startswith(prefix)))
        conn.execute(delete(t.casino_wins).where(t.casino_wins.c.round_id.startswith(prefix)))
        conn.execute(delete(t.casino_rounds).where(t.casino_rounds.c.round_id.in_(owing)))
    rebuild_projections(engine, store)
    assert _without(_rows(engine, prefix)) == _without(mine)
