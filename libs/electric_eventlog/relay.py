"""Outbox relay: publishes committed outbox rows to the bus, then marks them sent.

Crash safety: a row is marked sent only after the bus acknowledged it (acks=all). A crash
between the two re-publishes the batch on restart: duplicates on the wire, never a gap;
consumers deduplicate by event id. Batches go out in global-position order and a batch is
retried whole, so each stream stays in version order per key.

Run as a process: ``python -m electric_eventlog.relay --database-url URL --bootstrap HOST:PORT``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import logging
import signal
import time
from collections.abc import Callable
from datetime import datetime

from electric.eventlog.v1.envelope_pb2 import Envelope
from sqlalchemy import Connection, Engine, text

from .bus import EventBus, envelope_message
from .engine import create_engine, read_only
from .outbox import fetch_unsent, mark_sent
from .store import utc_now

log = logging.getLogger(__name__)


def _lock_key(topic: str | None) -> int:
    digest = hashlib.sha256(f"electric_eventlog.relay/{topic or '*'}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class OutboxRelay:
    """Moves outbox rows of one store onto an :class:`EventBus` (Kafka or in-process)."""

    def __init__(
        self,
        engine: Engine,
        bus: EventBus,
        *,
        topic: str | None = None,
        batch_size: int = 500,
        poll_interval: float = 0.02,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        """``topic`` restricts the relay to that topic's rows (default: every topic)."""
        self.engine = engine
        self.bus = bus
        self.topic = topic
        self.batch_size = batch_size
        self.poll_interval = poll_interval
        self._clock = clock
        self.published = 0

    def _fetch(self) -> list[tuple[str, Envelope]]:
        with read_only(self.engine.connect()) as conn, conn.begin():
            return fetch_unsent(conn, limit=self.batch_size, topic=self.topic)

    def _mark(self, sent: list[tuple[str, int]]) -> None:
        with self.engine.begin() as conn:
            mark_sent(conn, sent, at=self._clock())

    async def publish_once(self) -> int:
        """Publish one batch of unsent rows; returns how many were published."""
        batch = await asyncio.to_thread(self._fetch)
        if not batch:
            return 0
        await self.bus.publish([envelope_message(topic, env) for topic, env in batch])
        await asyncio.to_thread(self._mark, [(topic, env.global_position) for topic, env in batch])
        self.published += len(batch)
        return len(batch)

    async def drain(self) -> int:
        """Publish until the outbox is empty; returns how many were published."""
        total = 0
        while count := await self.publish_once():
            total += count
        return total

    async def run(self, stop: asyncio.Event) -> None:
        """Publish continuously until ``stop`` is set.

        On PostgreSQL a session advisory lock makes this the only active relay for its topic
        (a second one waits; the lock dies with a killed process's connection).
        """
        lock_conn = await asyncio.to_thread(self._acquire_leadership, stop)
        try:
            while not stop.is_set():
                if await self.publish_once() == 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), timeout=self.poll_interval)
        finally:
            if lock_conn is not None:
                await asyncio.to_thread(lock_conn.close)

    def _acquire_leadership(self, stop: asyncio.Event) -> Connection | None:
        if self.engine.dialect.name != "postgresql":
            return None  # SQLite: one embedded process owns the file.
        conn = self.engine.connect()
        key = _lock_key(self.topic)
        while not stop.is_set():
            if conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar():
                conn.commit()  # Session-level lock survives; do not sit idle in a transaction.
                return conn
            conn.rollback()
            log.info("another relay holds the outbox lock; waiting")
            time.sleep(1.0)
        return conn


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
    relay = OutboxRelay(engine, bus, topic=args.topic, batch_size=args.batch_size)
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
        "--create-topics", action="store_true", help="create --topic (and its DLQ) if missing"
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
