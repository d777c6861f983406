"""Kafka implementation of :class:`~electric_eventlog.bus.EventBus` (aiokafka), and topics.

Producer: idempotent (``enable_idempotence=True``, ``acks="all"``), so broker-side retries
neither duplicate nor reorder within a partition. Consumer: offsets committed manually,
after the handler returned for the messages of a partition batch.

Namespace: a bus created with ``namespace="ns"`` talks to Kafka topics and consumer groups
named ``ns.<name>`` while its callers keep using the plain names (``electric.table.events``,
``table.tournaments``): published, consumed and replayed topics and group ids are prefixed
on the way out and received messages carry the plain topic name again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from aiokafka import (
    AIOKafkaConsumer,
    AIOKafkaProducer,
    ConsumerRebalanceListener,
    TopicPartition,
)
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import CommitFailedError, IllegalStateError, KafkaError

from .bus import BatchHandler, Handler, OutgoingMessage, ReceivedMessage
from .topics import RETENTION_CONFIG, dlq_topic_for, namespaced, partitions_for

log = logging.getLogger(__name__)

_TOPIC_ALREADY_EXISTS = 36
#: What one fetch may bring per partition and in all. aiokafka's defaults (1 MiB a
#: partition, 50 MiB) make a lagging consumer of a 12-partition topic hold a 12 MiB fetch
#: response (a copy of the socket's read buffer) for as long as it works through it: its RSS
#: followed its lag (docs/chaos.md, soak). 256 KiB is still ~250 table events a partition.
CONSUMER_FETCH_LIMITS: dict[str, Any] = {
    "max_partition_fetch_bytes": 256 * 1024,
    "fetch_max_bytes": 4 * 1024 * 1024,
}
#: Longest wait for a discarded producer to close.
_STOP_TIMEOUT_S = 5.0


def _outcome(future: asyncio.Future[Any]) -> BaseException | None:
    """None when ``future`` (one message's delivery) was acknowledged, else the reason."""
    if not future.done():
        return TimeoutError("no acknowledgement before the publish deadline")
    if future.cancelled():
        return asyncio.CancelledError()
    return future.exception()


@contextlib.asynccontextmanager
async def _running(consumer: AIOKafkaConsumer) -> AsyncIterator[AIOKafkaConsumer]:
    """``consumer`` started, and stopped however the block ends. A cancel that lands while
    ``start`` joins the group (a shutdown during a rebalance) used to skip the stop: the
    consumer's coordinator, fetcher and connection tasks outlived their host, and cancelling
    them at loop close once hung a CI run for 10 minutes. The stop is shielded from a second
    cancel for the same reason (a half-stopped consumer keeps its tasks)."""
    try:
        await consumer.start()
        yield consumer
    finally:
        stopping = asyncio.ensure_future(consumer.stop())
        try:
            await asyncio.shield(stopping)
        except asyncio.CancelledError:
            await stopping  # finish the stop, then let the cancel through
            raise


def _received(record: Any, namespace: str = "") -> ReceivedMessage:
    topic = record.topic
    if namespace:
        topic = topic.removeprefix(f"{namespace}.")
    return ReceivedMessage(
        topic=topic,
        partition=record.partition,
        offset=record.offset,
        key=record.key or b"",
        value=record.value or b"",
        headers=tuple((k, bytes(v)) for k, v in (record.headers or ())),
        timestamp_ms=record.timestamp,
    )


class KafkaBus:
    """An :class:`~electric_eventlog.bus.EventBus` over Apache Kafka."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        client_id: str = "electric",
        producer_options: dict[str, Any] | None = None,
        consumer_options: dict[str, Any] | None = None,
        namespace: str = "",
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.client_id = client_id
        self.namespace = namespace
        self._producer_options = {"linger_ms": 5, **(producer_options or {})}
        self._consumer_options = {**CONSUMER_FETCH_LIMITS, **(consumer_options or {})}
        self._producer: AIOKafkaProducer | None = None
        #: Rebalance listeners by (plain) group id (:meth:`set_rebalance_listener`).
        self._listeners: dict[str, ConsumerRebalanceListener] = {}
        self._group_options: dict[str, dict[str, Any]] = {}

    def set_rebalance_listener(
        self,
        group_id: str,
        listener: ConsumerRebalanceListener,
        *,
        options: dict[str, Any] | None = None,
    ) -> None:
        """Have :meth:`consume` as ``group_id`` subscribe with ``listener``: its callbacks
        are awaited inside each rebalance (the table service's partition ownership).
        ``options``: consumer options of that group only (e.g. shorter session and
        heartbeat timeouts for a failover in seconds, docs/scaling.md)."""
        self._listeners[group_id] = listener
        self._group_options[group_id] = dict(options or {})

    def kafka_name(self, name: str) -> str:
        """The name of topic/group ``name`` on the broker (prefixed by the namespace)."""
        return namespaced(self.namespace, name)

    async def start(self) -> None:
        """Start the idempotent producer (idempotent call)."""
        if self._producer is not None:
            return
        producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap_servers,
            client_id=self.client_id,
            enable_idempotence=True,
            acks="all",
            **self._producer_options,
        )
        await producer.start()
        self._producer = producer

    async def stop(self) -> None:
        """Flush and stop the producer."""
        if self._producer is not None:
            producer, self._producer = self._producer, None
            await producer.stop()

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        """Send all ``messages`` (in order) and wait for every acknowledgement."""
        for error in await self.publish_each(messages):
            if error is not None:
                raise error

    async def publish_each(
        self, messages: Sequence[OutgoingMessage], *, timeout: float | None = None
    ) -> list[BaseException | None]:
        """Send ``messages`` in order and wait (at most ``timeout`` s) for their acks.

        One result per message: ``None`` = acknowledged, else why not. After any failure the
        producer is discarded and the next publish starts a new one (new producer id,
        sequence numbers from zero): an idempotent producer whose batch expired unsent
        (a partition without leader while the broker restarts) has assigned that batch's
        sequence numbers, and the broker then refuses every later batch of the partition
        with ``OutOfOrderSequenceNumber``, forever (issue 18, docs/chaos.md).
        """
        if self._producer is None:
            await self.start()
        producer = self._producer
        assert producer is not None
        futures: list[asyncio.Future[Any]] = []
        refused: BaseException | None = None
        try:
            # send() only enqueues; enqueue everything first so batches fill, then await acks.
            for m in messages:
                futures.append(
                    await producer.send(
                        self.kafka_name(m.topic), value=m.value, key=m.key, headers=list(m.headers)
                    )
                )
        except Exception as exc:  # buffer full past request_timeout_ms, producer failed
            refused = exc
        if futures:
            await asyncio.wait(futures, timeout=timeout)
        results: list[BaseException | None] = [_outcome(f) for f in futures] + [refused] * (
            len(messages) - len(futures)
        )
        if any(r is not None for r in results):
            await self._discard(producer, next(r for r in results if r is not None))
            for f in futures:  # failed by the discard: retrieve, so asyncio does not warn
                if f.done() and not f.cancelled():
                    f.exception()
        return results

    async def _discard(self, producer: Any, error: BaseException) -> None:
        """Drop ``producer`` after a failed publish: fail what it still holds, close it."""
        if self._producer is producer:
            self._producer = None
        log.warning(
            "kafka.producer_discarded",
            extra={"client_id": self.client_id, "error": f"{type(error).__name__}: {error}"},
        )
        # Fail every batch it holds (else stop() flushes them: an idempotent producer retries
        # forever), so nothing of it is delivered later and stop() returns at once.
        with contextlib.suppress(Exception):
            producer._message_accumulator.fail_all(KafkaError("producer discarded"))
        with contextlib.suppress(Exception):
            await asyncio.wait_for(producer.stop(), timeout=_STOP_TIMEOUT_S)

    async def consume(
        self,
        topics: Sequence[str],
        *,
        group_id: str,
        handler: Handler,
        stop: asyncio.Event,
    ) -> None:
        """Consume ``topics`` as ``group_id``; commit after ``handler`` per partition batch."""

        async def each(records: Sequence[ReceivedMessage]) -> None:
            for record in records:
                await handler(record)

        await self.consume_batches(topics, group_id=group_id, handler=each, stop=stop)

    async def consume_batches(
        self,
        topics: Sequence[str],
        *,
        group_id: str,
        handler: BatchHandler,
        stop: asyncio.Event,
        max_batch: int = 500,
    ) -> None:
        """Consume ``topics`` as ``group_id``: ``handler`` gets each partition's polled
        records at once (at most ``max_batch``); commit after it returned."""
        listener = self._listeners.get(group_id)
        names = [self.kafka_name(t) for t in topics]
        consumer = AIOKafkaConsumer(
            *(() if listener else names),
            bootstrap_servers=self.bootstrap_servers,
            client_id=self.client_id,
            group_id=self.kafka_name(group_id),
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            **{**self._consumer_options, **self._group_options.get(group_id, {})},
        )
        if listener is not None:  # subscribed before start: the first assignment calls it
            bind = getattr(listener, "bind", None)
            if bind is not None:  # the listener reads the group generation off the consumer
                bind(consumer)
            consumer.subscribe(topics=names, listener=listener)
        async with _running(consumer):
            while not stop.is_set():
                batches = await consumer.getmany(timeout_ms=200, max_records=max_batch)
                for tp, records in batches.items():
                    await handler([_received(r, self.namespace) for r in records])
                    try:
                        await consumer.commit({tp: records[-1].offset + 1})
                    except (CommitFailedError, IllegalStateError):
                        # Partition moved to another member mid-batch (IllegalStateError:
                        # already revoked here when the batch ends): it will redeliver, and
                        # the idempotent consumer skips what was applied.
                        log.warning(
                            "kafka.commit_failed",
                            extra={"topic": tp.topic, "partition": tp.partition},
                        )

    async def read_topic(self, topic: str) -> AsyncIterator[ReceivedMessage]:
        """Every message of ``topic`` from offset zero to the end offsets at call time."""
        physical = self.kafka_name(topic)
        partitions = await topic_partitions(self.bootstrap_servers, physical)
        tps = [TopicPartition(physical, p) for p in partitions]
        if not tps:
            return
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap_servers,
            client_id=f"{self.client_id}-replay",
            group_id=None,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        async with _running(consumer):
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            remaining = {tp for tp in tps if ends[tp] > 0}
            while remaining:
                batches = await consumer.getmany(*remaining, timeout_ms=500)
                for tp, records in batches.items():
                    for record in records:
                        if record.offset < ends[tp]:
                            yield _received(record, self.namespace)
                    if await consumer.position(tp) >= ends[tp]:
                        remaining.discard(tp)


async def topic_partitions(bootstrap_servers: str, topic: str) -> list[int]:
    """Partition numbers of ``topic`` (empty when it does not exist)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        # Check existence first: a metadata request naming a missing topic makes a broker
        # with auto.create.topics.enable create it (with default, finite retention).
        if topic not in await admin.list_topics():
            return []
        (described,) = await admin.describe_topics([topic])
    finally:
        await admin.close()
    if described["error_code"] != 0:
        return []
    return sorted(p["partition"] for p in described["partitions"])


#: Replication of the topics the platform creates (``ensure_topics``): 1 by default (one
#: local broker); production sets 3 (docs/running.md). With more than one replica the topics
#: get ``min.insync.replicas`` = 2 unless ``ELECTRIC_KAFKA_MIN_INSYNC_REPLICAS`` says
#: otherwise: with ``acks=all`` (the producer's, always) a send is acknowledged only once two
#: brokers hold it, so losing one broker, disk and all, loses nothing acknowledged.
REPLICATION_ENV = "ELECTRIC_KAFKA_REPLICATION_FACTOR"
MIN_INSYNC_ENV = "ELECTRIC_KAFKA_MIN_INSYNC_REPLICAS"


def replication_settings(environ: Mapping[str, str] | None = None) -> tuple[int, int | None]:
    """(replication factor, min.insync.replicas or None) of the topics to create."""
    env = os.environ if environ is None else environ
    factor = int(env.get(REPLICATION_ENV, "").strip() or 1)
    if factor < 1:
        raise ValueError(f"{REPLICATION_ENV} must be >= 1, got {factor}")
    text = env.get(MIN_INSYNC_ENV, "").strip()
    insync = int(text) if text else (min(2, factor) if factor > 1 else None)
    if insync is not None and not 1 <= insync <= factor:
        raise ValueError(f"{MIN_INSYNC_ENV} must be 1..{factor}, got {insync}")
    return factor, insync


async def ensure_topics(
    bootstrap_servers: str,
    topics: Sequence[str],
    *,
    with_dlq: bool = True,
    replication_factor: int | None = None,
    namespace: str = "",
) -> list[str]:
    """Create missing ``topics`` (and their ``.dlq``) with unlimited retention.

    Partition counts come from :data:`electric_eventlog.topics.PARTITIONS` (by the plain
    name). With a ``namespace`` the topics are created as ``<namespace>.<topic>``. Existing
    topics are left alone. Returns the (broker) names created. Replication: the argument,
    else :func:`replication_settings` (``ELECTRIC_KAFKA_REPLICATION_FACTOR``).
    """
    factor, insync = replication_settings()
    if replication_factor is not None:
        factor = replication_factor
        insync = min(2, factor) if factor > 1 else None
    configs = dict(RETENTION_CONFIG)
    if insync is not None:
        configs["min.insync.replicas"] = str(insync)
    plain = list(topics) + ([dlq_topic_for(t) for t in topics] if with_dlq else [])
    partitions = {namespaced(namespace, t): partitions_for(t) for t in plain}
    wanted = list(partitions)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [t for t in dict.fromkeys(wanted) if t not in existing]
        if not missing:
            return []
        response = await admin.create_topics(
            [
                NewTopic(
                    name=t,
                    num_partitions=partitions[t],
                    replication_factor=factor,
                    topic_configs=dict(configs),
                )
                for t in missing
            ]
        )
        for name, code, *_ in response.topic_errors:
            if code not in (0, _TOPIC_ALREADY_EXISTS):
                raise RuntimeError(f"creating topic {name} failed with Kafka error {code}")
        return missing
    finally:
        await admin.close()


def group_generation(consumer: AIOKafkaConsumer) -> int | None:
    """The consumer group generation of ``consumer``'s current assignment (None before it
    joined). aiokafka keeps it on its group coordinator and has no public accessor; read
    inside ``on_partitions_assigned`` it is the generation of that assignment (the
    coordinator sets it from the JoinGroup answer before it calls the listener)."""
    coordinator = getattr(consumer, "_coordinator", None)
    generation = getattr(coordinator, "generation", None)
    return generation if isinstance(generation, int) and generation > 0 else None


async def commit_under_generation(consumer: AIOKafkaConsumer, topic: str) -> bool:
    """Whether the group coordinator accepts a commit of ``consumer``'s assigned partitions
    of ``topic`` (their committed offsets, unchanged) under its current generation: True
    proves the generation is the group's current one (a member of an older generation gets
    ``CommitFailedError``/``IllegalStateError``). Nothing moves: each offset is committed as
    it was (or as the consumer's position where nothing was committed yet)."""
    offsets = {}
    try:
        for tp in consumer.assignment():
            if tp.topic != topic:
                continue
            committed = await consumer.committed(tp)
            offsets[tp] = committed if committed is not None else await consumer.position(tp)
        if not offsets:
            return False
        await consumer.commit(offsets)
    except (CommitFailedError, IllegalStateError, KafkaError) as exc:
        log.warning("kafka.generation_not_current", extra={"error": str(exc)})
        return False
    return True
