"""Payout end to end over real gRPC (SQLite): TournamentStarted from a real registration fill
or a crafted one, TournamentFinished from a table producer, prizes credited through the real
wallet exactly once, ties split as the rules say, GetPayouts and ListWinnings."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from electric.common.v1 import tournament_pb2
from electric.payout.v1 import events_pb2 as payout_events
from electric.payout.v1 import payout_pb2
from electric.registration.v1 import events_pb2 as reg_events
from electric.table.v1 import events_pb2 as table_events
from electric_clients.wallet import WalletClient
from electric_domain.tournament import default_config
from electric_domain.tournament.prizes import place_amounts
from electric_eventlog import EventStore
from electric_payout.handlers import Crediter, Payouts

from tests.support.auth import token_source
from tests.support.reg_harness import (
    OPS,
    FakeTable,
    Stack,
    eventually,
    finished_event,
    md,
    running_stack,
    usd,
)


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async with running_stack(tmp_path) as s:
        yield s


def payout_events_of(stack: Stack, tournament_id: str) -> list[object]:
    engine = stack.engine("payout")
    store = EventStore(engine, producer="payout")
    with engine.connect() as conn:
        return [store.decode(e) for e in store.read_stream(conn, f"payout-{tournament_id}")]


async def _payouts(stack: Stack, tid: str, credited: int) -> payout_pb2.TournamentPayout | None:
    try:
        r = await stack.payout.GetPayouts(
            payout_pb2.GetPayoutsRequest(tournament_id=tid), metadata=OPS
        )
    except grpc.aio.AioRpcError as err:
        if err.code() is grpc.StatusCode.NOT_FOUND:
            return None
        raise
    done = [p for p in r.payout.prizes if p.status == payout_pb2.PRIZE_STATUS_CREDITED]
    return r.payout if len(done) == credited else None


async def test_finished_twice_credits_once_after_a_real_fill(stack: Stack) -> None:
    players = ["ann", "ben", "cat"]
    for p in players:
        await stack.deposit(p, 100)
        r = await stack.register(p)
    table_id = r.entries[0].table_id
    await stack.tournament_started(table_id)
    [mt] = await stack.my_tables("ann")
    pool = mt.prize_pool.cents
    assert pool == mt.multiplier * 100
    fake = FakeTable(stack.urls["table"], stack.bus)
    try:
        # Places: ben wins, cat 2nd, ann 3rd; the table publishes the pay table's amounts.
        amounts = place_amounts(pool, default_config().pay_table.entry(mt.multiplier).shares, 3)
        finished = finished_event(
            table_id,
            [(1, 2, "ben", "e-b", 1, 0), (2, 3, "cat", "e-c", 1, 9), (3, 1, "ann", "e-a", 1, 5)],
            mt.multiplier,
            pool,
            prizes={2: amounts[0], 3: amounts[1], 1: amounts[2]},
        )
        await fake.emit(table_id, finished)
        paid = len(default_config().pay_table.entry(mt.multiplier).shares)
        payout = await eventually(lambda: _payouts(stack, table_id, paid))
        # Delivered again (twice): nothing more happens.
        assert await fake.redeliver("electric.table.v1.TournamentFinished") == 1
        assert await fake.redeliver("electric.table.v1.TournamentFinished") == 2
        await asyncio.sleep(0.5)
    finally:
        fake.close()
    assert sum(p.amount.cents for p in payout.prizes) == pool
    assert payout.multiplier == mt.multiplier and payout.prize_pool.cents == pool
    first = next(p for p in payout.prizes if p.place == 1)
    assert first.player_id == "ben"
    assert first.wallet_transfer_id == f"prize-{table_id}-1-ben"
    bal = await stack.balance("ben")
    assert bal.cash == first.amount.cents, "buy-in paid, prize credited exactly once"
    evs = payout_events_of(stack, table_id)
    awarded = [e for e in evs if isinstance(e, payout_events.PrizeAwarded)]
    credited = [e for e in evs if isinstance(e, payout_events.PrizeCredited)]
    assert len(awarded) == len(credited) == paid
    # Money: the prize reserve got 3 × 93 and paid the pool.
    assert (await stack.account("house:prize_reserve")).posted == 279 - pool
    # ListWinnings: own, or any for an operator; another player's is refused.
    mine = await stack.payout.ListWinnings(payout_pb2.ListWinningsRequest(), metadata=md("ben"))
    assert [w.tournament_id for w in mine.winnings] == [table_id]
    assert mine.total.cents == first.amount.cents
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.payout.ListWinnings(
            payout_pb2.ListWinningsRequest(player_id="ben"), metadata=md("ann")
        )
    assert info.value.code() is grpc.StatusCode.PERMISSION_DENIED
    ops = await stack.payout.ListWinnings(
        payout_pb2.ListWinningsRequest(player_id="ben"), metadata=OPS
    )
    assert ops.total.cents == first.amount.cents
    await _check_payout_privacy(stack, table_id, payout)


async def _check_payout_privacy(
    stack: Stack, table_id: str, full: payout_pb2.TournamentPayout
) -> None:
    """GetPayouts: a player sees the entry and wallet transfer ids of their own prizes only;
    operators and auditors see all of them (``full`` is what an operator got)."""
    assert all(p.entry_id and p.wallet_transfer_id for p in full.prizes)
    request = payout_pb2.GetPayoutsRequest(tournament_id=table_id)
    audit = await stack.payout.GetPayouts(request, metadata=md("aud", "auditor"))
    assert audit.payout == full
    for viewer in ("ben", "ann", "zoe"):  # winner, another placed player, an outsider
        seen = (await stack.payout.GetPayouts(request, metadata=md(viewer))).payout
        assert [(p.place, p.player_id, p.amount.cents) for p in seen.prizes] == [
            (p.place, p.player_id, p.amount.cents) for p in full.prizes
        ]
        for mine, whole in zip(seen.prizes, full.prizes, strict=True):
            if whole.player_id == viewer:
                assert (mine.entry_id, mine.wallet_transfer_id) == (
                    whole.entry_id,
                    whole.wallet_transfer_id,
                )
            else:
                assert mine.entry_id == "" and mine.wallet_transfer_id == ""


def _started(tid: str, pool: int, bps: list[int], version: str = "test-ties-v1") -> object:
    return reg_events.TournamentStarted(
        tournament_id=tid,
        table_id=tid,
        tier_id="electric-test",
        seats=[
            tournament_pb2.SeatAssignment(seat=i + 1, player_id=p, entry_id=f"e-{p}")
            for i, p in enumerate(("ava", "bo", "cy"))
        ],
        multiplier=100,
        buy_in=usd(pool // 100),
        prize_pool=usd(pool),
        payouts=[
            tournament_pb2.PrizeShare(place=i + 1, share_bps=b, amount=usd(pool * b // 10_000))
            for i, b in enumerate(bps)
        ],
        paytable_version=version,
        table_size=3,
    )


async def test_tied_places_share_their_prizes(stack: Stack, tmp_path: Path) -> None:
    """Seed 000: 2nd pays $100, 3rd pays $50; the two out in the same hand with the same
    stack get $75 each. With an odd cent the extra one goes to the first tied seat left of
    that hand's button."""
    for p in ("ava", "bo", "cy"):
        await stack.open_wallet(p)
    reg = FakeTable(f"sqlite+pysqlite:///{tmp_path}/regfake.db", stack.bus, producer="registration")
    table = FakeTable(stack.urls["table"], stack.bus)
    try:
        # $500 pool: 70% / 20% / 10% = $350 / $100 / $50.
        await reg.emit(
            "t-ties",
            _started("t-ties", 50_000, [7000, 2000, 1000]),
            stream="registration-table-t-ties",
        )
        places = [
            (1, 1, "ava", "e-ava", 1, 0),
            (2, 2, "bo", "e-bo", 2, 7),
            (2, 3, "cy", "e-cy", 2, 7),
        ]
        await table.emit(
            "t-ties",
            finished_event("t-ties", places, 100, 50_000, {1: 35_000, 2: 7_500, 3: 7_500}),
        )
        payout = await eventually(lambda: _payouts(stack, "t-ties", 3))
        got = {p.player_id: p.amount.cents for p in payout.prizes}
        assert got == {"ava": 35_000, "bo": 7_500, "cy": 7_500}
        assert {p.place for p in payout.prizes if p.player_id != "ava"} == {2}
        assert (await stack.balance("bo")).cash == 7_500
        assert (await stack.balance("cy")).cash == 7_500
        # Odd cents: pool 50,013 → places 35,010 / 10,002 / 5,001; the tied pair shares
        # 15,003: 7,502 to seat 3 (first left of button seat 2 in hand 4), 7,501 to seat 2.
        await reg.emit(
            "t-odd",
            _started("t-odd", 50_013, [7000, 2000, 1000]),
            stream="registration-table-t-odd",
        )
        await table.emit(
            "t-odd",
            table_events.HandStarted(table_id="t-odd", hand_number=4, button_seat=2),
            finished_event(
                "t-odd",
                [(1, 1, "ava", "e1", 1, 0), (2, 2, "bo", "e2", 2, 4), (3, 3, "cy", "e3", 2, 4)],
                100,
                50_013,
                {1: 35_010, 2: 7_501, 3: 7_502},
            ),
        )
        odd = await eventually(lambda: _payouts(stack, "t-odd", 3))
        got = {p.player_id: p.amount.cents for p in odd.prizes}
        assert got == {"ava": 35_010, "bo": 7_501, "cy": 7_502}
        assert sum(got.values()) == 50_013
    finally:
        reg.close()
        table.close()


