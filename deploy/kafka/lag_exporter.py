"""Consumer-group lag exporter for Prometheus (deploy/observability.sh starts it).

Debian has no Kafka lag exporter package and the broker's JMX beans do not carry committed
offsets (they live in ``__consumer_offsets``), so this small process asks the broker with
aiokafka (already a dependency of the services) every ``--interval`` seconds:

- every consumer group and its committed offsets (admin API, OffsetFetch),
- the log-end offset of every partition of every topic (ListOffsets),

and serves the last snapshot on ``http://HOST:PORT/metrics`` under the names the widely used
kafka_exporter has, so its dashboards and our panels read the same series:

- ``kafka_consumergroup_current_offset{consumergroup,topic,partition}``
- ``kafka_consumergroup_lag{consumergroup,topic,partition}`` = log end - committed (>= 0)
- ``kafka_consumergroup_lag_sum{consumergroup,topic}``
- ``kafka_topic_partition_current_offset{topic,partition}`` (log-end offset)
- ``kafka_lag_exporter_up`` (1 = the last poll succeeded; 0 = broker unreachable),
  ``kafka_lag_exporter_last_success_timestamp_seconds``, ``kafka_lag_exporter_poll_seconds``.

A failed poll keeps no stale lag: the group series disappear and ``kafka_lag_exporter_up`` goes
to 0 (the KafkaDown alert inhibits the lag alerts then, see deploy/alertmanager).

    .venv/bin/python deploy/kafka/lag_exporter.py --bootstrap 127.0.0.1:9092 --port 9308
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import re
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

LOG = logging.getLogger("lag_exporter")


@dataclass(frozen=True)
class Snapshot:
    """What one poll saw; the collector serves the newest one."""

    ok: bool = False
    last_success: float = 0.0
    poll_seconds: float = 0.0
    end_offsets: dict[tuple[str, int], int] = field(default_factory=dict)
    committed: dict[tuple[str, str, int], int] = field(default_factory=dict)


def lag_of(committed: int, end: int) -> int:
    """Messages the group has not committed yet; never negative (a commit can race the
    end-offset read, or a topic can be truncated)."""
    return max(end - committed, 0)


class LagCollector(Collector):
    """Turns the latest :class:`Snapshot` into metric families at scrape time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._snapshot = Snapshot()

    def update(self, snapshot: Snapshot) -> None:
        with self._lock:
            self._snapshot = snapshot

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            snap = self._snapshot
        up = GaugeMetricFamily("kafka_lag_exporter_up", "1 when the last poll of Kafka succeeded")
        up.add_metric([], 1.0 if snap.ok else 0.0)
        yield up
        last = GaugeMetricFamily(
            "kafka_lag_exporter_last_success_timestamp_seconds",
            "Unix time of the last successful poll (0 = none yet)",
        )
        last.add_metric([], snap.last_success)
        yield last
        took = GaugeMetricFamily("kafka_lag_exporter_poll_seconds", "Duration of the last poll")
        took.add_metric([], snap.poll_seconds)
        yield took
        end = GaugeMetricFamily(
            "kafka_topic_partition_current_offset",
            "Log-end offset of a partition",
            labels=["topic", "partition"],
        )
        for (topic, partition), offset in sorted(snap.end_offsets.items()):
            end.add_metric([topic, str(partition)], float(offset))
        yield end
        current = GaugeMetricFamily(
            "kafka_consumergroup_current_offset",
            "Committed offset of a consumer group on a partition",
            labels=["consumergroup", "topic", "partition"],
        )
        lag = GaugeMetricFamily(
            "kafka_consumergroup_lag",
            "Messages a consumer group has not committed yet on a partition",
            labels=["consumergroup", "topic", "partition"],
        )
        lag_sum = GaugeMetricFamily(
            "kafka_consumergroup_lag_sum",
            "Messages a consumer group has not committed yet on a topic",
            labels=["consumergroup", "topic"],
        )
        sums: dict[tuple[str, str], int] = {}
        for (group, topic, partition), offset in sorted(snap.committed.items()):
            end_offset = snap.end_offsets.get((topic, partition))
            current.add_metric([group, topic, str(partition)], float(offset))
            if end_offset is None:
                continue  # topic deleted since the commit: no lag to speak of
            behind = lag_of(offset, end_offset)
            lag.add_metric([group, topic, str(partition)], float(behind))
            sums[(group, topic)] = sums.get((group, topic), 0) + behind
        for (group, topic), total in sorted(sums.items()):
            lag_sum.add_metric([group, topic], float(total))
        yield current
        yield lag
        yield lag_sum


