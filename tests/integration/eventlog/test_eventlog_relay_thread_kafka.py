"""The outbox relay on a thread of its own, with its own loop and Kafka producer
(``electric_eventlog.relay_thread``, issue 16), on real Kafka: it publishes in order, wakes
on a commit, and stops when asked or cancelled (its producer closed on its own loop). The
stop/cancel/failure semantics with a fake bus: tests/unit/eventlog/test_eventlog_relay_thread.py."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest
from electric_eventlog import ANY, EventStore, OutboxRelay
from electric_eventlog.kafka import KafkaBus, ensure_topics
from electric_eventlog.relay_thread import run_on_own_loop
from google.protobuf import wrappers_pb2
from sqlalchemy import Engine

pytestmark = pytest.mark.integration


def _relay_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "outbox-relay-loop"]


async def _until(predicate: object, task: asyncio.Task[None], timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():  # type: ignore[operator]
        if task.done():
            task.result()
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def test_a_relay_on_its_own_loop_publishes_in_order_and_stops(
    pg_engine: Engine, kafka_bootstrap: str, kafka_service_name: str
) -> None:
    store = EventStore(pg_engine, producer=kafka_service_name)
    await ensure_topics(kafka_bootstrap, [store.topic])
    service_bus = KafkaBus(kafka_bootstrap, client_id="service")
    relay = OutboxRelay(pg_engine, service_bus, topic=store.topic, idle_poll_max=60.0)
    store.on_commit(relay.notify)
    made_in: list[threading.Thread] = []

    def relay_bus() -> KafkaBus:
        made_in.append(threading.current_thread())
        return KafkaBus(kafka_bootstrap, client_id="relay")

    stop = asyncio.Event()
    task = asyncio.create_task(run_on_own_loop(relay, relay_bus, stop))
    await _until(lambda: relay._loop is not None, task)
    await asyncio.sleep(1.5)  # idle: the relay waits for a wake-up or its backed-off poll
    for i in range(20):
        await asyncio.to_thread(
            store.append_in_new_tx, f"s-{i % 3}", ANY, [wrappers_pb2.StringValue(value=str(i))]
        )
    await _until(lambda: relay.published == 20, task)
    assert made_in and made_in[0] is not threading.main_thread()
    assert relay.bus is not service_bus  # the relay's own producer while it runs
    stop.set()
    await asyncio.wait_for(task, timeout=60)
    assert relay.bus is service_bus and relay._loop is None
    assert not _relay_threads()
    values = []
    async for m in service_bus.read_topic(store.topic):
        values.append(m.key)
    assert len(values) == 20


async def test_a_cancelled_relay_task_stops_its_thread_first(
    pg_engine: Engine, kafka_bootstrap: str, kafka_service_name: str
) -> None:
    # The host cancels its background tasks at shutdown, then runs the final drain.
    store = EventStore(pg_engine, producer=kafka_service_name)
    await ensure_topics(kafka_bootstrap, [store.topic])
    service_bus = KafkaBus(kafka_bootstrap, client_id="service")
    relay = OutboxRelay(pg_engine, service_bus, topic=store.topic)

    def relay_bus() -> KafkaBus:
        return KafkaBus(kafka_bootstrap, client_id="relay")

    task = asyncio.create_task(run_on_own_loop(relay, relay_bus, asyncio.Event()))
    await _until(lambda: relay._loop is not None, task)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=60)
    assert task.cancelled()
    assert not _relay_threads() and relay.bus is service_bus
