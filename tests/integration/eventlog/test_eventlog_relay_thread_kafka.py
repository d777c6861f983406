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

from tests.support.eventually import relay_loop_threads, run_until

pytestmark = pytest.mark.integration


class _Relay:
    """A store on a fresh topic, the service's bus, its relay, and the factory of the
    relay's own bus (noting the thread each was made in)."""

    @classmethod
    async def open(cls, engine: Engine, bootstrap: str, service: str, **options: float) -> _Relay:
        store = EventStore(engine, producer=service)
        await ensure_topics(bootstrap, [store.topic])
        return cls(store, KafkaBus(bootstrap, client_id="service"), bootstrap, options)

    def __init__(
        self, store: EventStore, bus: KafkaBus, bootstrap: str, options: dict[str, float]
    ) -> None:
        self.store, self.service_bus, self._bootstrap = store, bus, bootstrap
        self.relay = OutboxRelay(store.engine, bus, topic=store.topic, **options)  # type: ignore[arg-type]
        self.made_in: list[threading.Thread] = []

    def relay_bus(self) -> KafkaBus:
        self.made_in.append(threading.current_thread())
        return KafkaBus(self._bootstrap, client_id="relay")


async def test_a_relay_on_its_own_loop_publishes_in_order_and_stops(
    pg_engine: Engine, kafka_bootstrap: str, kafka_service_name: str
) -> None:
    setup = await _Relay.open(pg_engine, kafka_bootstrap, kafka_service_name, idle_poll_max=60.0)
    store, service_bus, relay, made_in = setup.store, setup.service_bus, setup.relay, setup.made_in
    store.on_commit(relay.notify)
    stop = asyncio.Event()
    task = asyncio.create_task(run_on_own_loop(relay, setup.relay_bus, stop))
    await run_until(lambda: relay._loop is not None, task, timeout=60.0)
    await asyncio.sleep(1.5)  # idle: the relay waits for a wake-up or its backed-off poll
    for i in range(20):
        await asyncio.to_thread(
            store.append_in_new_tx, f"s-{i % 3}", ANY, [wrappers_pb2.StringValue(value=str(i))]
        )
    await run_until(lambda: relay.published == 20, task, timeout=60.0)
    assert made_in and made_in[0] is not threading.main_thread()
    assert relay.bus is not service_bus  # the relay's own producer while it runs
    stop.set()
    await asyncio.wait_for(task, timeout=60)
    assert relay.bus is service_bus and relay._loop is None
    assert not relay_loop_threads()
    values = []
    async for m in service_bus.read_topic(store.topic):
        values.append(m.key)
    assert len(values) == 20


async def test_a_cancelled_relay_task_stops_its_thread_first(
    pg_engine: Engine, kafka_bootstrap: str, kafka_service_name: str
) -> None:
    # The host cancels its background tasks at shutdown, then runs the final drain.
    setup = await _Relay.open(pg_engine, kafka_bootstrap, kafka_service_name)
    service_bus, relay = setup.service_bus, setup.relay
    task = asyncio.create_task(run_on_own_loop(relay, setup.relay_bus, asyncio.Event()))
    await run_until(lambda: relay._loop is not None, task, timeout=60.0)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=60)
    assert task.cancelled()
    assert not relay_loop_threads() and relay.bus is service_bus
