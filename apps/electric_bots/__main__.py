"""``python -m electric_bots``: bot players against running services (e.g. the four processes).

Targets come from the services' own variables (``ELECTRIC_REGISTRATION_TARGET``,
``ELECTRIC_TABLE_TARGET``, ``ELECTRIC_WALLET_TARGET``); the bots need the ISSUER's private key
(``--key FILE`` or ``ELECTRIC_AUTH_ISSUER_KEY_FILE``, e.g. ``var/keys/issuer.jwk.json`` of
``make run`` or of ``python -m electric_platform.keys DIR``) to mint their player tokens and
the cashier's operator token for deposits. Prints the statistics at the end.
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
    args = parser.parse_args(argv)
    if not args.key:
        parser.error(f"an issuer key is needed: --key FILE or ${ISSUER_KEY_FILE}")
    key = SigningKey.from_file(args.key)
    configure_logging(cfg.log_level, cfg.log_format)
    runner = BotRunner(
        BotRunnerConfig(
            targets=Targets(args.registration, args.table, args.wallet),
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
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, runner.stop.set)
        stats = await runner.run()
        print(
            f"tables finished {len(stats.tables_finished)}, registrations {stats.registrations}, "
            f"actions {stats.actions}, stale {stats.stale_commands}, errors {stats.errors}",
            file=sys.stdout,
        )

    asyncio.run(run())
    return 0 if not runner.stats.errors else 1


if __name__ == "__main__":
    raise SystemExit(main())
