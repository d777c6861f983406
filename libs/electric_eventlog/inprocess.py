"""In-process event bus: the embedded default, with the same interface as Kafka.

Topics are retained in memory (one partition each, so order is total); consumer groups keep
committed offsets; a new group starts at offset zero. Use from one asyncio event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence

from .bus import BatchHandler, Handler, OutgoingMessage, ReceivedMessage


class InProcessBus:
    """An :class:`~electric_eventlog.bus.EventBus` held in memory."""

    def __init__(self) -> None:
        self._logs: dict[str, list[ReceivedMessage]] = {}
        self._offsets: dict[tuple[str, str], int] = {}
        # Replaced on every publish: waiters hold the old one, which publish sets. (A
        # Condition with wait_for timeouts can fail to re-acquire its lock on Python 3.11.)
        self._changed = asyncio.Event()

    async def start(self) -> None:
        """Nothing to connect."""

    async def stop(self) -> None:
        """Nothing to flush."""

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        """Append ``messages`` to their topics and wake the consumers."""
        if messages:
            for message in messages:
                log = self._logs.setdefault(message.topic, [])
                log.append(
                    ReceivedMessage(
                        topic=message.topic,
                        partition=0,
                        offset=len(log),
                        key=message.key,
                        value=message.value,
                        headers=message.headers,
                    )
                )
            changed, self._changed = self._changed, asyncio.Event()
            changed.set()

    def committed(self, group_id: str, topic: str) -> int:
        """The next offset ``group_id`` will read from ``topic``."""
        return self._offsets.get((group_id, topic), 0)

    def end_offset(self, topic: str) -> int:
        """Number of messages in ``topic``."""
        return len(self._logs.get(topic, []))

    async def consume(
        self,
        topics: Sequence[str],
        *,
        group_id: str,
        handler: Handler,
        stop: asyncio.Event,
    ) -> None:
        """Deliver each message to ``handler``; commit its offset after ``handler`` returns."""

        async def one_at_a_time(batch: Sequence[ReceivedMessage]) -> None:
            (message,) = batch
            await handler(message)

        await self.consume_batches(
            topics, group_id=group_id, handler=one_at_a_time, stop=stop, max_batch=1
        )

    async def consume_batches(
        self,
        topics: Sequence[str],
        *,
        group_id: str,
        handler: BatchHandler,
        stop: asyncio.Event,
        max_batch: int = 500,
    ) -> None:
        """Deliver up to ``max_batch`` consecutive messages of a topic to ``handler`` at a
        time; commit their offsets after ``handler`` returns."""
        while not stop.is_set():
            delivered = False
            for topic in topics:
                log = self._logs.get(topic, [])
                while (offset := self.committed(group_id, topic)) < len(log):
                    if stop.is_set():
                        return
                    batch = log[offset : offset + max_batch]
                    await handler(batch)
                    self._offsets[(group_id, topic)] = offset + len(batch)
                    delivered = True
            if not delivered:
                await self._wait_for_change(stop)

    async def _wait_for_change(self, stop: asyncio.Event) -> None:
        # Short timeout: also re-checks ``stop`` without a second waiter task.
        changed = self._changed
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), timeout=0.1)

    async def read_topic(self, topic: str) -> AsyncIterator[ReceivedMessage]:
        """Messages of ``topic`` from offset zero to the end at call time."""
        for message in list(self._logs.get(topic, [])):
            yield message
