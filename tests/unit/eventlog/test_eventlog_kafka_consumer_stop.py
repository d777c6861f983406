"""A Kafka consumer the bus started is stopped however its task ends: cancelled while it
joins the group, or cancelled again while it stops. A consumer left running keeps its
coordinator, fetcher and connection tasks after its host stopped; cancelling those at loop
close hung a CI run for 10 minutes (the table ownership test, a host stopped mid-rebalance).
No broker: the aiokafka consumer is replaced by a recording fake."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest
from electric_eventlog import kafka
from electric_eventlog.bus import ReceivedMessage


class FakeConsumer:
    """Starts (joins) only when ``joined`` is set; its stop takes a moment."""

    made: ClassVar[list[FakeConsumer]] = []

    def __init__(self, *topics: str, **options: Any) -> None:
        self.joined = asyncio.Event()
        self.starting = asyncio.Event()
        self.stopping = asyncio.Event()
        self.stopped = False
        FakeConsumer.made.append(self)

    def subscribe(self, topics: list[str], listener: Any) -> None:
        pass

    async def start(self) -> None:
        self.starting.set()
        await self.joined.wait()

    async def getmany(self, **_: Any) -> dict[Any, list[Any]]:
        await asyncio.sleep(0.01)
        return {}

    async def stop(self) -> None:
        self.stopping.set()
        await asyncio.sleep(0.05)
        self.stopped = True


@pytest.fixture
def fake_consumers(monkeypatch: pytest.MonkeyPatch) -> list[FakeConsumer]:
    FakeConsumer.made = []
    monkeypatch.setattr(kafka, "AIOKafkaConsumer", FakeConsumer)
    return FakeConsumer.made


async def _nothing(records: list[ReceivedMessage]) -> None:
    pass


def _consume(bus: kafka.KafkaBus) -> asyncio.Task[None]:
    return asyncio.create_task(
        bus.consume_batches(
            ["electric.table.events"], group_id="g", handler=_nothing, stop=asyncio.Event()
        )
    )


def test_a_consumer_cancelled_while_joining_is_stopped(fake_consumers: list[FakeConsumer]) -> None:
    async def scenario() -> None:
        task = _consume(kafka.KafkaBus("127.0.0.1:1"))
        while not fake_consumers or not fake_consumers[0].starting.is_set():
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert fake_consumers[0].stopped

    asyncio.run(scenario())


def test_a_second_cancel_during_the_stop_does_not_cut_it_short(
    fake_consumers: list[FakeConsumer],
) -> None:
    async def scenario() -> None:
        task = _consume(kafka.KafkaBus("127.0.0.1:1"))
        while not fake_consumers:
            await asyncio.sleep(0)
        consumer = fake_consumers[0]
        consumer.joined.set()
        await asyncio.sleep(0.05)  # polling
        task.cancel()
        await consumer.stopping.wait()
        task.cancel()  # e.g. the host's stop, then the event loop's close
        with pytest.raises(asyncio.CancelledError):
            await task
        assert consumer.stopped

    asyncio.run(scenario())
