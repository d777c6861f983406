"""Prometheus view of a service's event path: relay and consumers (read at scrape time).

One :class:`EventLogCollector` per :class:`~electric_platform.server.ServiceHost` (see
:func:`event_metrics`), registered in the host's own registry. It reads the counters the
event-log objects already keep (``OutboxRelay.published``, ``ConsumerWorker.applied`` /
``skipped`` / ``dead_lettered``), so nothing is added to the write or consume paths:

- ``electric_eventlog_published_total{topic}`` (counter): events this process published
  from its outbox to the bus;
- ``electric_eventlog_consumed_total{consumer, outcome}`` (counter): events handled by a
  consumer, ``outcome`` = ``applied`` (effect committed) or ``skipped`` (a redelivery the
  idempotent consumer had already applied);
- ``electric_eventlog_dead_letters_total{consumer}`` (counter): events sent to ``.dlq``;
- ``electric_eventlog_consumer_lag{consumer, topic}`` (gauge): messages of ``topic`` not yet
  committed by the consumer's group. In-process bus: computed at scrape time. Kafka: polled
  every :data:`KAFKA_LAG_INTERVAL` seconds by a background task of the host (committed group
  offsets against the partitions' end offsets), so it is at most that old.

Labels are bounded: consumer names and topics are fixed by the code (no ids).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Iterator
from typing import Any

from electric_eventlog import ConsumerWorker, InProcessBus, OutboxRelay
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from electric_platform.server import ServiceHost

log = logging.getLogger(__name__)

#: Seconds between two reads of the Kafka consumer-group offsets.
KAFKA_LAG_INTERVAL = 10.0

_collectors: weakref.WeakKeyDictionary[ServiceHost, EventLogCollector] = weakref.WeakKeyDictionary()


class EventLogCollector(Collector):
    """Relay and consumer metrics of one service."""

    def __init__(self) -> None:
        self.relays: dict[str, OutboxRelay | None] = {}
        self.workers: list[ConsumerWorker] = []
        #: Last Kafka lag reading: (consumer, topic) -> messages behind.
        self.kafka_lag: dict[tuple[str, str], int] = {}

    def add_relay(self, topic: str, relay: OutboxRelay | None) -> None:
        """Report ``relay``'s published count under ``topic`` (0 while there is no relay)."""
        self.relays[topic] = relay

    def add_consumer(self, worker: ConsumerWorker) -> None:
        """Report ``worker``'s counts and lag."""
        self.workers.append(worker)

    def collect(self) -> Iterator[Metric]:
        published = CounterMetricFamily(
            "electric_eventlog_published",
            "Events published from the outbox to the bus by this process.",
            labels=["topic"],
        )
        for topic, relay in self.relays.items():
            published.add_metric([topic], float(relay.published if relay else 0))
        consumed = CounterMetricFamily(
            "electric_eventlog_consumed",
            "Events handled by a consumer: applied, or skipped as already applied.",
            labels=["consumer", "outcome"],
        )
        dead = CounterMetricFamily(
            "electric_eventlog_dead_letters",
            "Events a consumer could not apply and sent to the topic's .dlq.",
            labels=["consumer"],
        )
        lag = GaugeMetricFamily(
            "electric_eventlog_consumer_lag",
            "Messages of a topic not yet committed by the consumer's group.",
            labels=["consumer", "topic"],
        )
        for w in self.workers:
            name = w.consumer.name
            consumed.add_metric([name, "applied"], float(w.applied))
            consumed.add_metric([name, "skipped"], float(w.skipped))
            dead.add_metric([name], float(w.dead_lettered))
            for topic in w.topics:
                value = self._lag(w, topic)
                if value is not None:
                    lag.add_metric([name, topic], float(value))
        yield published
        yield consumed
        yield dead
        yield lag

    def lag(self, worker: ConsumerWorker) -> int | None:
        """Messages ``worker`` has not consumed yet, over its topics (None: not known yet,
        e.g. before the first Kafka lag reading)."""
        total = 0
        for topic in worker.topics:
            value = self._lag(worker, topic)
            if value is None:
                return None
            total += value
        return total

    def _lag(self, worker: ConsumerWorker, topic: str) -> int | None:
        bus = worker.bus
        if isinstance(bus, InProcessBus):
            return max(0, bus.end_offset(topic) - bus.committed(worker.group_id, topic))
        return self.kafka_lag.get((worker.consumer.name, topic))

    async def poll_kafka_lag(
        self, bootstrap_servers: str, stop: asyncio.Event, interval: float = KAFKA_LAG_INTERVAL
    ) -> None:
        """Refresh :attr:`kafka_lag` every ``interval`` seconds until ``stop`` is set."""
        from aiokafka import AIOKafkaConsumer
        from aiokafka.admin import AIOKafkaAdminClient

        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
        reader = AIOKafkaConsumer(
            bootstrap_servers=bootstrap_servers, group_id=None, enable_auto_commit=False
        )
        await admin.start()
        try:
            await reader.start()
            try:
                while not stop.is_set():
                    try:
                        self.kafka_lag = await self._read_kafka_lag(admin, reader)
                    except Exception:
                        log.warning("consumer.lag_poll_failed", exc_info=True)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), timeout=interval)
            finally:
                await reader.stop()
        finally:
            await admin.close()

    async def _read_kafka_lag(self, admin: Any, reader: Any) -> dict[tuple[str, str], int]:
        from aiokafka import TopicPartition

        # Broker names: a KafkaBus with a namespace (ELECTRIC_KAFKA_NAMESPACE) prefixes
        # topics and groups; labels keep the plain names.
        def name(w: ConsumerWorker, plain: str) -> str:
            kafka_name = getattr(w.bus, "kafka_name", None)
            return str(kafka_name(plain)) if kafka_name is not None else plain

        topics = sorted({name(w, t) for w in self.workers for t in w.topics})
        existing = set(await admin.list_topics())
        described = await admin.describe_topics([t for t in topics if t in existing])
        partitions = [
            TopicPartition(d["topic"], p["partition"])
            for d in described
            if d["error_code"] == 0
            for p in d["partitions"]
        ]
        ends: dict[Any, int] = await reader.end_offsets(partitions) if partitions else {}
        result: dict[tuple[str, str], int] = {}
        for w in self.workers:
            committed = await admin.list_consumer_group_offsets(name(w, w.group_id))
            for topic in w.topics:
                behind = 0
                for tp, end in ends.items():
                    if tp.topic != name(w, topic):
                        continue
                    meta = committed.get(tp)
                    done = meta.offset if meta is not None and meta.offset >= 0 else 0
                    behind += max(0, end - done)
                result[(w.consumer.name, topic)] = behind
        return result


def event_metrics(host: ServiceHost) -> EventLogCollector:
    """The event-log collector of ``host`` (created and registered on first use)."""
    collector = _collectors.get(host)
    if collector is None:
        collector = _collectors[host] = EventLogCollector()
        host.metrics.registry.register(collector)
    return collector


def watch_consumers(host: ServiceHost, *workers: ConsumerWorker) -> None:
    """Report ``workers``' applied/skipped/dead-letter counts and lag in ``host``'s metrics.

    When a worker consumes from Kafka, the first such call also starts the lag poller as a
    background task of the host.
    """
    from electric_eventlog.kafka import KafkaBus

    collector = event_metrics(host)
    polling = any(isinstance(w.bus, KafkaBus) for w in collector.workers)
    for worker in workers:
        collector.add_consumer(worker)
    kafka = next((w.bus for w in workers if isinstance(w.bus, KafkaBus)), None)
    if kafka is not None and not polling:
        servers = kafka.bootstrap_servers
        host.add_background(
            "consumer-lag",
            lambda: collector.poll_kafka_lag(servers, host.stopping),
            restart=True,
        )
