"""Relay process: ``python -m electric_eventlog.relay --database-url URL --bootstrap HOST:PORT``.

Publishes a store's outbox to Kafka until SIGTERM/SIGINT (see :mod:`.outbox_relay` for the
guarantees). Safe to kill -9 at any point: on restart it re-publishes at most the batch that
was acknowledged but not yet marked sent.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from datetime import timedelta

from .engine import create_engine
from .outbox_relay import DEFAULT_SENT_RETENTION, OutboxRelay
from .relay_lease import DEFAULT_LEASE_SECONDS


async def _main(args: argparse.Namespace) -> None:
    from .kafka import KafkaBus, ensure_topics

    engine = create_engine(args.database_url)
    bus = KafkaBus(args.bootstrap, client_id="electric-eventlog-relay")
    if args.topic and args.create_topics:
        await ensure_topics(args.bootstrap, [args.topic])
    await bus.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    hours = args.sent_retention_hours
    relay = OutboxRelay(
        engine,
        bus,
        topic=args.topic,
        batch_size=args.batch_size,
        sent_retention=timedelta(hours=hours) if hours > 0 else None,
        lease_seconds=args.lease_seconds,
    )
    try:
        await relay.run(stop)
    finally:
        await bus.stop()
        engine.dispose()


def main(argv: list[str] | None = None) -> None:
    """Console entry point of the relay process."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--database-url", required=True, help="SQLAlchemy URL of the store")
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--topic", default=None, help="only relay rows for this topic")
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument(
        "--sent-retention-hours",
        type=float,
        default=DEFAULT_SENT_RETENTION.total_seconds() / 3600,
        help="delete rows sent longer ago than this (0: keep them)",
    )
    parser.add_argument(
        "--lease-seconds",
        type=float,
        default=DEFAULT_LEASE_SECONDS,
        help="PostgreSQL: how long a frozen relay keeps the leadership",
    )
    parser.add_argument(
        "--create-topics", action="store_true", help="create --topic (and its DLQ) if missing"
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
