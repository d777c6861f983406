"""The client processes of ``python -m bench platform`` (see ``bench/bench_platform.py``).

``python -m bench.platform_load bots ...`` runs the real bots of ``electric_bots`` (the
``BotRunner``, random strategy, no thinking time) against a running platform, with probes on
the bot's own calls:

* an ``Act`` is timed from the moment the request is sent until the bot's ``WatchTable``
  stream pushes a view that reflects it (a later ``(hand_number, action_seq)`` than the one
  the Act quoted, or the table finished); refused Acts are not timed;
* every ``Register`` call's send time (wall clock) is kept per (player, table), so the parent
  can time Register -> seated against the table service's ``TableStarted`` event.

``python -m bench.platform_load echo ...`` is the peer: the SAME client loop (N loops in
flight, each "send a command, wait for the pushed view") against the bare ``grpc.aio`` echo
server of ``bench/platform_echo.py``.

Both print one JSON object on stdout: acts (count in the window), window seconds, latency
samples in ms, and (bots) the register times, the bot counters and the CPU per Act of each
platform process in the window (``bench/platform_cpu.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from typing import Any

import grpc

from bench import platform_cpu


class Probe:
    """What the bots' calls measured (one event loop: no locking)."""

    def __init__(self) -> None:
        #: (player, table) -> (hand, seq, perf_counter at send) of the Act waiting for its view.
        self.pending: dict[tuple[str, str], tuple[int, int, float]] = {}
        #: (perf_counter at view, latency ms) of every timed Act.
        self.samples: list[tuple[float, float]] = []
        #: (player, table) -> wall-clock time the Register that got that table was sent.
        self.registered: dict[str, dict[str, float]] = {}
        self.refused = 0


def install(probe: Probe) -> None:
    """Wrap the bot's Act, view handler and Register with the probes (this process only)."""
    from electric.table.v1 import table_pb2
    from electric_bots import player, table_play

    session_cls: Any = table_play.TableSession
    bot_cls: Any = player.BotPlayer
    orig_act = session_cls._act
    orig_view = session_cls.on_view
    orig_register = bot_cls._register

    async def act(self: Any, request: Any) -> Any:
        key = (self.bot.player_id, self.table_id)
        probe.pending[key] = (request.hand_number, request.action_seq, time.perf_counter())
        try:
            return await orig_act(self, request)
        except grpc.aio.AioRpcError:
            probe.pending.pop(key, None)
            probe.refused += 1
            raise

    async def on_view(self: Any, view: Any) -> Any:
        now = time.perf_counter()
        key = (self.bot.player_id, self.table_id)
        sent = probe.pending.get(key)
        if sent is not None:
            finished = view.status == table_pb2.TABLE_STATUS_FINISHED
            later = view.HasField("hand") and (
                (view.hand.hand_number, view.hand.action_seq) > (sent[0], sent[1])
            )
            if finished or later:
                del probe.pending[key]
                probe.samples.append((now, (now - sent[2]) * 1000))
        return await orig_view(self, view)

    async def register(self: Any, entries: int) -> Any:
        sent = time.time()
        before = set(self._open)
        ok = await orig_register(self, entries)
        for table_id in set(self._open) - before:
            probe.registered.setdefault(table_id, {})[self.player_id] = sent
        return ok

    session_cls._act = act
    session_cls.on_view = on_view
    bot_cls._register = register


async def _cheapest_tier(target: str, key: Any) -> tuple[str, int]:
    from electric.registration.v1 import registration_pb2, registration_pb2_grpc
    from electric_platform.auth import Role, TokenSource
    from electric_platform.context import outgoing_metadata

    tokens = TokenSource(key, "bench-lobby", Role.PLAYER)
    async with grpc.aio.insecure_channel(target) as ch:
        stub = registration_pb2_grpc.RegistrationServiceStub(ch)
        lobby = await stub.ListLobby(
            registration_pb2.ListLobbyRequest(),
            metadata=outgoing_metadata(tokens.token()),
            timeout=30,
        )
    tier = min(lobby.tiers, key=lambda t: t.buy_in.cents)
    return tier.tier_id, max(2, tier.seats)


