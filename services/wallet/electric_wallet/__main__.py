"""``python -m electric_wallet``: the wallet service as its own process.

Configuration from the environment (``electric_platform.config``): gRPC port 50053, metrics
9103, ``DATABASE_URL`` (PostgreSQL or SQLite; default a SQLite file under the var dir),
``KAFKA_BOOTSTRAP_SERVERS`` (when set, the outbox relay publishes the wallet's events to
``electric.wallet.events``; when unset they go to the process's in-process bus, like every
service's: see :func:`electric_platform.eventpath.open_event_path`).
"""

from __future__ import annotations

from electric_platform.server import main

from electric_wallet.app import setup
from electric_wallet.memtrace import start_from_env


def run() -> None:
    """Console entry point (``ELECTRIC_WALLET_TRACEMALLOC=<dir>``: memory reports, see
    :mod:`electric_wallet.memtrace`)."""
    start_from_env()
    main("wallet", setup)


if __name__ == "__main__":
    run()