async def test_pay_table_of_the_config_and_credit_after_crash(stack: Stack, tmp_path: Path) -> None:
    """A 100x tournament of the configured pay table pays 80/10/10; a crash after the wallet
    credited but before payout recorded it is repaired by a replayed call (one transfer)."""
    for p in ("ava", "bo", "cy"):
        await stack.open_wallet(p)
    cfg = default_config()
    engine_url = f"sqlite+pysqlite:///{tmp_path}/payout-crash.db"
    from electric_eventlog import create_engine, migrate, upgrade
    from electric_payout.store.tables import VERSIONS_DIR

    engine = create_engine(engine_url)
    migrate(engine)
    upgrade(engine, versions_dir=VERSIONS_DIR, version_table="alembic_version_payout")
    store = EventStore(engine, producer="payout")
    payouts = Payouts(engine, store, cfg)
    src = FakeTable(f"sqlite+pysqlite:///{tmp_path}/src.db", stack.bus, producer="registration")
    try:
        [started_env] = await src.emit(
            "t100", _started("t100", 10_000, [8000, 1000, 1000], cfg.version), stream="s1"
        )
        places = [(1, 3, "cy", "e3", 1, 0), (2, 1, "ava", "e1", 1, 12), (3, 2, "bo", "e2", 1, 8)]
        published = {3: 8_000, 1: 1_000, 2: 1_000}
        [finished_env] = await src.emit(
            "t100", finished_event("t100", places, 100, 10_000, published)
        )
    finally:
        src.close()
    started, finished = reg_events.TournamentStarted(), table_events.TournamentFinished()
    assert started_env.payload.Unpack(started) and finished_env.payload.Unpack(finished)
    with engine.begin() as conn:
        assert payouts.on_finished(conn, finished_env, finished) is None  # start not known yet
    with engine.begin() as conn:
        decision = payouts.on_started(conn, started_env, started)  # second arrival awards
    assert decision is not None and (decision.awarded, decision.held) == (3, False)
    pending = payouts.owed_credits()
    assert sorted((p.player_id, p.amount_cents) for p in pending) == [
        ("ava", 1_000),
        ("bo", 1_000),
        ("cy", 8_000),
    ]
    wallet = WalletClient.connect(
        f"127.0.0.1:{stack.hosts['wallet'].grpc_port}", token_source("payout")
    )
    try:
        # "Crash": the wallet credited cy's prize, payout never recorded it.
        cy = next(p for p in pending if p.player_id == "cy")
        crediter = Crediter(payouts, wallet)
        await crediter.credit(cy.transfer_key, cy.player_id, cy.amount_cents, cy.place)
        assert await crediter.run_once() == 3
        assert await crediter.run_once() == 0
    finally:
        await wallet.close()
    assert (await stack.balance("cy")).cash == 8_000
    assert (await stack.balance("ava")).cash == 1_000
    with engine.connect() as conn:
        evs = [store.decode(e) for e in store.read_stream(conn, "payout-t100")]
    assert sum(isinstance(e, payout_events.PrizeCredited) for e in evs) == 3
    engine.dispose()


