"""``python -m electric_bots``: bot players against running services (e.g. the four processes).

Targets come from the services' own variables (``ELECTRIC_REGISTRATION_TARGET``,
``ELECTRIC_TABLE_TARGET``, ``ELECTRIC_WALLET_TARGET``); the bots need the ISSUER's private key
(``--key FILE`` or ``ELECTRIC_AUTH_ISSUER_KEY_FILE``, e.g. ``var/keys/issuer.jwk.json`` of
``make run`` or of ``python -m electric_platform.keys DIR``) to mint their player tokens and
the cashier's operator token for deposits. Besides the tournament bots, THB and UTH casino
bots play as in ``make run`` (``--thb-bots``, ``--uth-bots``; 0 turns them off). Prints the
statistics at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import uuid
from collections.abc import Sequence

from electric_platform.config import load_config
from electric_platform.keys import SigningKey
from electric_platform.log import configure_logging
from electric_platform.token import ISSUER_KEY_FILE

from electric_bots.casino_runner import (
    NEVER_DECIDES_EVERY,
    CasinoRunner,
    CasinoRunnerConfig,
    add_casino_options,
    check_casino_options,
)
from electric_bots.runner import DEFAULT_MIX, BotRunner, BotRunnerConfig, Targets, parse_mix


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments, run the bots until their budget is used or a signal; exit code."""
    cfg = load_config("registration", os.environ)
    parser = argparse.ArgumentParser(prog="python -m electric_bots", description=__doc__)
    parser.add_argument("--registration", default=cfg.target("registration"))
    parser.add_argument("--table", default=cfg.target("table"))
    parser.add_argument("--wallet", default=cfg.target("wallet"))
    parser.add_argument("--bots", type=int, default=15)
    parser.add_argument("--mix", default="", help="e.g. random:3,tag:1 (the default)")
    parser.add_argument("--tournaments", type=int, default=None, help="stop after N finished")
    parser.add_argument("--duration", type=float, default=None, help="stop after SECONDS")
    parser.add_argument("--think", type=float, default=0.0, help="thinking-time scale")
    parser.add_argument(
        "--key",
        default=os.environ.get(ISSUER_KEY_FILE, ""),
        help=f"issuer's private JWK file (default ${ISSUER_KEY_FILE})",
    )
    parser.add_argument("--prefix", default=f"bot{uuid.uuid4().hex[:4]}", help="player ids")
    add_casino_options(parser)  # the same casino bots as the embedded runner (make run)
    args = parser.parse_args(argv)
    if not args.key:
        parser.error(f"an issuer key is needed: --key FILE or ${ISSUER_KEY_FILE}")
    check_casino_options(parser, args.thb_bots, args.uth_bots)
    key = SigningKey.from_file(args.key)
    configure_logging(cfg.log_level, cfg.log_format)
    targets = Targets(args.registration, args.table, args.wallet)
    casino = (
        CasinoRunner(
            CasinoRunnerConfig(
                targets=targets,
                key=key,
                thb_bots=args.thb_bots,
                uth_bots=args.uth_bots,
                never_every=NEVER_DECIDES_EVERY,
                duration=args.duration,
                player_prefix=f"{args.prefix}-casino",
            )
        )
        if args.thb_bots or args.uth_bots
        else None
    )
    runner = BotRunner(
        BotRunnerConfig(
            targets=targets,
            key=key,
            bots=args.bots,
            mix=parse_mix(args.mix) if args.mix else DEFAULT_MIX,
            until_finished=args.tournaments,
            duration=args.duration,
            think_scale=args.think,
            player_prefix=args.prefix,
        )
    )

    async def run() -> None:
        loop = asyncio.get_running_loop()
        stops = [runner.stop] + ([casino.stop] if casino is not None else [])

        def stop_all() -> None:
            for event in stops:
                event.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop_all)
        casino_task = asyncio.create_task(casino.run()) if casino is not None else None
        stats = await runner.run()
        if casino is not None and casino_task is not None:
            if args.tournaments is not None:  # the tournament budget ends the casino too
                casino.stop.set()
            await casino_task  # else its own duration (or a signal) ends it
        if casino is not None:
            c = casino.stats
            print(
                f"casino: THB rounds {c.games['thb'].rounds}, UTH rounds {c.games['uth'].rounds},"
                f" voided {c.games['thb'].voided + c.games['uth'].voided}, errors {c.errors}",
                file=sys.stdout,
            )
        # The tournament line last: scripts read the last line (the platform script e2e).
        print(
            f"tables finished {len(stats.tables_finished)}, registrations {stats.registrations}, "
            f"actions {stats.actions}, stale {stats.stale_commands}, errors {stats.errors}",
            file=sys.stdout,
        )

    asyncio.run(run())
    failed = runner.stats.errors or (casino is not None and casino.stats.errors)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