async def run_bots(args: argparse.Namespace) -> dict[str, Any]:
    from electric_bots.runner import BotRunner, BotRunnerConfig, Targets
    from electric_platform.keys import SigningKey

    probe = Probe()
    install(probe)
    key = SigningKey.from_file(args.key)
    tier, seats = await _cheapest_tier(args.registration, key)
    runner = BotRunner(
        BotRunnerConfig(
            targets=Targets(args.registration, args.table, args.wallet),
            key=key,
            bots=args.tables * seats,
            tiers=[tier],
            mix=((args.strategy, 1),),
            deposit_cents=10_000_000,
            think_scale=0.0,
            seed=args.seed,
            player_prefix=args.prefix,
        )
    )
    task = asyncio.create_task(runner.run())
    # The window opens at the first timed Act (deposits and the first fills are set-up).
    started = time.perf_counter()
    while not probe.samples and time.perf_counter() - started < args.seconds * 3:
        await asyncio.sleep(0.05)
    named = platform_cpu.parse_named(args.cpu)
    cpu_before = platform_cpu.snapshot(named, infra=args.infra_cpu)
    opened = time.perf_counter()
    await asyncio.sleep(args.seconds)
    closed = time.perf_counter()
    cpu_after = platform_cpu.snapshot(named, infra=args.infra_cpu)
    # Drain: no new entries, running tables played out (bounded), so tournaments finish.
    runner.draining.set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(task), timeout=args.drain)
    runner.stop.set()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(task, timeout=30)
    in_window = [ms for at, ms in probe.samples if opened <= at <= closed]
    stats = runner.stats
    return {
        "acts": len(in_window),
        "cpu_ms_per_act": platform_cpu.per_act_ms(cpu_before, cpu_after, len(in_window)),
        "window": closed - opened,
        "latency_ms": in_window,
        "registered": probe.registered,
        "bots": args.tables * seats,
        "strategy": args.strategy,
        "seats": seats,
        "tier": tier,
        "actions": stats.actions,
        "refused": probe.refused,
        "errors": stats.errors,
        "last_errors": stats.last_errors[-5:],
        "tables_finished": len(stats.tables_finished),
        "waited": closed - started,
    }


async def run_echo(args: argparse.Namespace) -> dict[str, Any]:
    from bench.platform_echo import client_loops

    samples = await client_loops(args.target, args.tables, args.seconds)
    return {"acts": len(samples), "window": args.seconds, "latency_ms": samples}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.platform_load")
    sub = parser.add_subparsers(dest="mode", required=True)
    bots = sub.add_parser("bots")
    bots.add_argument("--registration", required=True)
    bots.add_argument("--table", required=True)
    bots.add_argument("--wallet", required=True)
    bots.add_argument("--key", required=True, help="issuer private key file")
    bots.add_argument("--prefix", required=True)
    bots.add_argument("--seed", type=int, default=16)
    bots.add_argument("--drain", type=float, default=20.0)
    bots.add_argument("--cpu", default="", help="processes to measure: name=pid,name=pid")
    bots.add_argument(
        "--infra-cpu", action="store_true", help="measure PostgreSQL and Kafka processes too"
    )
    bots.add_argument(
        "--strategy",
        default="random",
        help="bot strategy (electric_domain.tournament.bots.BOTS): random ends tournaments in "
        "a few Acts, tag plays many Acts per tournament",
    )
    echo = sub.add_parser("echo")
    echo.add_argument("--target", required=True)
    for p in (bots, echo):
        p.add_argument("--tables", type=int, required=True, help="loops (tables) in flight")
        p.add_argument("--seconds", type=float, required=True)
    args = parser.parse_args(argv)
    runner = run_bots if args.mode == "bots" else run_echo
    result = asyncio.run(runner(args))
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
