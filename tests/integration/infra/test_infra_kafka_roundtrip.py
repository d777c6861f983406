"""Real Kafka round trip with aiokafka: idempotent producer (acks=all) and a group commit."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MESSAGES = 10
FIRST_BATCH = 4


async def _read(consumer: AIOKafkaConsumer, count: int) -> list[tuple[int, bytes, bytes]]:
    out = []
    for _ in range(count):
        record = await asyncio.wait_for(consumer.getone(), timeout=30)
        out.append((record.offset, record.key, record.value))
    return out


def _consumer(bootstrap: str, topic: str, group: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )


async def test_kafka_idempotent_produce_and_group_commit(kafka_bootstrap: str) -> None:
    topic = f"electric.test.roundtrip.{uuid.uuid4().hex[:12]}"
    group = f"electric-test-{uuid.uuid4().hex[:12]}"
    tp = TopicPartition(topic, 0)

    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
        assert topic in await admin.list_topics()

        producer = AIOKafkaProducer(
            bootstrap_servers=kafka_bootstrap, enable_idempotence=True, acks="all"
        )
        await producer.start()
        try:
            offsets = []
            for i in range(MESSAGES):
                meta = await producer.send_and_wait(
                    topic, key=f"k{i}".encode(), value=f"event-{i}".encode()
                )
                offsets.append(meta.offset)
            # The broker granted a producer id: idempotence really is on for this producer.
            assert producer._txn_manager is not None
            assert producer._txn_manager.producer_id >= 0
        finally:
            await producer.stop()
        assert offsets == list(range(MESSAGES))

        first = _consumer(kafka_bootstrap, topic, group)
        await first.start()
        try:
            got = await _read(first, FIRST_BATCH)
            assert got == [(i, f"k{i}".encode(), f"event-{i}".encode()) for i in range(FIRST_BATCH)]
            await first.commit({tp: FIRST_BATCH})
            assert await first.committed(tp) == FIRST_BATCH
        finally:
            await first.stop()

        # A new member of the same group resumes at the committed offset, not at "earliest".
        second = _consumer(kafka_bootstrap, topic, group)
        await second.start()
        try:
            rest = await _read(second, MESSAGES - FIRST_BATCH)
            await second.commit()
            assert await second.committed(tp) == MESSAGES
        finally:
            await second.stop()
        assert [offset for offset, _, _ in rest] == list(range(FIRST_BATCH, MESSAGES))
        assert [value for _, _, value in rest] == [
            f"event-{i}".encode() for i in range(FIRST_BATCH, MESSAGES)
        ]
    finally:
        try:
            await admin.delete_topics([topic])
        finally:
            await admin.close()