def _check_failures(stack: Stack) -> float:
    registry = stack.hosts["payout"].metrics.registry
    return registry.get_sample_value("electric_payout_prize_check_failures_total") or 0.0


def _held(stack: Stack) -> float:
    registry = stack.hosts["payout"].metrics.registry
    return registry.get_sample_value("electric_payout_tournaments_held") or 0.0


async def test_prizes_failing_the_recheck_hold_the_money(stack: Stack, tmp_path: Path) -> None:
    """The table's prizes are paid as published; when payout's re-check against the pay
    table disagrees (here 1st and 2nd swapped amounts; then a result without prizes), no
    prize is awarded or credited, PrizeCheckFailed is recorded and the failure is counted."""
    for p in ("ava", "bo", "cy"):
        await stack.open_wallet(p)
    reg = FakeTable(f"sqlite+pysqlite:///{tmp_path}/regfake.db", stack.bus, producer="registration")
    table = FakeTable(stack.urls["table"], stack.bus)
    reserve = (await stack.account("house:prize_reserve")).posted
    places = [(1, 1, "ava", "e-ava", 1, 0), (2, 2, "bo", "e-bo", 1, 7), (3, 3, "cy", "e-cy", 1, 5)]
    try:
        for tid in ("t-bad", "t-none"):
            await reg.emit(
                tid, _started(tid, 50_000, [7000, 2000, 1000]), stream=f"registration-table-{tid}"
            )
        # Sums to the pool, but 1st and 2nd are swapped: the seat check fails.
        await table.emit(
            "t-bad", finished_event("t-bad", places, 100, 50_000, {1: 10_000, 2: 35_000, 3: 5_000})
        )
        await table.emit("t-none", finished_event("t-none", places, 100, 50_000))

        async def held() -> object:
            return _check_failures(stack) == 2 or None

        await eventually(held)
        await asyncio.sleep(0.3)  # a crediter pass would have run by now
    finally:
        reg.close()
        table.close()
    assert _held(stack) == 2
    bad = payout_events_of(stack, "t-bad")
    assert [type(e).__name__ for e in bad] == ["PrizeCheckFailed"]
    [failed] = bad
    assert isinstance(failed, payout_events.PrizeCheckFailed)
    seats = {
        (d.seat, d.published.cents, d.expected.cents)
        for d in failed.discrepancies
        if d.check == payout_events.PRIZE_CHECK_SEAT_PRIZE
    }
    assert seats == {(1, 10_000, 35_000), (2, 35_000, 10_000)}
    assert failed.table_id == "t-bad" and failed.prize_pool.cents == 50_000
    [missing] = payout_events_of(stack, "t-none")
    assert isinstance(missing, payout_events.PrizeCheckFailed)
    assert {d.check for d in missing.discrepancies} >= {payout_events.PRIZE_CHECK_MISSING_PRIZE}
    # No money moved and nothing is shown as awarded.
    for p in ("ava", "bo", "cy"):
        assert (await stack.balance(p)).cash == 0
    assert (await stack.account("house:prize_reserve")).posted == reserve
    for tid in ("t-bad", "t-none"):
        assert await _payouts(stack, tid, 0) is None
