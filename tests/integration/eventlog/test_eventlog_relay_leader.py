"""On PostgreSQL only one relay per store/topic publishes at a time (session advisory lock)."""

from __future__ import annotations

import asyncio

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
    await asyncio.sleep(0.3)
    task_second = asyncio.create_task(second.run(stop_second))
    for _ in range(200):
        if bus.end_offset(store.topic) >= 200:
            break
        await asyncio.sleep(0.05)
    assert (first.published, second.published) == (200, 0)
    stop_first.set()
    await task_first
    store.append_in_new_tx("s-0", ANY, [wrappers_pb2.StringValue(value="late")])
    for _ in range(100):  # the waiting relay takes over once the lock is released
        if second.published:
            break
        await asyncio.sleep(0.05)
    stop_second.set()
    await task_second
    assert second.published == 1 and bus.end_offset(store.topic) == 201
