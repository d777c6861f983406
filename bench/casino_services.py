"""Casino rounds THROUGH THE SERVICES on PostgreSQL (rows of ``python -m bench casino``).

The four services (registration, table, wallet, payout) run in this process, each with its
own ServiceHost, gRPC port and fresh PostgreSQL database (``DATABASE_URL``'s server, default
the local 127.0.0.1:5432 electric/electric), sharing the in-process event bus — the same
setup code as ``make run`` with PostgreSQL instead of SQLite. Bots are gRPC clients
(:mod:`electric_bots.casino_runner`), so every round pays the full path: Deal/Decide/AckResult
over gRPC, wallet reservations over gRPC, events and rows in PostgreSQL, settlement calls,
payout's credits.

* **THB rounds per second**: ``THB_BOTS`` bots, each at its own private table, deal
  ``THB_ROUNDS`` rounds after a warm-up.
* **UTH settlement time, 100 seated players**: ``UTH_PLAYERS`` bots at ``uth-1`` (short
  windows), ``UTH_ROUNDS`` rounds; per round, from the last decision sent (every seat answers,
  so it closes the last decision window) to the first player seeing the settled result (the
  settlement of 100 seats: reveal, showdown, one result per seat, the wallet posts/voids
  owed, the events, the view fan-out on WatchCasinoTable).

Without a reachable PostgreSQL the rows say so (value 0) instead of failing the whole bench.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
from electric_bots.casino_runner import CasinoRunner, CasinoRunnerConfig
from electric_bots.runner import Targets
from electric_platform.config import SERVICES, load_config
from electric_platform.keys import SigningKey
from electric_platform.log import configure_logging
from electric_platform.server import ServiceHost
from electric_runner.app import embedded_environ, embedded_keys, service_setups
from sqlalchemy.engine import make_url

from bench import Row

DEFAULT_PG = "postgresql+psycopg://electric:electric@127.0.0.1:5432/electric"
THB_BOTS = int(os.environ.get("BENCH_CASINO_THB_BOTS", 8))
THB_ROUNDS = int(os.environ.get("BENCH_CASINO_THB_ROUNDS", 400))
THB_WARMUP = 40
UTH_PLAYERS = int(os.environ.get("BENCH_CASINO_UTH_PLAYERS", 100))
UTH_ROUNDS = int(os.environ.get("BENCH_CASINO_UTH_ROUNDS", 5))
#: Short UTH windows for the bench (ms): green, yellow, decision, pause between rounds.
UTH_WINDOWS = {"GREEN": 10000, "YELLOW": 1000, "DECISION": 10000, "PAUSE": 200}
#: Wall-clock budget of the UTH part (seconds).
UTH_BUDGET = float(os.environ.get("BENCH_CASINO_UTH_BUDGET", 300))


@contextlib.contextmanager
def _databases() -> Iterator[dict[str, str] | None]:
    """One fresh PostgreSQL database per service (None: no server reachable)."""
    base = os.environ.get("DATABASE_URL") or DEFAULT_PG
    url = make_url(base.replace("postgresql://", "postgresql+psycopg://", 1))
    admin = url.set(drivername="postgresql").render_as_string(hide_password=False)
    names = {s: f"bench_casino_{s}_{uuid.uuid4().hex[:8]}" for s in SERVICES}
    try:
        with psycopg.connect(admin, autocommit=True, connect_timeout=3) as conn:
            for name in names.values():
                conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError:
        yield None
        return
    try:
        yield {
            s: url.set(database=n).render_as_string(hide_password=False) for s, n in names.items()
        }
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            for name in names.values():
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.asynccontextmanager
async def services(urls: dict[str, str], var: Path) -> AsyncIterator[tuple[Targets, SigningKey]]:
    """The four services in this process on ``urls``; yields their targets and the issuer key."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("ELECTRIC_") and k != "DATABASE_URL"
    }
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    env["ELECTRIC_VAR_DIR"] = str(var)
    env["ELECTRIC_LOG_LEVEL"] = "ERROR"
    for name, url in urls.items():
        env[f"ELECTRIC_{name.upper()}_DATABASE_URL"] = url
    for key, ms in UTH_WINDOWS.items():
        env[f"ELECTRIC_TABLE_UTH_{key}_MS"] = str(ms)
    env = embedded_environ(env, free_ports=True)
    issuer = SigningKey.from_file(embedded_keys(env))
    saved = dict(os.environ)
    os.environ.update({k: v for k, v in env.items() if k.startswith("ELECTRIC_TABLE_UTH_")})
    configure_logging("ERROR")
    setups = service_setups()
    hosts = [
        ServiceHost(load_config(name, env), setups[name])
        for name in ("wallet", "registration", "table", "payout")
    ]
    started: list[ServiceHost] = []
    try:
        for host in hosts:
            await host.start()
            started.append(host)
        by = {h.name: f"127.0.0.1:{h.grpc_port}" for h in hosts}
        yield Targets(by["registration"], by["table"], by["wallet"]), issuer
    finally:
        for host in reversed(started):
            await host.stop(1.0)
        os.environ.clear()
        os.environ.update(saved)


