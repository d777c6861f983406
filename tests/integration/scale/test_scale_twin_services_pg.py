"""Issue 17, item 5: TWO instances each of wallet, registration and payout (real service
hosts, real gRPC) on one PostgreSQL database per service, started at the same moment on fresh
databases, sharing one in-process bus (each consumer group reads every event from both
instances, so every event is in effect delivered twice, concurrently).

What must stay single is guaranteed by the database, not by either process:

* start-up seeding (tiers, the first open table of each tier, the casino's UTH tables):
  an advisory transaction lock (``electric_registration.store.tiers.seed_lock``);
* a fill: the tier row lock (``SELECT … FOR UPDATE``) around every seat decision, so a
  3-seat table never seats a fourth entry, whichever instance each player hits;
* a Register retried on the other instance: the request row (``FOR UPDATE``), so its
  reservation is taken once;
* a buy-in: one wallet transfer per entry (transfer id = idempotency key, primary key);
* a deposit with one transfer id sent to both wallet instances at once: one transfer;
* a result consumed by both payout instances: the consumer ledger's primary key
  (``eventlog_applied``) and the prize row's awarded → credited update: paid once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from electric.payout.v1 import events_pb2 as payout_events
from electric.registration.v1 import events_pb2 as reg_events
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_domain.tournament import default_config
from electric_domain.tournament.prizes import place_amounts
from electric_eventlog import EventStore, create_engine
from electric_payout.app import setup as payout_setup
from electric_platform import ServiceHost, load_config
from electric_platform.eventpath import inprocess_bus
from electric_registration.app import setup as registration_setup
from electric_registration.store import tables as rt
from electric_wallet.app import setup as wallet_setup
from sqlalchemy import Engine, func, select

from tests.support.auth import auth_env
from tests.support.reg_harness import (
    OPS,
    FakeTable,
    eventually,
    finished_event,
    fresh_databases,
    md,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PLAYERS = 30
SERVICES = ("wallet", "registration", "payout", "table")


class Twins:
    """Two hosts per service and a stub to each."""

    def __init__(self, urls: dict[str, str]) -> None:
        self.urls = urls
        self.hosts: dict[str, list[ServiceHost]] = {}
        self.channels: list[grpc.aio.Channel] = []
        self.reg: list[registration_pb2_grpc.RegistrationServiceStub] = []
        self.wallet: list[wallet_pb2_grpc.WalletServiceStub] = []
        self.engines: dict[str, Engine] = {}
        self.bus = inprocess_bus()

    def engine(self, service: str) -> Engine:
        if service not in self.engines:
            self.engines[service] = create_engine(self.urls[service])
        return self.engines[service]

    async def start(self, tmp: Path) -> None:
        env = {
            "ELECTRIC_VAR_DIR": str(tmp),
            **auth_env(),
            "ELECTRIC_GRPC_PORT": "0",
            "ELECTRIC_METRICS_PORT": "-1",
            "ELECTRIC_LOG_LEVEL": "WARNING",
            "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "0",
            **{f"ELECTRIC_{s.upper()}_DATABASE_URL": u for s, u in self.urls.items()},
        }
        for name, setup in (
            ("wallet", wallet_setup),
            ("registration", registration_setup),
            ("payout", payout_setup),
        ):
            hosts = [ServiceHost(load_config(name, env), setup) for _ in range(2)]
            self.hosts[name] = hosts
            # Both at once on a fresh database: migrations and start-up seeding race.
            await asyncio.gather(*(h.start() for h in hosts))
            if name == "wallet":  # every caller's channel names both wallet instances
                ports = ",".join(f"127.0.0.1:{h.grpc_port}" for h in hosts)
                env["ELECTRIC_WALLET_TARGET"] = f"ipv4:{ports}"
        for name in ("registration", "wallet"):
            for h in self.hosts[name]:
                ch = grpc.aio.insecure_channel(f"127.0.0.1:{h.grpc_port}")
                self.channels.append(ch)
                if name == "registration":
                    self.reg.append(registration_pb2_grpc.RegistrationServiceStub(ch))
                else:
                    self.wallet.append(wallet_pb2_grpc.WalletServiceStub(ch))

    async def close(self) -> None:
        for ch in self.channels:
            await ch.close()
        for name in ("payout", "registration", "wallet"):
            for h in self.hosts.get(name, []):
                await h.stop(0)
        for e in self.engines.values():
            e.dispose()

    async def balance(self, player: str, i: int = 0) -> wallet_pb2.Balance:
        r = await self.wallet[i].GetBalance(
            wallet_pb2.GetBalanceRequest(player_id=player), metadata=OPS
        )
        return r.balance

    async def posted(self, account_id: str) -> int:
        r = await self.wallet[0].GetAccount(
            wallet_pb2.GetAccountRequest(account_id=account_id), metadata=OPS
        )
        return int(r.account.posted)

    def registration_events(self, table_id: str) -> list[object]:
        engine = self.engine("registration")
        store = EventStore(engine, producer="registration")
        with engine.connect() as conn:
            return [
                store.decode(e) for e in store.read_stream(conn, f"registration-table-{table_id}")
            ]


@pytest.fixture
async def twins(postgres_url: str, tmp_path: Path) -> AsyncIterator[Twins]:
    with fresh_databases(postgres_url, "twin_", SERVICES) as urls:
        t = Twins(urls)
        try:
            await t.start(tmp_path)
            yield t
        finally:
            await t.close()


@pytest.fixture
def players() -> Iterator[list[str]]:
    yield [f"tw{uuid.uuid4().hex[:4]}{i:02d}" for i in range(PLAYERS)]


async def test_two_instances_of_each_service_fill_and_pay_once_pg(
    twins: Twins, players: list[str]
) -> None:
    # Start-up: one set of tiers, exactly one open table per tier, one of each UTH table.
    with twins.engine("registration").connect() as conn:
        open_per_tier = Counter(
            r.tier_id
            for r in conn.execute(
                select(rt.tables.c.tier_id).where(rt.tables.c.status == "registering")
            )
        )
    assert open_per_tier and set(open_per_tier.values()) == {1}, open_per_tier

    # A deposit sent to both wallet instances at once, five times each: one transfer.
    async def deposit(p: str, i: int) -> bool:
        r = await twins.wallet[i % 2].Deposit(
            wallet_pb2.DepositRequest(transfer_id=f"dep-{p}", player_id=p, amount=300),
            metadata=OPS,
        )
        return bool(r.replayed)

    replays = await asyncio.gather(*(deposit(p, i) for p in players for i in range(10)))
    assert replays.count(False) == PLAYERS

    # Every player registers through one instance (half on each) and retries the same
    # request on the other instance at the same time; a third of them buy two entries.
    async def register(i: int, p: str, via: int) -> registration_pb2.RegisterResponse:
        return await twins.reg[via].Register(
            registration_pb2.RegisterRequest(
                request_id=f"r-{p}", tier_id="electric-100", entries=2 if i % 3 == 0 else 1
            ),
            metadata=md(p),
        )

    results = await asyncio.gather(
        *(register(i, p, via) for i, p in enumerate(players) for via in (i % 2, 1 - i % 2))
    )
    by_player: dict[str, set[tuple[str, ...]]] = {}
    for (i, p), r in zip(
        ((i, p) for i, p in enumerate(players) for _ in range(2)), results, strict=True
    ):
        by_player.setdefault(p, set()).add(tuple(e.entry_id for e in r.entries))
        assert len(r.entries) == (2 if i % 3 == 0 else 1)
    assert all(len(v) == 1 for v in by_player.values()), "a retry on the twin got new entries"
    seats_sold = sum(2 if i % 3 == 0 else 1 for i in range(PLAYERS))

    with twins.engine("registration").connect() as conn:
        rows = conn.execute(
            select(rt.entries.c.table_id, rt.entries.c.player_id, rt.entries.c.seat).where(
                rt.entries.c.status != "unregistered"
            )
        ).all()
    assert len(rows) == seats_sold
    seated: dict[str, list[tuple[str, int]]] = {}
    for row in rows:
        seated.setdefault(row.table_id, []).append((row.player_id, row.seat))
    for table_id, at in seated.items():
        assert len(at) <= 3, f"table {table_id} seats {len(at)}: {at}"
        assert len({s for _, s in at}) == len(at), f"two entries in one seat: {at}"
        assert len({p for p, _ in at}) == len(at), f"one player twice at a table: {at}"
    full = sorted(t for t, at in seated.items() if len(at) == 3)
    assert len(full) >= 3

    # Each full table starts once, after its buy-ins were posted once.
    async def started(tid: str) -> reg_events.TournamentStarted | None:
        evs = twins.registration_events(tid)
        got = [e for e in evs if isinstance(e, reg_events.TournamentStarted)]
        return got[0] if got else None

    starts = {tid: await eventually(lambda t=tid: started(t), timeout=60) for tid in full}
    for tid in full:
        kinds = Counter(type(e).__name__ for e in twins.registration_events(tid))
        assert kinds["TableFilled"] == 1 and kinds["TournamentStarted"] == 1, (tid, kinds)
    assert await twins.posted("house:rake") == 7 * 3 * len(full)
    assert await twins.posted("house:prize_reserve") == 93 * 3 * len(full)

    # Every full table finishes; both payout instances consume the results (and a
    # redelivery): each winner is credited once and the prizes add up to each pool.
    fake = FakeTable(twins.urls["table"], twins.bus)
    try:
        for tid, st in starts.items():
            order = sorted(st.seats, key=lambda s: s.seat)
            shares = default_config().pay_table.entry(st.multiplier).shares
            amounts = place_amounts(st.prize_pool.cents, shares, 3)
            places = [
                (k + 1, s.seat, s.player_id, s.entry_id, 1, 10 - k) for k, s in enumerate(order)
            ]
            prizes = {s.seat: amounts[k] for k, s in enumerate(order)}
            await fake.emit(
                tid,
                finished_event(tid, places, st.multiplier, st.prize_pool.cents, prizes=prizes),
            )
        await fake.redeliver("electric.table.v1.TournamentFinished")
    finally:
        fake.close()
    pools = {tid: st.prize_pool.cents for tid, st in starts.items()}
    payout_engine = twins.engine("payout")
    store = EventStore(payout_engine, producer="payout")

    async def credited() -> Counter[tuple[str, str, int]] | None:
        out: Counter[tuple[str, str, int]] = Counter()
        with payout_engine.connect() as conn:
            for tid in full:
                for e in store.read_stream(conn, f"payout-{tid}"):
                    m = store.decode(e)
                    if isinstance(m, payout_events.PrizeCredited):
                        out[(tid, m.player_id, m.amount.cents)] += 1
        paid = Counter[str]()
        for (tid, _, cents), n in out.items():
            paid[tid] += cents * n
        return out if dict(paid) == pools else None

    got = await eventually(credited, timeout=60)
    assert all(n == 1 for n in got.values()), got
    # The wallet agrees: cash held = deposits - buy-ins of full tables + prizes; the rest
    # of the buy-ins is still reserved; the prize reserve paid exactly the pools.
    cash = reserved = 0
    for p in players:
        b = await twins.balance(p, i=1)
        cash += b.cash
        reserved += b.reserved
    won = sum(pools.values())
    assert cash == 300 * PLAYERS - 100 * seats_sold + won
    assert reserved == 100 * (seats_sold - 3 * len(full))
    assert await twins.posted("house:prize_reserve") == 93 * 3 * len(full) - won
    with twins.engine("wallet").connect() as conn:
        from electric_eventlog import schema as es

        deposits = conn.execute(
            select(func.count()).select_from(es.events).where(es.events.c.stream_id.like("%dep-%"))
        ).scalar()
    assert deposits == PLAYERS
