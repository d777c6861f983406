"""Over real Kafka: a ConsumerWorker's default de-dup retention follows its topic's
retention (issue 18). Our service topics keep every message, so every record is kept; on a
topic that deletes by time, records older than retention + segment + check interval + the
relay margin are purged while the worker runs, and never the effects."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from electric_eventlog import (
    ANY,
    ConsumerWorker,
    EventStore,
    IdempotentConsumer,
    OutboxRelay,
)
from electric_eventlog.dedup_retention import CHECK_INTERVAL_MS, RELAY_MARGIN
from electric_eventlog.kafka import KafkaBus, ensure_topics
from electric_eventlog.store import utc_now
from google.protobuf import wrappers_pb2
from sqlalchemy import Engine, text

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000


async def test_service_topics_kept_forever_keep_every_record(
    pg_engine: Engine, kafka_bootstrap: str, kafka_service_name: str
) -> None:
    store = EventStore(pg_engine, producer=kafka_service_name)
    await ensure_topics(kafka_bootstrap, [store.topic])  # retention.ms=-1, as the services'
    bus = KafkaBus(kafka_bootstrap, client_id=kafka_service_name)
    worker = ConsumerWorker(
        engine=pg_engine,
        bus=bus,
        consumer=IdempotentConsumer(f"{kafka_service_name}-c"),
        topics=[store.topic],
        effect=lambda conn, env: None,
    )
    assert worker.dedup_retention == "topic"  # the default
    assert await worker.resolve_dedup_retention() is None


async def test_records_older_than_the_topic_can_redeliver_are_purged(
    pg_engine: Engine, kafka_bootstrap: str, kafka_service_name: str
) -> None:
    store = EventStore(pg_engine, producer=kafka_service_name)
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        configs = {"retention.ms": str(HOUR_MS), "segment.ms": str(HOUR_MS // 6)}
        await admin.create_topics([NewTopic(store.topic, 1, 1, topic_configs=configs)])
    finally:
        await admin.close()
    with pg_engine.begin() as conn:
        conn.execute(text("CREATE TABLE effects (event_id TEXT PRIMARY KEY)"))
    for n in range(5):
        store.append_in_new_tx(f"s-{n}", ANY, [wrappers_pb2.StringValue(value=str(n))])
    bus = KafkaBus(kafka_bootstrap, client_id=kafka_service_name)
    await bus.start()
    try:
        assert await OutboxRelay(pg_engine, bus).drain() == 5
        # Records stamped 3 days ago (the consumer's clock): older than the safe retention.
        old = IdempotentConsumer(
            f"{kafka_service_name}-old", clock=lambda: utc_now() - timedelta(days=3)
        )
        worker = ConsumerWorker(
            engine=pg_engine,
            bus=bus,
            consumer=old,
            topics=[store.topic],
            effect=lambda conn, env: conn.execute(
                text("INSERT INTO effects VALUES (:e)"), {"e": env.event_id}
            ),
            purge_interval=0.2,
        )
        want = timedelta(milliseconds=HOUR_MS + HOUR_MS // 6 + CHECK_INTERVAL_MS) + RELAY_MARGIN
        assert await worker.resolve_dedup_retention() == want
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        deadline = time.monotonic() + 60
        try:
            while worker.applied < 5 or worker.purged < 5:
                assert not task.done(), task
                assert time.monotonic() < deadline, (worker.applied, worker.purged)
                await asyncio.sleep(0.1)
        finally:
            stop.set()
            await task
    finally:
        await bus.stop()
    with pg_engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM effects")).scalar_one() == 5
        left = conn.execute(text("SELECT count(*) FROM eventlog_applied")).scalar_one()
    assert left == 0, "records older than the safe retention stayed"

    # A record younger than the retention stays (the purge deletes by age only).
    fresh = IdempotentConsumer(f"{kafka_service_name}-fresh")
    with pg_engine.begin() as conn:
        conn.execute(
            text("INSERT INTO eventlog_applied VALUES (:c, 'e1', 's-0', 1, 'applied', :at)"),
            {"c": fresh.name, "at": utc_now() - want + timedelta(minutes=5)},
        )
        assert fresh.purge(conn, before=utc_now() - want) == 0
