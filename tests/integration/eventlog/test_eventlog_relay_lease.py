"""The relay's leadership is a lease on PostgreSQL: a frozen holder loses it (issue 17 "Left"
4, issue 18's SIGSTOP fault), a live one keeps it, and a resumed one stops publishing."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
from electric_eventlog import (
    ANY,
    EventStore,
    InProcessBus,
    OutboxRelay,
    create_engine,
    migrate,
    unsent_count,
)
from electric_eventlog.kafka import ensure_topics
from electric_eventlog.relay_lease import RelayLease
from google.protobuf import wrappers_pb2
from sqlalchemy import Engine

pytestmark = pytest.mark.integration

KEY = 7_171_717


@pytest.fixture
def engine(fresh_pg_url: str) -> Iterator[Engine]:
    eng = create_engine(fresh_pg_url)
    migrate(eng)
    yield eng
    eng.dispose()


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> float:
    """Seconds until ``predicate`` held; fails after ``timeout``."""
    start = time.monotonic()
    while not predicate():
        assert time.monotonic() - start < timeout, f"timed out waiting for {what}"
        time.sleep(0.05)
    return time.monotonic() - start


def test_a_holder_that_falls_silent_loses_the_lease_to_the_next(engine: Engine) -> None:
    holder = RelayLease(engine, KEY, lease_seconds=1.0)
    waiter = RelayLease(engine, KEY, lease_seconds=1.0)
    assert holder.try_acquire()
    try:
        # With its heartbeat running, the holder keeps the lock well past the lease.
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            assert not waiter.try_acquire()
            time.sleep(0.2)
        assert holder.confirm() and holder.lost == 0
        # Silence the heartbeat without telling the server: what a frozen process does.
        holder._stop_heartbeat.set()
        assert holder._heartbeat is not None
        holder._heartbeat.join()
        took = wait_for(waiter.try_acquire, 30, "the server to end the silent session")
        assert took < 30
        assert not holder.confirm(), "the silent holder still believes it holds the lock"
        assert holder.lost == 1 and not holder.held
        # Releasing a lost lease is harmless and does not touch the new holder's lock.
        holder.release()
        assert waiter.confirm()
        assert not RelayLease(engine, KEY, lease_seconds=1.0).try_acquire()
    finally:
        holder.release()
        waiter.release()
    assert RelayLease(engine, KEY, lease_seconds=1.0).try_acquire()  # released for good


def append(store: EventStore, count: int, label: str) -> None:
    for i in range(count):
        store.append_in_new_tx(f"s-{i % 5}", ANY, [wrappers_pb2.StringValue(value=f"{label}{i}")])


async def test_a_sigstopped_relay_process_hands_over_after_its_lease(
    engine: Engine, fresh_pg_url: str, kafka_bootstrap: str, kafka_service_name: str
) -> None:
    store = EventStore(engine, producer=kafka_service_name)
    topic = store.topic
    await ensure_topics(kafka_bootstrap, [topic])

    def unsent() -> int:
        with engine.connect() as conn:
            return unsent_count(conn, topic)

    append(store, 40, "a")
    # 5 s, not 2: the live second relay's heartbeat (every lease / 4, a thread of its own)
    # must not starve for a whole lease on a loaded 2-core machine, or it loses the lease
    # to the resumed relay, correctly, and this test's "keeps publishing" fails (seen in a
    # CI run beside a package install and mypy).
    lease_s = 5.0
    frozen = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "electric_eventlog.relay",
            "--database-url",
            fresh_pg_url,
            "--bootstrap",
            kafka_bootstrap,
            "--topic",
            topic,
            "--lease-seconds",
            str(lease_s),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    bus = InProcessBus()
    second = OutboxRelay(engine, bus, topic=topic, lease_seconds=lease_s)
    stop = asyncio.Event()
    task: asyncio.Task[None] | None = None
    try:
        await asyncio.to_thread(wait_for, lambda: unsent() == 0, 90, "the first relay")
        os.kill(frozen.pid, signal.SIGSTOP)
        try:
            append(store, 30, "b")
            task = asyncio.create_task(second.run(stop))
            start = time.monotonic()
            while second.published < 30:
                assert time.monotonic() - start < 60, "no relay took over the frozen one"
                assert not task.done(), task
                await asyncio.sleep(0.05)
            took = time.monotonic() - start
            assert unsent() == 0
        finally:
            os.kill(frozen.pid, signal.SIGCONT)
        # Resumed, the first relay finds its lease gone and waits its turn; the second
        # keeps publishing.
        append(store, 20, "c")
        start = time.monotonic()
        while second.published < 50:
            assert time.monotonic() - start < 60, "the second relay stopped publishing"
            await asyncio.sleep(0.05)
        await asyncio.sleep(lease_s)  # time for the resumed relay to notice
    finally:
        stop.set()
        if task is not None:
            await task
        frozen.send_signal(signal.SIGTERM)
        _, stderr = frozen.communicate(timeout=30)
    assert "relay.lease_lost" in stderr, stderr[-2000:]
    assert bus.end_offset(topic) == 50  # everything the frozen relay did not send, once
    print(f"take-over after SIGSTOP: {took:.1f} s (lease {lease_s} s)")
