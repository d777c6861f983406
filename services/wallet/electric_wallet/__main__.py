"""``python -m electric_wallet``: the wallet service as its own process.

Configuration from the environment (``electric_platform.config``): gRPC port 50053, metrics
9103, ``DATABASE_URL`` (PostgreSQL or SQLite; default a SQLite file under the var dir),
``KAFKA_BOOTSTRAP_SERVERS`` (when set, the outbox relay publishes the wallet's events to
``electric.wallet.events``; when unset events stay in the outbox until a relay or the
embedded runner's in-process bus picks them up).
"""

from __future__ import annotations

from electric_platform.server import main

from .service import setup


def run() -> None:
    """Console entry point."""
    main("wallet", setup)


if __name__ == "__main__":
    run()
