"""How fast does registration's ``table-status`` consumer apply real table events?
(issues 16 and 18, docs/chaos.md "registration's consumer lag")

Reads the first ``--events`` messages of a real table topic (a soak or e2e run's namespace
on the shared Kafka, read-only), builds a scratch PostgreSQL database with registration's
schema and a row (status ``filled``) plus seated entries for every tournament table whose
``TableStarted`` is among them (so the handlers do their real work), then runs the real
``TableStatusConsumer`` over them and prints messages per second and where the time went.

- ``--bus memory`` (default): the messages are replayed through an ``InProcessBus``: the
  consumer's own cost, without Kafka.
- ``--bus kafka``: the consumer reads the source topic itself with a new consumer group
  (the whole topic is backlog), as registration does under lag; RSS is printed every 5 s
  and ``--tracemalloc`` prints the top allocation growth between the first and last sample.
- ``--batch N``: messages applied per transaction (1 = one transaction per message).
- ``--profile``: cProfile of the event loop thread and of the applying thread.
- ``--consumer-file F``: the ``TableStatusConsumer`` of file ``F`` (an older revision, for a
  before/after comparison; ``--batch 1`` is then the old worker's path).

    .venv/bin/python -m tools.soak.consumer_bench --namespace e2e-76b0912cd092 \\
        --events 20000 --batch 1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import gc
import importlib.util
import io
import os
import pstats
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
from electric.table.v1 import events_pb2 as table_events
from electric_domain.tournament import default_config
from electric_eventlog import EventStore, InProcessBus, create_engine, migrate
from electric_eventlog.bus import OutgoingMessage, ReceivedMessage, decode_envelope
from electric_eventlog.kafka import KafkaBus
from electric_eventlog.migrate import upgrade
from electric_registration.consumers import CONSUMER_NAME, SOURCE_TOPIC, TableStatusConsumer
from electric_registration.handlers import ensure_open_tables, sync_tiers
from electric_registration.store import tables as t
from sqlalchemy import Engine, event, insert, select
from sqlalchemy.engine import make_url

from tools.soak.probe import rss_mb

DEFAULT_URL = "postgresql+psycopg://electric:electric@127.0.0.1:5432/electric"
STARTED = table_events.TableStarted.DESCRIPTOR.full_name


async def read_events(kafka: str, namespace: str, limit: int) -> list[ReceivedMessage]:
    bus = KafkaBus(kafka, client_id="consumer-bench-read", namespace=namespace)
    out: list[ReceivedMessage] = []
    async for message in bus.read_topic(SOURCE_TOPIC):
        out.append(message)
        if len(out) >= limit:
            break
    return out


@contextlib.contextmanager
def scratch_database(url_text: str) -> Iterator[Engine]:
    url = make_url(url_text).set(drivername="postgresql+psycopg")
    scratch = f"bench_reglag_{uuid.uuid4().hex[:10]}"
    admin = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{scratch}"')
    engine = create_engine(url.set(database=scratch).render_as_string(hide_password=False))
    try:
        yield engine
    finally:
        engine.dispose()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')


def seed_registration(engine: Engine, messages: list[ReceivedMessage]) -> int:
    """Registration's schema, and a filled table with its entries per TableStarted."""
    migrate(engine)
    upgrade(
        engine,
        versions_dir=t.VERSIONS_DIR,
        version_table="alembic_version_registration",
        target_metadata=t.metadata,
    )
    config = default_config()
    sync_tiers(engine, config)
    store = EventStore(engine, producer="registration")
    try:
        template_id = ensure_open_tables(engine, store, config, correlation_id="bench")[0]
    finally:
        store.group.close()
    with engine.begin() as conn:
        template = dict(
            conn.execute(select(t.tables).where(t.tables.c.table_id == template_id))
            .mappings()
            .one()
        )
        seeded = 0
        now = datetime.now(UTC)
        for message in messages:
            if message.header("event-type") != STARTED.encode():
                continue
            started = table_events.TableStarted()
            decode_envelope(message).payload.Unpack(started)
            row = {**template, "table_id": started.table_id, "status": "filled"}
            row["table_name"] = f"bench {seeded}"
            conn.execute(insert(t.tables).values(row))
            for s in started.seats:
                conn.execute(
                    insert(t.entries).values(
                        entry_id=uuid.uuid4().hex,
                        player_id=s.player_id,
                        table_id=started.table_id,
                        seat=s.seat,
                        status="confirmed",
                        wallet_transfer_id="",
                        request_id="",
                        registered_at=now,
                    )
                )
            seeded += 1
    return seeded


class ThreadProfile:
    """cProfile of the applying thread: enabled around each call of the wrapped method."""

    def __init__(self) -> None:
        self.profile = cProfile.Profile()

    def wrap(self, fn: Any) -> Any:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            self.profile.enable()
            try:
                return fn(*args, **kwargs)
            finally:
                self.profile.disable()

        return wrapped


def top(profile: cProfile.Profile, title: str, lines: int = 25) -> None:
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("cumulative").print_stats(lines)
    print(f"--- {title} (cumulative) ---")
    print("\n".join(out.getvalue().splitlines()[: lines + 12]))


