"""Payout on real PostgreSQL: a real fill through registration, TournamentFinished delivered
several times, concurrent consumers and two credit workers racing (two instances) — every
prize is credited exactly once and the payouts sum to the prize pool."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from electric.payout.v1 import events_pb2 as payout_events
from electric.payout.v1 import payout_pb2
from electric.table.v1 import events_pb2 as table_events
from electric_clients.wallet import WalletClient
from electric_domain.tournament import default_config
from electric_domain.tournament.prizes import place_amounts
from electric_eventlog import EventStore, IdempotentConsumer
from electric_payout.handlers import Crediter, Payouts

from tests.support.auth import token_source
from tests.support.infra import fresh_database
from tests.support.reg_harness import (
    OPS,
    FakeTable,
    Stack,
    eventually,
    finished_event,
    fresh_databases,
    running_stack,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def pg_urls(postgres_url: str) -> Iterator[dict[str, str]]:
    with fresh_databases(
        postgres_url, "pay_", ("wallet", "registration", "payout", "table")
    ) as urls:
        yield urls


@pytest.fixture
async def stack(tmp_path: Path, pg_urls: dict[str, str]) -> AsyncIterator[Stack]:
    async with running_stack(tmp_path, pg_urls) as s:
        yield s


async def test_redelivered_results_and_racing_workers_credit_once_pg(stack: Stack) -> None:
    players = ["ann", "ben", "cat"]
    for p in players:
        await stack.deposit(p, 100)
        r = await stack.register(p)
    table_id = r.entries[0].table_id
    started = await stack.tournament_started(table_id)
    pool = started.prize_pool.cents
    fake = FakeTable(stack.urls["table"], stack.bus)
    try:
        shares = default_config().pay_table.entry(started.multiplier).shares
        amounts = place_amounts(pool, shares, 3)
        finished = finished_event(
            table_id,
            [(1, 3, "cat", "e-c", 1, 0), (2, 1, "ann", "e-a", 1, 11), (3, 2, "ben", "e-b", 1, 6)],
            started.multiplier,
            pool,
            prizes={3: amounts[0], 1: amounts[1], 2: amounts[2]},
        )
        [envelope] = await fake.emit(table_id, finished)
        await fake.redeliver("electric.table.v1.TournamentFinished")
        await fake.redeliver("electric.table.v1.TournamentFinished")
    finally:
        fake.close()
    paid = len(default_config().pay_table.entry(started.multiplier).shares)

    async def all_credited() -> payout_pb2.TournamentPayout | None:
        try:
            resp = await stack.payout.GetPayouts(
                payout_pb2.GetPayoutsRequest(tournament_id=table_id), metadata=OPS
            )
        except grpc.aio.AioRpcError:
            return None
        ok = all(p.status == payout_pb2.PRIZE_STATUS_CREDITED for p in resp.payout.prizes)
        return resp.payout if ok and len(resp.payout.prizes) == paid else None

    payout = await eventually(all_credited, timeout=20)
    assert sum(p.amount.cents for p in payout.prizes) == pool
    assert (await stack.balance("cat")).cash == next(
        p.amount.cents for p in payout.prizes if p.place == 1
    )

    # The same event applied by two concurrent transactions of a second consumer instance
    # (same consumer name, e.g. after a rebalance): one applies, the other skips.
    engine = stack.engine("payout")
    payouts = Payouts(engine, EventStore(engine, producer="payout"), default_config())
    consumer = IdempotentConsumer("payout.table-events")

    def apply() -> bool:
        with engine.begin() as conn:
            if not consumer.apply(conn, envelope):
                return False
            return payouts.on_finished(conn, envelope, finished) is not None

    outcomes = await asyncio.gather(*(asyncio.to_thread(apply) for _ in range(4)))
    assert outcomes == [False] * 4
    # Two credit workers racing over the same (already credited) prizes: nothing moves.
    wallet = WalletClient.connect(
        f"127.0.0.1:{stack.hosts['wallet'].grpc_port}", token_source("payout")
    )
    try:
        done = await asyncio.gather(
            Crediter(payouts, wallet).run_once(), Crediter(payouts, wallet).run_once()
        )
    finally:
        await wallet.close()
    assert done == [0, 0]
    store = EventStore(engine, producer="payout")
    with engine.connect() as conn:
        evs = [store.decode(e) for e in store.read_stream(conn, f"payout-{table_id}")]
    assert sum(isinstance(e, payout_events.PrizeAwarded) for e in evs) == paid
    assert sum(isinstance(e, payout_events.PrizeCredited) for e in evs) == paid
    assert (await stack.account("house:prize_reserve")).posted == 279 - pool
    total = sum([(await stack.balance(p)).cash for p in players])
    assert total == pool, "the players hold exactly the prize pool"


async def test_two_credit_workers_racing_credit_each_prize_once_pg(
    stack: Stack, postgres_url: str, tmp_path: Path
) -> None:
    """Two payout instances' credit workers run over the same awarded prizes at once: each
    prize is one wallet transfer and one PrizeCredited (the row's awarded → credited update
    decides, the wallet deduplicates the call)."""
    from electric.common.v1 import tournament_pb2
    from electric.registration.v1 import events_pb2 as reg_events
    from electric_clients.convert import usd
    from electric_eventlog import create_engine, migrate, upgrade
    from electric_payout.store.tables import VERSIONS_DIR

    for p in ("ava", "bo", "cy"):
        await stack.open_wallet(p)
    cfg = default_config()
    src = FakeTable(f"sqlite+pysqlite:///{tmp_path}/src.db", stack.bus, producer="registration")
    started = reg_events.TournamentStarted(
        tournament_id="t-race",
        table_id="t-race",
        seats=[
            tournament_pb2.SeatAssignment(seat=i + 1, player_id=p, entry_id=f"e-{p}")
            for i, p in enumerate(("ava", "bo", "cy"))
        ],
        multiplier=1000,
        buy_in=usd(100),
        prize_pool=usd(100_000),
        paytable_version=cfg.version,
        table_size=3,
    )
    try:
        [s_env] = await src.emit("t-race", started, stream="registration-table-t-race")
        [f_env] = await src.emit(
            "t-race",
            finished_event(
                "t-race",
                [(1, 2, "bo", "e-bo", 1, 0), (2, 3, "cy", "e-cy", 1, 30), (3, 1, "ava", "e", 1, 9)],
                1000,
                100_000,
                {2: 80_000, 3: 10_000, 1: 10_000},
            ),
        )
    finally:
        src.close()
    with fresh_database(postgres_url, prefix="pay_race") as url:
        engine = create_engine(url)
        try:
            migrate(engine)
            upgrade(engine, versions_dir=VERSIONS_DIR, version_table="alembic_version_payout")
            payouts = Payouts(engine, EventStore(engine, producer="payout"), cfg)
            finished = table_events.TournamentFinished()
            assert f_env.payload.Unpack(finished)
            with engine.begin() as conn:
                assert payouts.on_started(conn, s_env, started) is None
            with engine.begin() as conn:
                decision = payouts.on_finished(conn, f_env, finished)
            assert decision is not None and decision.awarded == 3
            wallet = WalletClient.connect(
                f"127.0.0.1:{stack.hosts['wallet'].grpc_port}", token_source("payout")
            )
            try:
                done = await asyncio.gather(
                    *(Crediter(payouts, wallet).run_once() for _ in range(3))
                )
            finally:
                await wallet.close()
            assert sum(done) == 3
            store = EventStore(engine, producer="payout")
            with engine.connect() as conn:
                evs = [store.decode(e) for e in store.read_stream(conn, "payout-t-race")]
            credited = [e for e in evs if isinstance(e, payout_events.PrizeCredited)]
            assert sorted((e.player_id, e.amount.cents) for e in credited) == [
                ("ava", 10_000),
                ("bo", 80_000),
                ("cy", 10_000),
            ]
        finally:
            engine.dispose()
    assert [(await stack.balance(p)).cash for p in ("ava", "bo", "cy")] == [
        10_000,
        80_000,
        10_000,
    ]
