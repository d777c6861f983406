"""The event bus interface (Kafka or in-process) and envelope <-> message helpers.

Services and the relay talk to :class:`EventBus` only, so the embedded runner (in-process
bus) and production (Kafka) run the same code. Semantics every implementation keeps:

* ``publish`` returns once every message is durably accepted; messages with the same key
  keep their order.
* ``consume`` delivers each message of the topics to ``handler`` and commits the group's
  offset only after ``handler`` returned (at-least-once; a crash redelivers). A new group
  starts at offset zero. If ``handler`` raises, ``consume`` stops without committing.
  ``consume_batches`` is the same with a handler of several messages of one partition.
* ``read_topic`` yields a topic from offset zero to its current end (replay, audit).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from electric.eventlog.v1.envelope_pb2 import Envelope

#: Kafka headers / bus headers: (name, value) pairs, like aiokafka's.
Headers = tuple[tuple[str, bytes], ...]

CONTENT_TYPE = b"application/x-protobuf; messageType=electric.eventlog.v1.Envelope"


@dataclass(frozen=True)
class OutgoingMessage:
    """A message to publish. ``key`` decides the partition (events: the stream id)."""

    topic: str
    key: bytes
    value: bytes
    headers: Headers = ()


@dataclass(frozen=True)
class ReceivedMessage:
    """A delivered message with its coordinates in the log."""

    topic: str
    partition: int
    offset: int
    key: bytes
    value: bytes
    headers: Headers = ()
    #: The record's timestamp on Kafka (ms since the epoch; the producer's send time with
    #: the topics' default CreateTime); None on the in-process bus.
    timestamp_ms: int | None = None

    def header(self, name: str) -> bytes | None:
        """The first header called ``name``, if any."""
        for key, value in self.headers:
            if key == name:
                return value
        return None


Handler = Callable[[ReceivedMessage], Awaitable[None]]
#: Takes consecutive messages of one partition, in offset order.
BatchHandler = Callable[[Sequence[ReceivedMessage]], Awaitable[None]]


class EventBus(Protocol):
    """Publish/subscribe over retained, partitioned logs (Kafka or :class:`InProcessBus`)."""

    async def start(self) -> None:
        """Connect (idempotent)."""

    async def stop(self) -> None:
        """Flush and disconnect (idempotent)."""

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        """Publish ``messages``; returns when all are acknowledged (acks=all on Kafka)."""

    async def consume(
        self,
        topics: Sequence[str],
        *,
        group_id: str,
        handler: Handler,
        stop: asyncio.Event,
    ) -> None:
        """Deliver messages of ``topics`` to ``handler`` until ``stop`` is set."""

    async def consume_batches(
        self,
        topics: Sequence[str],
        *,
        group_id: str,
        handler: BatchHandler,
        stop: asyncio.Event,
        max_batch: int = 500,
    ) -> None:
        """Like :meth:`consume`, but ``handler`` takes up to ``max_batch`` consecutive
        messages of one partition at a time (what one poll returned); their offsets are
        committed after it returned for all of them."""

    def read_topic(self, topic: str) -> AsyncIterator[ReceivedMessage]:
        """Every message of ``topic`` from offset zero up to its end at call time."""
        ...


def envelope_message(topic: str, envelope: Envelope) -> OutgoingMessage:
    """The bus message for ``envelope``: key = stream id, value = serialised envelope."""
    return OutgoingMessage(
        topic=topic,
        key=envelope.stream_id.encode(),
        value=envelope.SerializeToString(deterministic=True),
        headers=(
            ("content-type", CONTENT_TYPE),
            ("event-id", envelope.event_id.encode()),
            ("event-type", envelope.event_type.encode()),
            ("stream-version", str(envelope.stream_version).encode()),
            ("producer", envelope.producer.encode()),
        ),
    )


def decode_envelope(message: ReceivedMessage) -> Envelope:
    """Parse the envelope carried by ``message`` (raises ``DecodeError`` when it is not one)."""
    envelope = Envelope()
    envelope.ParseFromString(message.value)
    return envelope