class Poller:
    """Keeps one admin client and one group-less consumer open between polls."""

    def __init__(self, bootstrap: str, group_filter: re.Pattern[str], timeout_ms: int) -> None:
        self._bootstrap = bootstrap
        self._groups = group_filter
        self._timeout_ms = timeout_ms
        self._admin: AIOKafkaAdminClient | None = None
        self._consumer: AIOKafkaConsumer | None = None

    async def _connect(self) -> tuple[AIOKafkaAdminClient, AIOKafkaConsumer]:
        if self._admin is None or self._consumer is None:
            await self.close()
            admin = AIOKafkaAdminClient(
                bootstrap_servers=self._bootstrap,
                client_id="electric-lag-exporter",
                request_timeout_ms=self._timeout_ms,
            )
            consumer = AIOKafkaConsumer(
                bootstrap_servers=self._bootstrap,
                client_id="electric-lag-exporter",
                group_id=None,
                enable_auto_commit=False,
                request_timeout_ms=self._timeout_ms,
            )
            try:
                await admin.start()
                await consumer.start()
            except BaseException:
                with contextlib.suppress(Exception):
                    await admin.close()
                with contextlib.suppress(Exception):
                    await consumer.stop()
                raise
            self._admin, self._consumer = admin, consumer
        return self._admin, self._consumer

    async def close(self) -> None:
        admin, consumer = self._admin, self._consumer
        self._admin = self._consumer = None
        if admin is not None:
            with contextlib.suppress(Exception):
                await admin.close()
        if consumer is not None:
            with contextlib.suppress(Exception):
                await consumer.stop()

    async def poll(self) -> tuple[dict[tuple[str, int], int], dict[tuple[str, str, int], int]]:
        admin, consumer = await self._connect()
        committed: dict[tuple[str, str, int], int] = {}
        listed = await admin.list_consumer_groups()  # (group id, protocol type) tuples
        groups = sorted({str(e[0]) for e in listed if self._groups.search(str(e[0]))})
        # One OffsetFetch per group, concurrently: a broker with many groups is polled in about
        # the time of one round trip instead of one per group.
        answers = await asyncio.gather(*(admin.list_consumer_group_offsets(g) for g in groups))
        for group, offsets in zip(groups, answers, strict=True):
            for tp, meta in offsets.items():
                if meta.offset >= 0:  # -1: nothing committed on that partition
                    committed[(group, tp.topic, tp.partition)] = int(meta.offset)
        # Fresh metadata from the admin client: the consumer's cached cluster view does not
        # learn about topics created after it started.
        topics = sorted(t for t in await admin.list_topics() if not t.startswith("__"))
        if self._groups.pattern:  # a group filter: only the topics those groups read
            read = {topic for _, topic, _ in committed}
            topics = [t for t in topics if t in read]
        partitions: list[TopicPartition] = []
        if topics:
            for desc in await admin.describe_topics(topics):
                if desc.get("error_code", 0) != 0:
                    continue  # deleted between the two calls
                for part in desc.get("partitions", []):
                    partitions.append(TopicPartition(str(desc["topic"]), int(part["partition"])))
        ends = await consumer.end_offsets(partitions) if partitions else {}
        end_offsets = {(tp.topic, tp.partition): int(off) for tp, off in ends.items()}
        return end_offsets, committed


async def run(args: argparse.Namespace, collector: LagCollector, stop: asyncio.Event) -> None:
    poller = Poller(args.bootstrap, re.compile(args.groups), int(args.timeout * 1000))
    last_success = 0.0
    try:
        while not stop.is_set():
            started = time.monotonic()
            try:
                end_offsets, committed = await asyncio.wait_for(poller.poll(), args.timeout * 2)
                last_success = time.time()
                snapshot = Snapshot(
                    True, last_success, time.monotonic() - started, end_offsets, committed
                )
            except Exception as exc:  # broker down or restarting: report, reconnect next time
                LOG.warning("poll of %s failed: %s", args.bootstrap, exc or type(exc).__name__)
                await poller.close()
                snapshot = Snapshot(False, last_success, time.monotonic() - started)
            collector.update(snapshot)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), args.interval)
    finally:
        await poller.close()


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Kafka consumer-group lag exporter")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092", help="Kafka bootstrap servers")
    parser.add_argument("--host", default="127.0.0.1", help="listen address (loopback)")
    parser.add_argument("--port", type=int, default=9308, help="listen port; 9308")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between polls")
    parser.add_argument("--timeout", type=float, default=10.0, help="Kafka request timeout, s")
    parser.add_argument(
        "--groups",
        default="",
        help="regex: export only matching groups (and only the topics they read; a broker "
        "shared by many clusters answers faster)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    # aiokafka logs every failed connection attempt at ERROR; our own warning says enough.
    logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    registry = CollectorRegistry()
    collector = LagCollector()
    registry.register(collector)
    server, thread = start_http_server(args.port, addr=args.host, registry=registry)
    LOG.info("serving http://%s:%d/metrics for %s", args.host, args.port, args.bootstrap)

    async def _main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await run(args, collector, stop)

    try:
        asyncio.run(_main())
    finally:
        server.shutdown()
        thread.join(5)


if __name__ == "__main__":
    main()
