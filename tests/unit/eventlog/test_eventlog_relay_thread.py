"""``run_on_own_loop`` (``electric_eventlog.relay_thread``) with a bus that records where it
runs: the relay publishes from its own thread and loop, ``stop`` ends it after its pass,
cancellation interrupts a pass that hangs (as it did on the service's loop), and the bus is
started and stopped on the relay's loop. Real Kafka: tests/integration/eventlog."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from electric_eventlog import ANY, EventStore, OutboxRelay, OutgoingMessage, create_engine, migrate
from electric_eventlog.relay_thread import run_on_own_loop
from google.protobuf import wrappers_pb2
from sqlalchemy import Engine

from tests.support.eventually import relay_loop_threads, run_until


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    eng = create_engine(f"sqlite:///{tmp_path / 'relay-thread.db'}")
    migrate(eng)
    yield eng
    eng.dispose()


class RecordingBus:
    """Publishes into a list; ``hang`` makes every publish wait forever."""

    def __init__(self, *, hang: bool = False) -> None:
        self.hang = hang
        self.published: list[OutgoingMessage] = []
        self.threads: set[str] = set()
        self.started = self.stopped = False

    async def start(self) -> None:
        self.threads.add(threading.current_thread().name)
        self.started = True

    async def stop(self) -> None:
        self.threads.add(threading.current_thread().name)
        self.stopped = True

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        self.threads.add(threading.current_thread().name)
        if self.hang:
            await asyncio.Event().wait()
        self.published.extend(messages)


def _append(store: EventStore, n: int) -> None:
    for i in range(n):
        store.append_in_new_tx("s", ANY, [wrappers_pb2.StringValue(value=str(i))])


async def test_the_relay_publishes_from_its_own_loop_and_stop_ends_it(engine: Engine) -> None:
    store = EventStore(engine, producer="threaded")
    service_bus, own = RecordingBus(), RecordingBus()
    relay = OutboxRelay(engine, service_bus)  # type: ignore[arg-type]
    store.on_commit(relay.notify)
    stop = asyncio.Event()
    task = asyncio.create_task(run_on_own_loop(relay, lambda: own, stop))  # type: ignore[arg-type,return-value]
    await run_until(lambda: relay._loop is not None, task, timeout=30.0)
    assert relay._loop is not asyncio.get_running_loop()
    await asyncio.to_thread(_append, store, 7)  # woken by the commits, from another thread
    await run_until(lambda: len(own.published) == 7, task, timeout=30.0)
    assert [m.key for m in own.published] == [b"s"] * 7
    assert own.threads == {"outbox-relay-loop"} and not service_bus.published
    stop.set()
    await asyncio.wait_for(task, timeout=30)
    assert own.started and own.stopped and relay.bus is service_bus
    assert not relay_loop_threads()


async def test_cancelling_interrupts_a_hanging_pass_and_joins_the_thread(engine: Engine) -> None:
    store = EventStore(engine, producer="threaded")
    _append(store, 3)
    service_bus, own = RecordingBus(), RecordingBus(hang=True)
    relay = OutboxRelay(engine, service_bus, publish_timeout=600.0)  # type: ignore[arg-type]
    stop = asyncio.Event()
    task = asyncio.create_task(run_on_own_loop(relay, lambda: own, stop))  # type: ignore[arg-type,return-value]
    await run_until(
        lambda: "outbox-relay-loop" in own.threads and relay._loop is not None, task, timeout=30.0
    )
    await asyncio.sleep(0.2)  # the pass now waits for acknowledgements that never come
    stop.set()  # a stop waits for the pass (up to publish_timeout) ...
    await asyncio.sleep(0.2)
    assert not task.done()
    task.cancel()  # ... cancellation does not (the host cancels its tasks at shutdown)
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=30)
    assert task.cancelled()
    assert own.stopped and relay.bus is service_bus and not relay_loop_threads()
    with engine.connect() as conn:  # nothing was marked sent: the next relay sends them
        from electric_eventlog import unsent_count

        assert unsent_count(conn) == 3


async def test_a_failure_of_the_relays_loop_is_raised_here(engine: Engine) -> None:
    relay = OutboxRelay(engine, RecordingBus())  # type: ignore[arg-type]

    def no_bus() -> RecordingBus:
        raise ConnectionError("no broker configured")

    with pytest.raises(ConnectionError, match="no broker configured"):
        await asyncio.wait_for(run_on_own_loop(relay, no_bus, asyncio.Event()), timeout=30)  # type: ignore[arg-type]
    assert not relay_loop_threads()
