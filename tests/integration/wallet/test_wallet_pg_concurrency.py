"""Concurrency on real PostgreSQL: 100 concurrent clients hammering transfers against the
same few accounts never overdraw and never lose a cent; a transfer retried concurrently with
the same key is applied once; a pending transfer raced by posts and voids resolves once."""

from __future__ import annotations

import random
import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from electric_eventlog import EventStore, create_engine, schema
from electric_wallet import domain as d
from electric_wallet import store
from electric_wallet.handlers import Wallet
from electric_wallet.store.projections import rebuild_and_compare
from sqlalchemy import func, select

pytestmark = pytest.mark.integration

PLAYERS = [f"p{i}" for i in range(4)]
START = 5_000
CLIENTS = 100
OPS_PER_CLIENT = 12


@pytest.fixture
def wallet(fresh_pg_url: str) -> Iterator[Wallet]:
    engine = create_engine(fresh_pg_url, pool_size=CLIENTS, max_overflow=0, pool_timeout=120)
    store.migrate(engine)
    w = Wallet(engine, EventStore(engine, producer="wallet"), max_attempts=100)
    w.bootstrap()
    try:
        yield w
    finally:
        engine.dispose()


def cash(p: str) -> str:
    return d.player_account_id(p, d.AccountKind.PLAYER_CASH)


def test_hundred_clients_never_overdraw_nor_lose_a_cent(wallet: Wallet) -> None:
    for p in PLAYERS:
        wallet.deposit(f"seed-{p}", p, START)
        wallet.adjust(f"bonus-{p}", p, d.AccountKind.PLAYER_BONUS, 1_000, "promo")
    observed: dict[str, int] = defaultdict(int)  # account -> sum of legs clients saw posted
    lock = threading.Lock()
    outcomes: Counter[str] = Counter()
    barrier = threading.Barrier(CLIENTS)

    def record(t: d.Transfer) -> None:
        with lock:
            for leg in t.posted_legs:
                observed[leg.debit] -= leg.amount
                observed[leg.credit] += leg.amount

    def client(n: int) -> None:
        rng = random.Random(n)
        barrier.wait()
        for i in range(OPS_PER_CLIENT):
            tid = f"c{n}-{i}"
            a, b = rng.sample(PLAYERS, 2)
            amount = rng.randint(1, 2_500)
            kind = rng.choice(["p2p", "wager", "buyin", "win"])
            try:
                if kind == "p2p":
                    r = wallet.create_transfer(
                        d.TransferRequest(
                            tid, d.AccountSide(cash(a)), d.AccountSide(cash(b)), amount
                        )
                    )
                    record(r.transfer)
                elif kind == "wager":
                    r = wallet.create_transfer(
                        d.TransferRequest(
                            tid, d.PlayerFunds(a), d.AccountSide("house:casino_bankroll"), amount
                        )
                    )
                    record(r.transfer)
                elif kind == "win":
                    r = wallet.create_transfer(
                        d.TransferRequest(
                            tid,
                            d.AccountSide("house:casino_bankroll"),
                            d.PlayerWinnings(a),
                            amount // 2 + 1,
                        )
                    )
                    record(r.transfer)
                else:
                    wallet.create_transfer(
                        d.TransferRequest(
                            tid,
                            d.PlayerFunds(a),
                            d.AccountSide("house:tournament_escrow"),
                            amount,
                            pending=True,
                        )
                    )
                    if rng.random() < 0.6:
                        record(wallet.post_transfer(tid, rng.randint(1, amount)).transfer)
                    else:
                        wallet.void_transfer(tid, "unregistered")
                outcomes[f"{kind}:ok"] += 1
            except d.InsufficientFunds:
                outcomes[f"{kind}:insufficient"] += 1

    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(client, range(CLIENTS)))

    assert sum(outcomes.values()) == CLIENTS * OPS_PER_CLIENT
    assert outcomes["p2p:ok"] > 50 and outcomes["p2p:insufficient"] > 0
    with wallet.engine.connect() as conn:
        rows = {
            r.account_id: store.account_from_row(r) for r in conn.execute(select(store.accounts))
        }
        wallet_events = conn.execute(select(func.count()).select_from(schema.events)).scalar()
    assert sum(a.posted for a in rows.values()) == 0
    for a in rows.values():
        assert a.reserved == 0 and a.incoming == 0, a  # every buy-in was resolved
        if a.kind in d.PLAYER_KINDS:
            assert a.available >= 0, a
    # What the clients were told moved is exactly what the ledger holds (nothing lost or
    # duplicated): opening balances + everything observed.
    for p in PLAYERS:
        observed[cash(p)] += START
        observed[d.player_account_id(p, d.AccountKind.PLAYER_BONUS)] += 1_000
    observed["operator:cash_in"] -= START * len(PLAYERS)
    observed["house:promotions"] -= 1_000 * len(PLAYERS)
    for aid, a in rows.items():
        assert a.posted == observed.get(aid, 0), aid
    assert rebuild_and_compare(wallet.engine, wallet.events) == []
    assert wallet_events and wallet_events > CLIENTS * OPS_PER_CLIENT // 2


def test_same_key_retried_concurrently_is_applied_once(wallet: Wallet) -> None:
    wallet.deposit("seed", "alice", 10_000)
    req = d.TransferRequest(
        "buyin-42",
        d.PlayerFunds("alice"),
        d.AccountSide("house:tournament_escrow"),
        700,
        pending=True,
        code="buy_in",
    )
    barrier = threading.Barrier(50)

    def attempt(_: int) -> bool:
        barrier.wait()
        return wallet.create_transfer(req).replayed

    with ThreadPoolExecutor(50) as pool:
        replayed = list(pool.map(attempt, range(50)))
    assert replayed.count(False) == 1 and replayed.count(True) == 49
    bal = wallet.balance("alice")
    assert (bal["cash"], bal["reserved"]) == (10_000 - 700, 700)
    with wallet.engine.connect() as conn:
        versions = conn.execute(
            select(func.count())
            .select_from(schema.events)
            .where(schema.events.c.stream_id == "wallet-transfer-buyin-42")
        ).scalar()
    assert versions == 1

    # Now race 20 posts (two different amounts) and 20 voids on it: exactly one wins.
    barrier2 = threading.Barrier(40)

    def resolve(n: int) -> str:
        barrier2.wait()
        try:
            if n % 2:
                r = wallet.void_transfer("buyin-42", "race")
            else:
                r = wallet.post_transfer("buyin-42", 700 if n % 4 == 0 else 500)
            return "replayed" if r.replayed else "won"
        except d.TransferStateError:
            return "rejected"

    with ThreadPoolExecutor(40) as pool:
        results = Counter(pool.map(resolve, range(40)))
    assert results["won"] == 1
    t = wallet.transfer("buyin-42")
    with wallet.engine.connect() as conn:
        versions = conn.execute(
            select(func.count())
            .select_from(schema.events)
            .where(schema.events.c.stream_id == "wallet-transfer-buyin-42")
        ).scalar()
    assert versions == 2
    bal = wallet.balance("alice")
    assert bal["reserved"] == 0
    assert bal["cash"] == 10_000 - t.posted_amount
    assert rebuild_and_compare(wallet.engine, wallet.events) == []
