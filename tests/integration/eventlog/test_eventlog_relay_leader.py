"""On PostgreSQL only one relay per store/topic publishes at a time (session advisory lock)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from electric_eventlog import ANY, EventStore, InProcessBus, OutboxRelay
from google.protobuf import wrappers_pb2
from sqlalchemy import Engine

pytestmark = pytest.mark.integration


async def test_second_relay_waits_for_the_first(pg_engine: Engine) -> None:
    engine = pg_engine
    store = EventStore(engine, producer="leader")
    for i in range(40):
        store.append_in_new_tx(f"s-{i % 4}", ANY, [wrappers_pb2.StringValue(value=str(i))] * 5)
    bus = InProcessBus()
    first, second = (OutboxRelay(engine, bus, batch_size=10) for _ in range(2))
    stop_first, stop_second = asyncio.Event(), asyncio.Event()
    task_first = asyncio.create_task(first.run(stop_first))
    # The second starts once the first publishes (so it holds the lock): a fixed head start
    # could pass on a loaded machine before the first relay ran at all.
    await _until(lambda: first.published > 0, "the first relay publishing")
    task_second = asyncio.create_task(second.run(stop_second))
    # Counted by the relays, not the bus: a relay counts a batch a moment after the bus has
    # it (CI: the bus at 200 while the first relay had counted 190).
    await _until(lambda: first.published + second.published >= 200, "200 published")
    assert (first.published, second.published) == (200, 0)
    assert bus.end_offset(store.topic) == 200
    stop_first.set()
    await task_first
    store.append_in_new_tx("s-0", ANY, [wrappers_pb2.StringValue(value="late")])
    # The waiting relay takes over once the lock is released.
    await _until(lambda: second.published > 0, "the second relay taking over")
    stop_second.set()
    await task_second
    assert second.published == 1 and bus.end_offset(store.topic) == 201


async def _until(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Wait for ``condition`` (a loaded machine is slow: a generous bound, polled often)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"no {what} within {timeout} s"
        await asyncio.sleep(0.02)