async def thb_rounds_per_second(targets: Targets, key: SigningKey) -> float:
    """THB rounds per second by ``THB_BOTS`` bots (after a warm-up)."""
    prefix = f"bench{uuid.uuid4().hex[:4]}"
    warm = CasinoRunner(
        CasinoRunnerConfig(
            targets=targets, key=key, thb_bots=THB_BOTS, thb_rounds=THB_WARMUP,
            player_prefix=prefix,
        )
    )  # fmt: skip
    await warm.run()
    runner = CasinoRunner(
        CasinoRunnerConfig(
            targets=targets, key=key, thb_bots=THB_BOTS, thb_rounds=THB_ROUNDS,
            player_prefix=prefix,
        )
    )  # fmt: skip
    t0 = time.perf_counter()
    stats = await runner.run()
    elapsed = time.perf_counter() - t0
    if stats.errors:
        raise RuntimeError(f"THB bench bots failed: {stats.last_errors}")
    return stats.games["thb"].rounds / elapsed


async def uth_settlement_ms(targets: Targets, key: SigningKey) -> list[float]:
    """Per UTH round with ``UTH_PLAYERS`` bots: ms from the last decision sent to the first
    settled result seen."""
    from electric_bots.casino_uth import UthTimings

    timings = UthTimings()
    runner = CasinoRunner(
        CasinoRunnerConfig(
            targets=targets, key=key, thb_bots=0, uth_bots=UTH_PLAYERS,
            uth_mix=(("optimal", 1), ("simple", 1)), uth_rounds=UTH_ROUNDS,
            uth_min_players=UTH_PLAYERS,
            player_prefix=f"benchu{uuid.uuid4().hex[:4]}", seat_wait=120.0,
            duration=UTH_BUDGET, stop_on_error=True,
        ),
    )  # fmt: skip
    runner.uth_timings = timings
    stats = await runner.run()
    if stats.errors:
        raise RuntimeError(f"UTH bench bots failed: {stats.last_errors}")
    return timings.settlement_ms()


async def _measure() -> list[Row]:
    with _databases() as urls, tempfile.TemporaryDirectory() as tmp:
        if urls is None:
            return [Row("casino", "THB rounds through the services (no PostgreSQL)", 0, "rounds/s")]
        async with services(urls, Path(tmp)) as (targets, key):
            rate = await thb_rounds_per_second(targets, key)
            rows = [
                Row("casino", f"THB rounds via gRPC+PostgreSQL ({THB_BOTS} bots)", rate,
                    "rounds/s", note=f"{THB_ROUNDS} rounds, 4 services in-process"),
            ]  # fmt: skip
            try:
                settle = await uth_settlement_ms(targets, key)
            except (ImportError, AttributeError) as exc:  # UTH runtime not there
                rows.append(Row("casino", "UTH settlement (unavailable)", 0, "ms", note=str(exc)))
                return rows
            if settle:
                rows.append(
                    Row("casino", f"UTH settlement, {UTH_PLAYERS} seated players (median)",
                        statistics.median(settle), "ms", "max", max(settle),
                        note=f"{len(settle)} rounds")
                )  # fmt: skip
            return rows


def run() -> list[Row]:
    """The service rows (bench_casino adds them to its math-kernel rows)."""
    return asyncio.run(_measure())
