"""ConsumerWorker with ``batch_size`` > 1 (issues 16 and 18, registration's table-status lag):
a poll's events are applied in one transaction, in order, each exactly once (redeliveries
within the batch too), unhandled types are dropped by header, after-commit hooks run after
the commit, and a poison event rolls its batch back to event-by-event application: its
neighbours are applied once, it alone is dead-lettered. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import (
    ANY,
    ConsumerWorker,
    EventStore,
    IdempotentConsumer,
    InProcessBus,
    OutboxRelay,
    migrate,
)
from electric_eventlog.bus import OutgoingMessage
from electric_eventlog.topics import dlq_topic_for
from google.protobuf import wrappers_pb2
from sqlalchemy import Connection, Engine, event, text

TOPIC = "electric.batchsvc.events"


def _setup(engine: Engine) -> None:
    migrate(engine)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE seen (n INTEGER, value TEXT)"))


def _seen(engine: Engine) -> list[str]:
    with engine.connect() as conn:
        return [r[0] for r in conn.execute(text("SELECT value FROM seen ORDER BY n"))]


def _ledger(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM eventlog_applied")).scalar_one())


def _count_commits(engine: Engine) -> Callable[[], int]:
    commits = 0

    def on_commit(_: object) -> None:
        nonlocal commits
        commits += 1

    event.listen(engine, "commit", on_commit)
    return lambda: commits


async def _bus_with(engine: Engine, values: list[str]) -> InProcessBus:
    store = EventStore(engine, producer="batchsvc")
    messages: list[wrappers_pb2.StringValue | wrappers_pb2.BoolValue] = []
    for v in values:
        messages.append(wrappers_pb2.StringValue(value=v))
        messages.append(wrappers_pb2.BoolValue(value=True))  # no handler: dropped by header
    store.append_in_new_tx("s-1", ANY, messages)
    bus = InProcessBus()
    await OutboxRelay(engine, bus).drain()
    return bus


def _worker(engine: Engine, bus: InProcessBus, batch_size: int) -> ConsumerWorker:
    worker = ConsumerWorker(
        engine=engine,
        bus=bus,
        consumer=IdempotentConsumer("batch"),
        topics=[TOPIC],
        batch_size=batch_size,
        retry_delay=0.001,
    )

    def on_string(conn: Connection, envelope: Envelope, value: wrappers_pb2.StringValue) -> None:
        if value.value == "poison":
            raise ValueError("poison")
        # Each effect sees the ones before it in the batch: the order number is a count.
        n = conn.execute(text("SELECT count(*) FROM seen")).scalar_one()
        conn.execute(text("INSERT INTO seen VALUES (:n, :v)"), {"n": n, "v": value.value})

    worker.on(wrappers_pb2.StringValue, on_string)
    return worker


async def _run_until(worker: ConsumerWorker, bus: InProcessBus, done: Callable[[], bool]) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        async with asyncio.timeout(60):
            while not done():
                assert not task.done(), task
                await asyncio.sleep(0.01)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def test_a_batch_is_one_transaction_in_order(backend_engine: Engine) -> None:
    _setup(backend_engine)
    values = [f"v{i}" for i in range(12)]
    bus = await _bus_with(backend_engine, values)
    # A redelivered copy of the first event inside the same poll: skipped, not re-applied.
    first = await anext(bus.read_topic(TOPIC))
    await bus.publish([OutgoingMessage(TOPIC, first.key, first.value, first.headers)])
    commits = _count_commits(backend_engine)
    worker = _worker(backend_engine, bus, batch_size=100)
    after: list[list[str]] = []
    handler = worker._typed["google.protobuf.StringValue"][1]

    def with_hook(conn: Connection, envelope: Envelope, value: wrappers_pb2.StringValue) -> object:
        handler(conn, envelope, value)
        return lambda: after.append(_seen(backend_engine))

    worker._typed["google.protobuf.StringValue"] = (wrappers_pb2.StringValue, with_hook)
    end = bus.end_offset(TOPIC)
    await _run_until(worker, bus, lambda: bus.committed(worker.group_id, TOPIC) == end)

    assert _seen(backend_engine) == values
    assert (worker.applied, worker.skipped, worker.ignored) == (12, 1, 12)
    assert _ledger(backend_engine) == 12
    assert commits() == 1  # 12 effects and their ledger rows: one transaction
    # Every hook ran after the commit: each saw all 12 rows from another connection.
    assert after == [values] * 12


async def test_one_transaction_per_event_without_batching(backend_engine: Engine) -> None:
    _setup(backend_engine)
    values = [f"v{i}" for i in range(5)]
    bus = await _bus_with(backend_engine, values)
    commits = _count_commits(backend_engine)
    worker = _worker(backend_engine, bus, batch_size=1)
    end = bus.end_offset(TOPIC)
    await _run_until(worker, bus, lambda: bus.committed(worker.group_id, TOPIC) == end)
    assert _seen(backend_engine) == values
    assert commits() == 5


async def test_a_poison_event_falls_back_to_one_by_one(backend_engine: Engine) -> None:
    _setup(backend_engine)
    values = ["a", "b", "poison", "c"]
    bus = await _bus_with(backend_engine, values)
    worker = _worker(backend_engine, bus, batch_size=100)
    end = bus.end_offset(TOPIC)
    await _run_until(worker, bus, lambda: bus.committed(worker.group_id, TOPIC) == end)

    assert _seen(backend_engine) == ["a", "b", "c"]  # the rolled-back batch left nothing twice
    assert (worker.applied, worker.dead_lettered) == (3, 1)
    assert bus.end_offset(dlq_topic_for(TOPIC)) == 1
    assert _ledger(backend_engine) == 4  # three applied, one dead-lettered

    # Redelivering the whole topic to the same consumer changes nothing.
    again = _worker(backend_engine, bus, batch_size=100)
    again.group_id = "batch-again"
    await _run_until(again, bus, lambda: bus.committed("batch-again", TOPIC) == end)
    assert _seen(backend_engine) == ["a", "b", "c"]
    assert (again.applied, again.skipped, again.dead_lettered) == (0, 4, 0)
