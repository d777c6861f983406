"""``make fuzz N=50000 SEED=1``: the API fuzz harness at full size, with a progress bar.

Starts the four services in this process (SQLite in a temporary directory, no bots), gives
them content (one tournament played by bots, a funded player with a waiting entry), sends
``N`` generated requests (:mod:`tests.support.fuzz_api`) and prints the calls per RPC and
status code, then every finding. Exit code 1 when anything was found. ``--edge`` makes every
call through the browser edge (web/edge, connect-python: Connect or gRPC-Web) instead of
native gRPC (:mod:`tests.support.fuzz_edge`); ``make fuzz EDGE=1``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from tqdm import tqdm

from tests.support.fuzz_api import FuzzRunner, Transport, new_seed, seed_platform
from tests.support.fuzz_report import FuzzReport
from tests.support.platform_kit import Platform, embedded_platform


@contextlib.asynccontextmanager
async def _transport(platform: Platform, seed: int, edge: bool) -> AsyncIterator[Transport | None]:
    """None (native gRPC), or the browser edge started in front of ``platform``."""
    if not edge:
        yield None
        return
    from tests.support.fuzz_edge import UNLIMITED, EdgeTransport
    from tests.support.web_edge import browser_edge

    async with browser_edge(platform.targets, extra_args=UNLIMITED) as running:
        yield EdgeTransport(running, seed)


async def fuzz(
    calls: int, seed: int, *, check_state: bool = True, quiet: bool = False, edge: bool = False
) -> FuzzReport:
    """Run ``calls`` fuzzed calls against a fresh platform (through the browser edge when
    ``edge``); the report."""
    with tempfile.TemporaryDirectory(prefix="electric-fuzz-") as tmp:
        async with embedded_platform(Path(tmp)) as platform:
            known, seated = await seed_platform(platform, seed)
            async with _transport(platform, seed, edge) as transport:
                runner = FuzzRunner(
                    platform, known, seated, seed=seed, check_state=check_state, transport=transport
                )
                try:
                    with tqdm(total=calls, unit="call", disable=quiet, smoothing=0.05) as bar:
                        return await runner.run(calls, progress=bar.update)
                finally:
                    runner.close()
    raise AssertionError("unreachable")  # for mypy: the context managers may swallow


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.fuzz_main", description=__doc__)
    parser.add_argument("-n", "--calls", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=None, help="default: a fresh one (printed)")
    parser.add_argument("--no-state", action="store_true", help="skip the state checks (faster)")
    parser.add_argument(
        "--edge", action="store_true", help="call through the browser edge (web/edge)"
    )
    args = parser.parse_args(argv)
    seed = new_seed() if args.seed is None else args.seed
    # The services log every rejected call at debug/info; keep the terminal for the bar.
    logging.disable(logging.ERROR)
    via = " through the browser edge" if args.edge else ""
    print(f"API fuzz{via}: {args.calls} calls, seed {seed}", flush=True)
    report = asyncio.run(fuzz(args.calls, seed, check_state=not args.no_state, edge=args.edge))
    print(report.table())
    for finding in report.findings:
        print(f"- {finding.kind} {finding.rpc} [{finding.credential}] {finding.detail}")
        print(f"    request: {finding.request}")
    print(f"seed {seed}: {'FAILED' if report.findings else 'ok'}")
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
