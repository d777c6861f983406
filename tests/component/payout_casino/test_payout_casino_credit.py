"""Payout's casino wins against a real wallet in-process (SQLite, real gRPC): a settled
round's winning bets are credited stake + win from the casino bankroll exactly once, under
redelivery of RoundSettled, repeated credit passes and a crash between the wallet call and
the bookkeeping; a voided round pays nothing, before or after a late RoundSettled."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from electric.payout.v1 import casino_events_pb2 as ce
from electric_clients.accounts import BANKROLL
from electric_clients.wallet import WalletClient
from electric_eventlog import EventStore
from electric_payout.casino import repo
from electric_payout.casino.crediter import CasinoCrediter
from electric_payout.casino.rules import (
    BetResult,
    InvalidSettlement,
    SettledBet,
    SettledRound,
    casino_win_key,
)
from electric_payout.casino.wins import CasinoWins, casino_stream
from sqlalchemy import Engine

from tests.support.casino_setup import payout_casino
from tests.support.wallet_kit import Env, balance, deposit, serve_wallet


@dataclass
class Kit:
    env: Env
    engine: Engine
    wins: CasinoWins
    crediter: CasinoCrediter
    wallet: WalletClient


@pytest.fixture
async def kit(tmp_path: Path) -> AsyncIterator[Kit]:
    async with (
        serve_wallet(f"sqlite:///{tmp_path / 'wallet.db'}") as env,
        payout_casino(tmp_path / "payout.db", env.target) as payout,
    ):
        yield Kit(env, payout.engine, payout.wins, payout.crediter, payout.client)


def _round(round_id: str, *bets: SettledBet) -> SettledRound:
    return SettledRound(round_id, "uth-1", "uth", bets)


ANN_WINS = (
    SettledBet("ann", "ante", 500, BetResult.WIN, 500),
    SettledBet("ann", "blind", 500, BetResult.PUSH, 0),
    SettledBet("ann", "play", 2000, BetResult.WIN, 2000),
    SettledBet("ann", "trips", 100, BetResult.WIN, 300),
    SettledBet("bob", "ante", 500, BetResult.LOSE, 0),
    SettledBet("bob", "trips", 100, BetResult.WIN, 5000),
)


def settle(kit: Kit, r: SettledRound, source: str = "ev-1") -> int:
    with kit.engine.begin() as conn:
        return kit.wins.on_settled(conn, r, source_event_id=source).owed


def events(kit: Kit, round_id: str) -> list[object]:
    store = EventStore(kit.engine, producer="payout")
    with kit.engine.connect() as conn:
        return [store.decode(e) for e in store.read_stream(conn, casino_stream(round_id))]


async def bankroll(kit: Kit) -> int:
    return int((await kit.wallet.account(BANKROLL)).posted)


async def test_redelivered_settlement_credits_each_win_once(kit: Kit) -> None:
    await deposit(kit.env, "ann", 10_000)
    await deposit(kit.env, "bob", 10_000)
    before = await bankroll(kit)
    r = _round("r-1", *ANN_WINS)
    assert settle(kit, r, "ev-1") == 4  # ann ante, play, trips; bob trips
    assert settle(kit, r, "ev-1") == 0  # redelivery
    assert settle(kit, r, "ev-2") == 0  # a second RoundSettled of the same round
    assert await kit.crediter.run_once() == 4
    assert await kit.crediter.run_once() == 0
    m = kit.crediter.metrics
    assert m.credited.labels("uth")._value.get() == 4
    assert m.credited_cents.labels("uth")._value.get() == 1000 + 4000 + 400 + 5100
    ann = 500 + 500 + 2000 + 2000 + 100 + 300
    bob = 100 + 5000
    assert (await balance(kit.env, "ann")).cash == 10_000 + ann
    assert (await balance(kit.env, "bob")).cash == 10_000 + bob
    assert await bankroll(kit) == before - ann - bob
    credited = [e for e in events(kit, "r-1") if isinstance(e, ce.CasinoWinCredited)]
    assert sorted((e.player_id, e.bet_kind, e.amount.cents) for e in credited) == [
        ("ann", "ante", 1000),
        ("ann", "play", 4000),
        ("ann", "trips", 400),
        ("bob", "trips", 5100),
    ]
    assert {e.idempotency_key for e in credited} == {
        casino_win_key("r-1", p, k)
        for p, k in [("ann", "ante"), ("ann", "play"), ("ann", "trips"), ("bob", "trips")]
    }
    owed = [e for e in events(kit, "r-1") if isinstance(e, ce.CasinoWinOwed)]
    assert len(owed) == 4


async def test_crash_after_the_wallet_answered_pays_once(kit: Kit) -> None:
    await deposit(kit.env, "ann", 1_000)
    settle(kit, _round("r-2", SettledBet("ann", "trips", 100, BetResult.WIN, 4000)))
    [w] = kit.wins.owed("r-2")
    # The wallet call happens, then the process dies before marking the win credited.
    await kit.crediter.perform(kit.crediter.pending("r-2")[0])
    assert kit.wins.owed("r-2") == [w]
    assert await kit.crediter.run_once() == 1  # the repeat is a wallet replay
    assert (await balance(kit.env, "ann")).cash == 1_000 + 4_100
    with kit.engine.connect() as conn:
        [row] = repo.round_wins(conn, "r-2")
    assert row.status == "credited" and row.wallet_transfer_id == w.transfer_key


async def test_void_pays_nothing_even_with_a_late_settlement(kit: Kit) -> None:
    await deposit(kit.env, "ann", 1_000)
    before = await bankroll(kit)
    with kit.engine.begin() as conn:
        d = kit.wins.on_voided(
            conn,
            round_id="r-3",
            table_id="thb-1",
            game="thb",
            reason="operator",
            source_event_id="ev-v",
        )
    assert d.decided
    assert settle(kit, _round("r-3", SettledBet("ann", "ante", 500, BetResult.WIN, 500))) == 0
    assert await kit.crediter.run_once() == 0
    assert await bankroll(kit) == before
    assert (await balance(kit.env, "ann")).cash == 1_000


async def test_a_failed_credit_stays_owed_and_is_retried(kit: Kit) -> None:
    # No wallet for "zed" yet: the credit is refused, stays owed with the error, and is
    # credited on a later pass once the player's wallet exists.
    settle(kit, _round("r-4", SettledBet("zed", "ante", 500, BetResult.WIN, 500)))
    assert await kit.crediter.run_once() == 0
    with kit.engine.connect() as conn:
        [row] = repo.round_wins(conn, "r-4")
    assert row.status == "owed" and row.attempts == 1
    await deposit(kit.env, "zed", 100)
    assert await kit.crediter.run_once() == 1
    assert (await balance(kit.env, "zed")).cash == 1_100


def test_an_inconsistent_settlement_is_refused_before_anything_is_written(kit: Kit) -> None:
    bad = _round(
        "r-5",
        SettledBet("ann", "ante", 500, BetResult.WIN, 500),
        SettledBet("ann", "ante", 500, BetResult.WIN, 500),
    )
    with pytest.raises(InvalidSettlement):
        settle(kit, bad)
    with kit.engine.connect() as conn:
        assert repo.round_outcome(conn, "r-5") is None


async def test_win_waits_for_the_stake_to_be_posted_then_credits_once(kit: Kit) -> None:
    # The table reserves the bet (pending, player → bankroll) and posts it when the round
    # settles; payout's credit names the stake, so the wallet refuses it while it is pending.
    await deposit(kit.env, "ann", 1_000)
    before = await bankroll(kit)
    await kit.wallet.reserve("rnd-9:ante", "ann", 400, to_account=BANKROLL, code="casino_bet")
    settle(
        kit,
        _round(
            "rnd-9",
            SettledBet("ann", "ante", 400, BetResult.WIN, 400, stake_transfer_id="rnd-9:ante"),
        ),
    )
    assert await kit.crediter.run_once() == 0
    [w] = kit.wins.owed("rnd-9")
    assert w.attempts == 1
    await kit.wallet.post("rnd-9:ante")
    assert await kit.crediter.run_once() == 1
    assert await kit.crediter.run_once() == 0
    assert (await balance(kit.env, "ann")).cash == 1_000 - 400 + 800
    assert await bankroll(kit) == before + 400 - 800
