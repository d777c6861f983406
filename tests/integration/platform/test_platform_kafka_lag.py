"""Over real Kafka: the consumer-lag poller reads the group's committed offsets against the
partitions' end offsets (electric_eventlog_consumer_lag)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from electric_eventlog import ConsumerWorker, IdempotentConsumer, create_engine
from electric_eventlog.bus import OutgoingMessage
from electric_eventlog.kafka import KafkaBus, ensure_topics, topic_partitions
from electric_platform.eventmetrics import EventLogCollector

pytestmark = pytest.mark.integration


async def test_kafka_lag_is_end_offset_minus_committed(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    topic = f"electric-test-lag-{uuid.uuid4().hex[:8]}"
    group = f"lag-group-{uuid.uuid4().hex[:8]}"
    await ensure_topics(kafka_bootstrap, [topic], with_dlq=False)
    bus = KafkaBus(kafka_bootstrap)
    await bus.start()
    try:
        # One key: every message in one partition.
        await bus.publish([OutgoingMessage(topic, b"k", str(i).encode()) for i in range(5)])
    finally:
        await bus.stop()
    engine = create_engine(f"sqlite:///{tmp_path}/x.db")
    worker = ConsumerWorker(
        engine=engine,
        bus=bus,
        consumer=IdempotentConsumer("lag.consumer"),
        topics=[topic],
        effect=lambda conn, env: None,
        group_id=group,
    )
    collector = EventLogCollector()
    collector.add_consumer(worker)
    stop = asyncio.Event()
    poller = asyncio.create_task(collector.poll_kafka_lag(kafka_bootstrap, stop, interval=0.2))
    try:
        key = ("lag.consumer", topic)
        for _ in range(100):
            if collector.kafka_lag.get(key) == 5:
                break
            await asyncio.sleep(0.1)
        assert collector.kafka_lag.get(key) == 5  # the group committed nothing yet

        committer = AIOKafkaConsumer(
            bootstrap_servers=kafka_bootstrap, group_id=group, enable_auto_commit=False
        )
        await committer.start()
        try:
            partitions = await topic_partitions(kafka_bootstrap, topic)
            ends = await committer.end_offsets([TopicPartition(topic, p) for p in partitions])
            (tp,) = [tp for tp, end in ends.items() if end == 5]
            committer.assign([tp])
            await committer.commit({tp: 2})
        finally:
            await committer.stop()
        for _ in range(100):
            if collector.kafka_lag.get(key) == 3:
                break
            await asyncio.sleep(0.1)
        assert collector.kafka_lag.get(key) == 3
        assert {
            s.labels["topic"]: s.value
            for f in collector.collect()
            for s in f.samples
            if f.name == "electric_eventlog_consumer_lag"
        } == {topic: 3}
    finally:
        stop.set()
        await poller
        engine.dispose()
