"""Wallet benchmarks: transfers per second, single client and concurrent, each next to the
raw database commit rate (one-row INSERT + COMMIT with psycopg) measured in the same run.

PostgreSQL from ``DATABASE_URL`` (else the local default electric/electric@127.0.0.1:5432);
a scratch database is created and dropped. Every loop is bounded in time.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import psycopg
from electric_eventlog import EventStore, create_engine
from electric_wallet import domain as d
from electric_wallet import store
from electric_wallet.handlers import Wallet
from sqlalchemy.engine import make_url

from bench import Row

SECONDS = float(os.environ.get("BENCH_WALLET_SECONDS", "3"))
THREADS = 16
PLAYERS = 64
DEFAULT_URL = "postgresql+psycopg://electric:electric@127.0.0.1:5432/electric"


def _rate(work: Callable[[int, int], None], threads: int, seconds: float) -> float:
    """Calls of ``work(thread, i)`` per second over ``threads`` threads for ``seconds``."""
    counts = [0] * threads
    stop = time.perf_counter() + seconds
    barrier = threading.Barrier(threads)

    def loop(n: int) -> None:
        barrier.wait()
        i = 0
        while time.perf_counter() < stop:
            work(n, i)
            i += 1
        counts[n] = i

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(loop, range(threads)))
    return sum(counts) / (time.perf_counter() - t0)


def _raw_commit_rate(dsn: str, threads: int) -> float:
    conns = [psycopg.connect(dsn) for _ in range(threads)]
    try:
        with conns[0].cursor() as cur:
            cur.execute("CREATE TABLE IF NOT EXISTS bench_raw (id bigserial PRIMARY KEY, v int)")
        conns[0].commit()

        def work(n: int, i: int) -> None:
            with conns[n].cursor() as cur:
                cur.execute("INSERT INTO bench_raw (v) VALUES (%s)", (i,))
            conns[n].commit()

        return _rate(work, threads, SECONDS)
    finally:
        for c in conns:
            c.close()


def _wallet_rates(url: str) -> tuple[float, float, float, str]:
    engine = create_engine(url, pool_size=THREADS + 2, max_overflow=0)
    events = EventStore(engine, producer="wallet")
    try:
        store.migrate(engine)
        wallet = Wallet(engine, events, max_attempts=100)
        wallet.bootstrap()
        for p in range(PLAYERS):
            wallet.deposit(f"seed-{p}", f"p{p}", 10**9)
        run = uuid.uuid4().hex[:8]

        def transfer(n: int, i: int) -> None:
            # Disjoint pairs per thread: contention only on the global position lock.
            a, b = (2 * n) % PLAYERS, (2 * n + 1) % PLAYERS
            wallet.create_transfer(
                d.TransferRequest(
                    f"{run}-{n}-{i}",
                    d.AccountSide(d.player_account_id(f"p{a}", d.AccountKind.PLAYER_CASH)),
                    d.AccountSide(d.player_account_id(f"p{b}", d.AccountKind.PLAYER_CASH)),
                    1,
                )
            )

        def buy_in(n: int, i: int) -> None:
            # Every thread against the same escrow account: the hot-account case.
            tid = f"{run}-bi-{n}-{i}"
            wallet.create_transfer(
                d.TransferRequest(
                    tid,
                    d.PlayerFunds(f"p{n % PLAYERS}"),
                    d.AccountSide("house:tournament_escrow"),
                    5,
                    pending=True,
                )
            )
            wallet.post_transfer(tid)

        stats = wallet.events.group.stats
        single = _rate(transfer, 1, SECONDS)
        b0, u0 = stats.batches, stats.units
        concurrent = _rate(transfer, THREADS, SECONDS)
        b1, u1 = stats.batches, stats.units
        hot = _rate(buy_in, THREADS, SECONDS) * 2  # two commands (pending + post) per call
        b2, u2 = stats.batches, stats.units
        batches = (
            f"mean batch {(u1 - u0) / max(1, b1 - b0):.1f} disjoint, "
            f"{(u2 - u1) / max(1, b2 - b1):.1f} hot"
        )
        return single, concurrent, hot, batches
    finally:
        events.group.close()
        engine.dispose()


def run() -> list[Row]:
    base = os.environ.get("DATABASE_URL", DEFAULT_URL)
    url = make_url(base)
    if url.get_backend_name() != "postgresql":
        return [Row("wallet", "skipped", 0, "-", note="DATABASE_URL is not PostgreSQL")]
    url = url.set(drivername="postgresql+psycopg")
    scratch = f"bench_wallet_{uuid.uuid4().hex[:10]}"
    admin_dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{scratch}"')
    try:
        db_url = url.set(database=scratch)
        dsn = db_url.set(drivername="postgresql").render_as_string(hide_password=False)
        raw1 = _raw_commit_rate(dsn, 1)
        rawn = _raw_commit_rate(dsn, THREADS)
        single, concurrent, hot, batches = _wallet_rates(
            db_url.render_as_string(hide_password=False)
        )
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')
    return [
        Row("wallet", "raw INSERT+COMMIT, 1 client", raw1, "commits/s"),
        Row("wallet", f"raw INSERT+COMMIT, {THREADS} clients", rawn, "commits/s"),
        Row(
            "wallet",
            "transfers, 1 client",
            single,
            "transfers/s",
            "raw commits, 1 client",
            raw1,
            "posted p2p, event+outbox+projections",
        ),
        Row(
            "wallet",
            f"transfers, {THREADS} clients",
            concurrent,
            "transfers/s",
            f"raw commits, {THREADS} clients",
            rawn,
            f"disjoint account pairs; {batches}; target >= 0.3x",
        ),
        Row(
            "wallet",
            f"pending+post, {THREADS} clients, 1 hot account",
            hot,
            "commits/s",
            f"raw commits, {THREADS} clients",
            rawn,
            "all into house:tournament_escrow; target >= 0.2x",
        ),
    ]
