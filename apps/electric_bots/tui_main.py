"""``python -m electric_bots.tui``: the text client, live against a running platform.

Give it a player token (``--token`` or ``ELECTRIC_TOKEN``; ``make run`` prints how to mint
one). Without ``--table`` it follows the Multi-Table Bar (WatchMyTables) and draws every
table of the player that starts, each from its first hand; with ``--table ID`` it draws that
table (from its first hand, or live only with ``--live``). Ctrl-C stops.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence

import grpc

from electric_bots.tui import Metadata, TableRenderer, follow_my_tables, follow_table


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments and draw until the tables end or a signal; the exit code."""
    parser = argparse.ArgumentParser(prog="python -m electric_bots.tui", description=__doc__)
    parser.add_argument(
        "--registration",
        default=os.environ.get("ELECTRIC_REGISTRATION_TARGET", "127.0.0.1:50051"),
    )
    parser.add_argument(
        "--table-service", default=os.environ.get("ELECTRIC_TABLE_TARGET", "127.0.0.1:50052")
    )
    parser.add_argument("--token", default=os.environ.get("ELECTRIC_TOKEN", ""))
    parser.add_argument("--table", action="append", default=[], help="table id (repeatable)")
    parser.add_argument("--live", action="store_true", help="with --table: from now, not hand 1")
    parser.add_argument("--tables", type=int, default=None, help="stop after N tables ended")
    parser.add_argument("--turns", action="store_true", help="also draw each turn's timer")
    args = parser.parse_args(argv)
    if not args.token:
        parser.error("a player token is needed: --token or ELECTRIC_TOKEN")
    md: Metadata = (("authorization", f"Bearer {args.token}"),)

    def out(line: str) -> None:
        print(line, flush=True)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        async with (
            grpc.aio.insecure_channel(args.registration) as reg,
            grpc.aio.insecure_channel(args.table_service) as table,
        ):
            if args.table:
                await asyncio.gather(
                    *(
                        follow_table(
                            table,
                            tid,
                            lambda: md,
                            out,
                            renderer=TableRenderer(show_turns=args.turns),
                            from_start=not args.live,
                            stop=stop,
                        )
                        for tid in args.table
                    )
                )
            else:
                await follow_my_tables(
                    reg,
                    table,
                    lambda: md,
                    out,
                    stop=stop,
                    tables=args.tables,
                    show_turns=args.turns,
                )

    try:
        asyncio.run(run())
    except grpc.aio.AioRpcError as err:
        print(f"electric_bots.tui: {err.code().name}: {err.details()}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
