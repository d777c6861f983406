"""The outbox relay and the consumers keep up inside a busy service process (issue 16).

Two causes of the table's seconds of relay lag (``python -m bench relay``): the relay's
database calls queued in the loop's shared default executor behind the service's blocking
calls, and a committed row waited for the next poll. The relay now has a thread of its own
and a local commit wakes it (``EventStore.on_commit`` -> ``OutboxRelay.notify``), also the
commit of a caller's own transaction that appended (``electric_eventlog.commit_hook``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import (
    ANY,
    ConsumerWorker,
    EventStore,
    IdempotentConsumer,
    InProcessBus,
    OutboxRelay,
    create_engine,
    migrate,
)
from google.protobuf import wrappers_pb2
from sqlalchemy import Connection, Engine

from tests.support.eventually import run_until

TOPIC = "electric.wakesvc.events"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    eng = create_engine(f"sqlite:///{tmp_path / 'wake.db'}")
    migrate(eng)
    yield eng
    eng.dispose()


async def test_a_local_commit_wakes_the_relay_long_before_its_poll(engine: Engine) -> None:
    store = EventStore(engine, producer="wakesvc")
    bus = InProcessBus()
    relay = OutboxRelay(engine, bus, poll_interval=120.0)  # the poll alone would take 2 min
    store.on_commit(relay.notify)
    stop = asyncio.Event()
    task = asyncio.create_task(relay.run(stop))
    await run_until(lambda: relay._loop is not None, task, timeout=30.0)
    await asyncio.sleep(0.2)  # let the first (empty) pass end: the relay now waits to poll
    for i in range(3):
        await asyncio.to_thread(
            store.append_in_new_tx, "s", ANY, [wrappers_pb2.StringValue(value=str(i))]
        )
        await run_until(lambda n=i + 1: bus.end_offset(TOPIC) == n, task, timeout=30.0)
    stop.set()
    await asyncio.wait_for(task, timeout=30.0)


async def test_the_relay_does_not_queue_behind_a_busy_default_executor(engine: Engine) -> None:
    store = EventStore(engine, producer="wakesvc")
    for i in range(5):
        store.append_in_new_tx("s", ANY, [wrappers_pb2.StringValue(value=str(i))])
    loop = asyncio.get_running_loop()
    executor = ThreadPoolExecutor(max_workers=1)
    loop.set_default_executor(executor)
    release = threading.Event()
    # The service's only default worker is held by a blocking call (a lock wait, say).
    blocked = asyncio.ensure_future(asyncio.to_thread(release.wait, 120.0))
    try:
        bus = InProcessBus()
        drained = await asyncio.wait_for(OutboxRelay(engine, bus).drain(), timeout=60.0)
        assert drained == 5
        assert bus.end_offset(TOPIC) == 5
    finally:
        release.set()
        await blocked


async def test_an_idle_relay_backs_off_and_still_finds_a_commit_it_was_not_told_of(
    engine: Engine,
) -> None:
    # Another process's commit (no notify): only the poll finds it, within idle_poll_max.
    store = EventStore(engine, producer="wakesvc")
    bus = InProcessBus()
    relay = OutboxRelay(engine, bus, poll_interval=0.01, idle_poll_max=0.16)
    fetches = 0
    fetch = relay._fetch

    def counting_fetch() -> list[object]:
        nonlocal fetches
        fetches += 1
        return fetch()  # type: ignore[return-value]

    relay._fetch = counting_fetch  # type: ignore[assignment,method-assign]
    stop = asyncio.Event()
    task = asyncio.create_task(relay.run(stop))
    await run_until(lambda: relay._loop is not None, task, timeout=30.0)
    await asyncio.sleep(1.0)
    # At a fixed 10 ms poll this would be about 100 fetches; backing off 10 → 160 ms: ~10.
    assert fetches <= 20
    await asyncio.to_thread(
        store.append_in_new_tx, "s", ANY, [wrappers_pb2.StringValue(value="quiet")]
    )
    await run_until(lambda: bus.end_offset(TOPIC) == 1, task, timeout=30.0)
    stop.set()
    await asyncio.wait_for(task, timeout=30.0)


def test_a_commit_of_the_callers_own_transaction_that_appended_calls_the_listeners(
    engine: Engine,
) -> None:
    # A service appending inside its own engine.begin() block: its relay must wake too.
    store = EventStore(engine, producer="wakesvc")
    calls: list[str] = []
    store.on_commit(lambda: calls.append("commit"))
    event = [wrappers_pb2.StringValue(value="x")]
    with engine.connect() as conn:
        with conn.begin() as tx:
            store.append(conn, "s", ANY, event)
            tx.rollback()
        assert calls == []  # rolled back: nothing to publish
        with conn.begin():
            conn.exec_driver_sql("SELECT 1")
        assert calls == []  # a later commit on the same connection appended nothing
        with conn.begin():
            store.append(conn, "s", ANY, event)
            store.append(conn, "t", ANY, event)
        assert calls == ["commit"]  # once per transaction, however many appends
    with engine.begin() as conn:
        store.append(conn, "s", ANY, [])  # no events: nothing was written
    assert calls == ["commit"]
    with engine.begin() as conn:
        store.append(conn, "s", ANY, event)
    assert calls == ["commit", "commit"]


@pytest.mark.parametrize("batch_size", [1, 50])
async def test_a_consumer_does_not_queue_behind_a_busy_default_executor(
    engine: Engine, batch_size: int
) -> None:
    # The one-process runner at 50 tables: payout's consumer applied one event per wait in
    # the shared executor and fell tens of seconds behind. It now has a thread of its own.
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE seen (value TEXT)")
    store = EventStore(engine, producer="wakesvc")
    for i in range(5):
        store.append_in_new_tx("s", ANY, [wrappers_pb2.StringValue(value=str(i))])
    bus = InProcessBus()
    await OutboxRelay(engine, bus).drain()

    def effect(conn: Connection, envelope: Envelope) -> None:
        conn.exec_driver_sql("INSERT INTO seen VALUES ('x')")

    worker = ConsumerWorker(
        engine=engine,
        bus=bus,
        consumer=IdempotentConsumer("wake-consumer"),
        topics=[TOPIC],
        effect=effect,
        batch_size=batch_size,
        dedup_retention=None,
    )
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
    release = threading.Event()
    blocked = asyncio.ensure_future(asyncio.to_thread(release.wait, 120.0))
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        await run_until(lambda: bus.committed("wake-consumer", TOPIC) == 5, task, timeout=60.0)
        assert worker.applied == 5
    finally:
        release.set()
        stop.set()
        await blocked
        await asyncio.wait_for(task, timeout=30.0)