async def consume(
    args: argparse.Namespace, engine: Engine, messages: list[ReceivedMessage]
) -> float:
    notified = 0

    def notify(players: set[str]) -> None:
        nonlocal notified
        notified += len(players)

    total = len(messages)
    if args.bus == "kafka":
        options = {"max_partition_fetch_bytes": args.fetch_kib * 1024} if args.fetch_kib else {}
        bus: Any = KafkaBus(
            args.kafka, client_id="bench", namespace=args.namespace, consumer_options=options
        )
        messages.clear()  # the consumer reads them from Kafka: keep them out of the RSS
        gc.collect()
    else:
        bus = InProcessBus()
        await bus.publish([OutgoingMessage(m.topic, m.key, m.value, m.headers) for m in messages])
    consumer_class: Any = TableStatusConsumer
    if args.consumer_file:  # e.g. an older consumers.py (git show REV:path > file): before/after
        spec = importlib.util.spec_from_file_location("bench_consumers", args.consumer_file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        consumer_class = module.TableStatusConsumer
    consumer = consumer_class(engine, bus, notify)
    worker = consumer.worker
    worker.group_id = f"{CONSUMER_NAME}-bench-{uuid.uuid4().hex[:6]}"
    worker.dedup_retention = None
    if args.batch:
        worker.batch_size = args.batch
    profile = ThreadProfile() if args.profile else None
    if profile is not None:
        setattr(worker, "_apply_in_tx", profile.wrap(worker._apply_in_tx))  # noqa: B010
        setattr(worker, "_apply_batch_in_tx", profile.wrap(worker._apply_batch_in_tx))  # noqa: B010
    loop_profile = cProfile.Profile() if args.profile else None

    def done() -> int:
        return int(worker.applied + worker.skipped + worker.ignored + worker.dead_lettered)

    counts = {"statements": 0, "commits": 0}

    def count(kind: str) -> Callable[..., None]:
        def counted(*_: Any) -> None:
            counts[kind] += 1

        return counted

    event.listen(engine, "before_cursor_execute", count("statements"))
    event.listen(engine, "commit", count("commits"))
    stop = asyncio.Event()
    if args.tracemalloc:
        tracemalloc.start(args.frames)
    pid = os.getpid()
    base = rss_mb(pid)
    first_snapshot = None
    began, cpu = time.perf_counter(), time.process_time()
    if loop_profile is not None:
        loop_profile.enable()
    task = asyncio.create_task(worker.run(stop))
    next_sample = began + 5
    while done() < total and not task.done():
        await asyncio.sleep(0.05)
        if time.perf_counter() >= next_sample:
            next_sample += 5
            print(
                f"{time.perf_counter() - began:6.1f}s processed {done():7d}"
                f" RSS {rss_mb(pid):.1f} MiB (+{rss_mb(pid) - base:.1f})",
                flush=True,
            )
            if args.tracemalloc and first_snapshot is None:
                first_snapshot = tracemalloc.take_snapshot()
    elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    if loop_profile is not None:
        loop_profile.disable()
    stop.set()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(task, 20)
    if task.done() and task.exception() is not None:
        raise task.exception()  # type: ignore[misc]
    print(
        f"processed {done()} in {elapsed:.1f}s = {done() / elapsed:.0f} msg/s"
        f" (applied {worker.applied}, ignored by type {worker.ignored},"
        f" skipped {worker.skipped}, dead-lettered {worker.dead_lettered});"
        f" players notified {notified}; RSS +{rss_mb(pid) - base:.1f} MiB"
    )
    applied = max(worker.applied, 1)
    print(
        f"per applied event: {counts['statements'] / applied:.2f} SQL statements,"
        f" {counts['commits'] / applied:.3f} commits; consumer CPU {cpu:.1f}s ="
        f" {cpu * 1e6 / done():.0f} us per message"
    )
    if args.tracemalloc and first_snapshot is not None:
        last = tracemalloc.take_snapshot()
        print("--- tracemalloc growth, first sample -> end ---")
        for stat in last.compare_to(first_snapshot, "traceback")[:8]:
            print(stat)
            for line in stat.traceback.format()[-8:]:
                print("   ", line)
    if loop_profile is not None:
        top(loop_profile, "event loop thread")
    if profile is not None:
        top(profile.profile, "applying thread (transactions)")
    return done() / elapsed


async def main_async(args: argparse.Namespace) -> None:
    messages = await read_events(args.kafka, args.namespace, args.events)
    print(f"read {len(messages)} messages of {args.namespace}.{SOURCE_TOPIC}")
    with scratch_database(args.database_url) as engine:
        seeded = await asyncio.to_thread(seed_registration, engine, messages)
        print(f"seeded {seeded} registration tables; bus {args.bus}, batch {args.batch}")
        await consume(args, engine, messages)


def main() -> None:
    p = argparse.ArgumentParser(prog="python -m tools.soak.consumer_bench", description=__doc__)
    p.add_argument("--kafka", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"))
    p.add_argument("--database-url", default=os.environ.get("DATABASE_URL", DEFAULT_URL))
    p.add_argument("--namespace", default="e2e-76b0912cd092")
    p.add_argument("--events", type=int, default=20000)
    p.add_argument("--bus", choices=("memory", "kafka"), default="memory")
    p.add_argument("--batch", type=int, default=0, help="messages per transaction (0: default)")
    p.add_argument("--profile", action="store_true")
    p.add_argument(
        "--fetch-kib", type=int, default=0, help="Kafka max_partition_fetch_bytes (0: the bus's)"
    )
    p.add_argument(
        "--consumer-file", default="", help="take TableStatusConsumer from this file instead"
    )
    p.add_argument("--tracemalloc", action="store_true")
    p.add_argument("--frames", type=int, default=4, help="tracemalloc frames per allocation")
    asyncio.run(main_async(p.parse_args()))


if __name__ == "__main__":
    main()
