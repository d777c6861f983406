"""The wallet's memory under sustained load, alone: ``python -m tools.soak.wallet_mem``.

Starts ``python -m electric_wallet`` as a process on a fresh PostgreSQL database and its own
Kafka namespace (the soak's setup, without the other services), with
``ELECTRIC_WALLET_TRACEMALLOC`` (``electric_wallet.memtrace``) when ``--trace`` is given, and
drives it over gRPC for ``--duration`` with ``--workers`` concurrent clients doing what the
platform does to a wallet: deposits (operator), buy-in reservations posted or voided, rake
and net moves from escrow, prize credits against the stake (registration, payout), casino
wagers and winnings, balance reads with player tokens, every transfer a new id. Prints the
process's RSS every ``--interval`` and the least-squares slope over the second half; the
tracemalloc reports land in ``--out`` (``NNNN.txt``). Bounded: stops after ``--duration``
or ``--max-ops``, kills the wallet and drops the database.

    .venv/bin/python -m tools.soak.wallet_mem --duration 6m --interval 30s --trace
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

from electric_clients.accounts import ESCROW, PRIZE_RESERVE, RAKE
from electric_clients.wallet import WalletClient
from electric_platform import Role

from tools.soak.__main__ import seconds
from tools.soak.bounds import slope_per_hour

ROOT = Path(__file__).resolve().parents[2]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Load:
    """The clients and the counters of one run."""

    def __init__(self, target: str, players: int) -> None:
        from tests.support.auth import token_source

        self.service = WalletClient.connect(target, token_source("registration", Role.SERVICE))
        self.operator = WalletClient.connect(target, token_source("cashier", Role.OPERATOR))
        self.players = [f"mem{n:03d}" for n in range(players)]
        self.reader = {
            p: WalletClient.connect(target, token_source(p, Role.PLAYER)) for p in self.players
        }
        self.ops = 0

    async def close(self) -> None:
        for c in (self.service, self.operator, *self.reader.values()):
            await c.close()

    async def fund(self) -> None:
        for p in self.players:
            await _deposit(self.operator, p)

    async def one_round(self, rng: random.Random) -> None:
        """One tournament entry (reserve, post or void, rake/net, prize) or casino round."""
        p = rng.choice(self.players)
        n = uuid.uuid4().hex
        w = self.service
        if rng.random() < 0.5:
            await w.reserve(f"buyin-{n}", p, 110)
            if rng.random() < 0.15:
                await w.void(f"buyin-{n}", "unregistered")
            else:
                await w.post(f"buyin-{n}")
                await w.move(f"rake-{n}", ESCROW, RAKE, 10, code="rake")
                await w.move(f"net-{n}", ESCROW, PRIZE_RESERVE, 100, code="prize_reserve")
                if rng.random() < 0.3:
                    await w.credit_prize(f"prize-{n}", p, 300, stake_transfer_id=f"buyin-{n}")
            self.ops += 1
        else:
            await w.wager(f"wager-{n}", p, 50)
            if rng.random() < 0.45:
                await w.credit_prize(
                    f"win-{n}", p, 100, from_account="house:casino_bankroll", code="winnings"
                )
            self.ops += 1
        if rng.random() < 0.3:
            await self.reader[p].balance("")
        if rng.random() < 0.02:
            await _deposit(self.operator, p)


async def _deposit(operator: WalletClient, player: str) -> None:
    from electric.wallet.v1 import wallet_pb2

    await operator._call(
        operator.stub.Deposit,
        wallet_pb2.DepositRequest(
            transfer_id=f"dep-{uuid.uuid4().hex}", player_id=player, amount=10_000_000
        ),
    )


async def drive(args: argparse.Namespace, pid: int, target: str) -> list[float]:
    load = Load(target, args.players)
    await load.fund()
    began = time.monotonic()
    stop = began + args.duration
    samples: list[tuple[float, float]] = []

    async def worker(seed: int) -> None:
        rng = random.Random(seed)
        while time.monotonic() < stop and load.ops < args.max_ops:
            await load.one_round(rng)

    async def sampler() -> None:
        while time.monotonic() < stop and load.ops < args.max_ops:
            t = time.monotonic() - began
            samples.append((t, rss_mib(pid)))
            print(f"t={t:5.0f}s rounds={load.ops:7d} rss={samples[-1][1]:.1f} MiB", flush=True)
            await asyncio.sleep(args.interval)

    await asyncio.gather(sampler(), *(worker(args.seed + i) for i in range(args.workers)))
    samples.append((time.monotonic() - began, rss_mib(pid)))
    await load.close()
    half = [s for s in samples if s[0] >= samples[-1][0] / 2]
    rate = load.ops / max(1.0, samples[-1][0])
    print(
        f"rounds {load.ops} ({rate:.0f}/s); RSS {samples[0][1]:.1f} -> {samples[-1][1]:.1f} MiB;"
        f" slope over the second half {slope_per_hour(half):.1f} MiB/h"
        f" ({slope_per_hour(half) / max(rate * 3600, 1e-9) * 1024e3:.1f} KiB per 1000 rounds)"
    )
    return [s[1] for s in samples]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.soak.wallet_mem", description=__doc__)
    p.add_argument("--duration", type=seconds, default=seconds("5m"))
    p.add_argument("--interval", type=seconds, default=30.0)
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--players", type=int, default=24)
    p.add_argument("--max-ops", type=int, default=2_000_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--trace", action="store_true", help="tracemalloc reports in --out")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument(
        "--env", action="append", default=[], help="NAME=VALUE for the wallet (repeatable)"
    )
    args = p.parse_args(argv)

    from tests.e2e.platform.platform_cluster import free_port
    from tests.support.auth import write_keys
    from tests.support.infra import (
        fresh_database,
        local_kafka_bootstrap,
        local_pg_url,
        normalize_pg_url,
    )

    pg = normalize_pg_url(os.environ.get("DATABASE_URL") or local_pg_url(os.environ))
    kafka = os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or local_kafka_bootstrap(os.environ)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or ROOT / "var" / "soak" / f"wallet-mem-{stamp}"
    out.mkdir(parents=True, exist_ok=True)
    grpc_port, metrics_port = free_port(), free_port()
    with (
        tempfile.TemporaryDirectory(prefix="wallet-mem-") as tmp,
        fresh_database(pg, prefix="wallet_mem") as url,
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ELECTRIC_")}
        env.update(write_keys(Path(tmp) / "keys").env())
        env.update(
            DATABASE_URL=url,
            KAFKA_BOOTSTRAP_SERVERS=kafka,
            ELECTRIC_KAFKA_NAMESPACE=f"e2e-wm-{uuid.uuid4().hex[:10]}",
            ELECTRIC_GRPC_PORT=str(grpc_port),
            ELECTRIC_METRICS_PORT=str(metrics_port),
            ELECTRIC_VAR_DIR=str(Path(tmp) / "var"),
            ELECTRIC_LOG_LEVEL="WARNING",
        )
        env.update(item.split("=", 1) for item in args.env)
        if args.trace:
            env["ELECTRIC_WALLET_TRACEMALLOC"] = str(out)
            env["ELECTRIC_WALLET_TRACEMALLOC_SECONDS"] = str(args.interval)
        with (out / "wallet.log").open("ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "electric_wallet"],
                env=env,
                cwd=ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            _wait_port(grpc_port, proc)
            asyncio.run(drive(args, proc.pid, f"127.0.0.1:{grpc_port}"))
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
    print(f"reports: {out}")
    return 0


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the wallet exited early; see wallet.log")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                time.sleep(2)  # bootstrap (system accounts) runs before serving
                return
        time.sleep(0.5)
    raise SystemExit("the wallet did not start")


if __name__ == "__main__":
    sys.exit(main())
