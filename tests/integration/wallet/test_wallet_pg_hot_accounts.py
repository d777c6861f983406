"""Hot house accounts on real PostgreSQL (docs/wallet.md, "Concurrency and locking"):
a transfer locks only the accounts it debits whose kind must stay non-negative; the house
accounts every tournament and casino round touch (escrow, prize reserve, bankroll) are
credited without a lock and updated relatively, and the statement lines still equal a
fold of the events. Two wallets on two engines stand for two service processes (two
group-commit queues) racing on the same hot accounts."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
from electric_clients.accounts import BANKROLL, ESCROW, PRIZE_RESERVE, RAKE
from electric_eventlog import EventStore, create_engine
from electric_eventlog.testing_group import hold_batch
from electric_wallet import domain as d
from electric_wallet import store
from electric_wallet.handlers import Wallet
from electric_wallet.store.projections import rebuild_and_compare
from sqlalchemy import Connection, select
from sqlalchemy.engine import make_url

pytestmark = pytest.mark.integration

PLAYERS = [f"hp{i}" for i in range(8)]
START = 20_000
CLIENTS = 16
OPS_PER_CLIENT = 10


@pytest.fixture
def wallets(fresh_pg_url: str) -> Iterator[list[Wallet]]:
    engines = [create_engine(fresh_pg_url, pool_size=CLIENTS, max_overflow=4) for _ in range(2)]
    store.migrate(engines[0])
    out = [Wallet(e, EventStore(e, producer="wallet"), max_attempts=200) for e in engines]
    out[0].bootstrap()
    try:
        yield out
    finally:
        for w in out:
            w.events.group.close()
            w.engine.dispose()


def _dsn(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def test_only_guarded_debits_are_locked(wallets: list[Wallet], fresh_pg_url: str) -> None:
    wallet = wallets[0]
    wallet.deposit("seed", "hp0", 1_000)
    cash = d.player_account_id("hp0", d.AccountKind.PLAYER_CASH)
    req = d.TransferRequest("buyin-x", d.PlayerFunds("hp0"), d.AccountSide(ESCROW), 100)
    assert store.guarded(d.debit_account_ids(req)) == sorted(
        [cash, d.player_account_id("hp0", d.AccountKind.PLAYER_BONUS)]
    )
    assert store.guarded([PRIZE_RESERVE, BANKROLL, ESCROW]) == [ESCROW]
    seen: dict[str, bool] = {}

    def probe(conn: Connection) -> None:
        store.load(conn, d.request_account_ids(req), lock=store.guarded(d.debit_account_ids(req)))
        with psycopg.connect(_dsn(fresh_pg_url), autocommit=True) as other:
            for aid in (cash, ESCROW):
                try:
                    other.execute(
                        "SELECT 1 FROM wallet_accounts WHERE account_id = %s FOR UPDATE NOWAIT",
                        (aid,),
                    )
                    seen[aid] = False
                except psycopg.errors.LockNotAvailable:
                    seen[aid] = True

    wallet.events.transact(probe)
    assert seen == {cash: True, ESCROW: False}


def test_two_processes_hammering_hot_house_accounts_lose_nothing(wallets: list[Wallet]) -> None:
    for p in PLAYERS:
        wallets[0].deposit(f"seed-{p}", p, START)
    wallets[0].create_transfer(
        d.TransferRequest("fund-reserve", d.AccountSide(BANKROLL), d.AccountSide(PRIZE_RESERVE), 1)
    )
    outcomes: Counter[str] = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(CLIENTS)

    def client(n: int) -> None:
        wallet = wallets[n % 2]
        rng = random.Random(n)
        barrier.wait()
        for i in range(OPS_PER_CLIENT):
            p = rng.choice(PLAYERS)
            tid = f"h{n}-{i}"
            kind = rng.choice(["buyin", "prize", "wager", "win"])
            amount = rng.randint(1, 900)
            try:
                if kind == "buyin":  # credit escrow (pending), post, split rake / net
                    wallet.create_transfer(
                        d.TransferRequest(
                            tid, d.PlayerFunds(p), d.AccountSide(ESCROW), amount, pending=True
                        )
                    )
                    wallet.post_transfer(tid)
                    rake = amount // 10
                    if rake:
                        wallet.create_transfer(
                            d.TransferRequest(
                                f"{tid}-rake", d.AccountSide(ESCROW), d.AccountSide(RAKE), rake
                            )
                        )
                    wallet.create_transfer(
                        d.TransferRequest(
                            f"{tid}-net",
                            d.AccountSide(ESCROW),
                            d.AccountSide(PRIZE_RESERVE),
                            amount - rake,
                        )
                    )
                elif kind == "prize":  # debit the prize reserve (may go negative: no lock)
                    wallet.create_transfer(
                        d.TransferRequest(
                            tid, d.AccountSide(PRIZE_RESERVE), d.PlayerWinnings(p), amount
                        )
                    )
                elif kind == "wager":
                    wallet.create_transfer(
                        d.TransferRequest(tid, d.PlayerFunds(p), d.AccountSide(BANKROLL), amount)
                    )
                else:
                    wallet.create_transfer(
                        d.TransferRequest(
                            tid, d.AccountSide(BANKROLL), d.PlayerWinnings(p), amount // 2 + 1
                        )
                    )
                key = f"{kind}:ok"
            except d.InsufficientFunds:
                key = f"{kind}:insufficient"
            with lock:
                outcomes[key] += 1

    with ThreadPoolExecutor(CLIENTS) as pool:
        list(pool.map(client, range(CLIENTS)))

    assert sum(outcomes.values()) == CLIENTS * OPS_PER_CLIENT
    assert outcomes["buyin:ok"] > 10 and outcomes["prize:ok"] > 10, outcomes
    with wallets[0].engine.connect() as conn:
        rows = {
            r.account_id: store.account_from_row(r) for r in conn.execute(select(store.accounts))
        }
    assert sum(a.posted for a in rows.values()) == 0
    for a in rows.values():
        assert a.reserved == 0 and a.incoming == 0, a
        if a.kind not in d.MAY_GO_NEGATIVE:
            assert a.available >= 0, a
    assert rows[ESCROW].posted == 0  # every buy-in was split into rake and net
    # Statement lines of the unlocked hot accounts carry the balances the database had
    # (offsets), so the projections still equal a fold of the events in commit order.
    assert rebuild_and_compare(wallets[0].engine, wallets[0].events) == []
    grouped = [w.events.group.stats for w in wallets]
    assert max(s.largest_batch for s in grouped) > 1, grouped
    assert min(s.bulk_units for s in grouped) > 0, grouped  # decided as batches


def test_a_refused_command_in_a_batch_fails_alone(wallets: list[Wallet]) -> None:
    wallet = wallets[0]
    for p in ("ba", "bb", "bc"):
        wallet.deposit(f"seed-{p}", p, 1_000)
    gate = hold_batch(wallet.events, others=4)
    running = threading.Event()

    def holder(conn: Connection) -> None:
        running.set()
        gate()

    requests = [
        d.TransferRequest("b-ok-1", d.PlayerFunds("ba"), d.AccountSide(ESCROW), 600),
        d.TransferRequest("b-short", d.PlayerFunds("ba"), d.AccountSide(ESCROW), 600),
        d.TransferRequest("b-ok-2", d.PlayerFunds("bb"), d.AccountSide(ESCROW), 1_000),
        d.TransferRequest("b-ok-1", d.PlayerFunds("ba"), d.AccountSide(ESCROW), 600),
    ]
    outcomes: dict[int, str] = {}

    def client(i: int) -> None:
        while wallet.events.group.queued() < i:
            time.sleep(0.001)
        try:
            r = wallet.create_transfer(requests[i])
            outcomes[i] = "replayed" if r.replayed else "ok"
        except d.InsufficientFunds:
            outcomes[i] = "insufficient"

    bulk_before = wallet.events.group.stats.bulk_units
    hold = threading.Thread(target=lambda: wallet.events.transact(holder))
    hold.start()
    assert running.wait(10)
    threads = [threading.Thread(target=client, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    hold.join()
    # In batch order: the second 600 of "ba" saw the first one's hold (400 left); the
    # same key again saw the first one's transfer (a replay, not a second debit).
    assert outcomes == {0: "ok", 1: "insufficient", 2: "ok", 3: "replayed"}
    assert wallet.events.group.stats.bulk_units - bulk_before == 4
    assert wallet.balance("ba")["cash"] == 400 and wallet.balance("bb")["cash"] == 0
    assert wallet.account(ESCROW).posted == 1_600
    assert rebuild_and_compare(wallet.engine, wallet.events) == []
