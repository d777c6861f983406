"""The final outbox drain of a stopping instance publishes only if no other instance of the
service is the active relay (issue 17, item 5: two relays publishing the same rows at once
would send every row twice, in an order neither chose)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from electric_eventlog import ANY, EventStore, InProcessBus, OutboxRelay, create_engine, migrate
from google.protobuf import wrappers_pb2
from sqlalchemy import Engine

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


@pytest.fixture
def engine(fresh_pg_url: str) -> Iterator[Engine]:
    e = create_engine(fresh_pg_url)
    migrate(e)
    yield e
    e.dispose()


async def test_final_drain_defers_to_the_active_relay_pg(engine: Engine) -> None:
    store = EventStore(engine, producer="twin")
    bus = InProcessBus()
    active, stopping = (OutboxRelay(engine, bus, topic=store.topic) for _ in range(2))
    stop = asyncio.Event()
    task = asyncio.create_task(active.run(stop))
    try:
        for _ in range(100):  # the active relay holds the lock once it published something
            store.append_in_new_tx("s-0", ANY, [wrappers_pb2.StringValue(value="x")])
            await asyncio.sleep(0.05)
            if active.published:
                break
        assert active.published
        # Rows written now are the active relay's to publish; the stopping one stays out.
        store.append_in_new_tx("s-1", ANY, [wrappers_pb2.StringValue(value="y")] * 5)
        assert await stopping.final_drain() == 0
        for _ in range(100):
            if bus.end_offset(store.topic) == active.published and active.published >= 6:
                break
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await task
    assert stopping.published == 0
    assert bus.end_offset(store.topic) == active.published  # each row once
    # With no active relay left, the final drain publishes what is unsent.
    store.append_in_new_tx("s-2", ANY, [wrappers_pb2.StringValue(value="z")] * 3)
    assert await stopping.final_drain() == 3
    assert bus.end_offset(store.topic) == active.published + 3
