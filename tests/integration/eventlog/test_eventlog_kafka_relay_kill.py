"""Against real PostgreSQL + Kafka: kill -9 the relay process mid-publishing, restart it, and
check every event is on the topic, in stream order per key, and applied exactly once."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import (
    ANY,
    ConsumerWorker,
    EventStore,
    IdempotentConsumer,
    create_engine,
    decode_envelope,
    migrate,
    unsent_count,
)
from electric_eventlog.kafka import KafkaBus, ensure_topics
from google.protobuf import wrappers_pb2
from sqlalchemy import Connection, Engine, text

pytestmark = pytest.mark.integration

STREAMS = 40
EVENTS = 12_000
RESENT = 300


@pytest.fixture
def engine(fresh_pg_url: str) -> Iterator[Engine]:
    eng = create_engine(fresh_pg_url)
    migrate(eng)
    with eng.begin() as conn:
        conn.execute(text("CREATE TABLE effects (event_id TEXT NOT NULL, stream_id TEXT)"))
    yield eng
    eng.dispose()


def start_relay(url: str, bootstrap: str, topic: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "electric_eventlog.relay",
            "--database-url",
            url,
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--batch-size",
            "200",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def unsent(engine: Engine, topic: str) -> int:
    with engine.connect() as conn:
        return unsent_count(conn, topic)


def wait_for(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def record_effect(conn: Connection, envelope: Envelope) -> None:
    conn.execute(
        text("INSERT INTO effects (event_id, stream_id) VALUES (:e, :s)"),
        {"e": envelope.event_id, "s": envelope.stream_id},
    )


async def test_relay_killed_mid_publish_resumes_without_gaps(
    engine: Engine, fresh_pg_url: str, kafka_bootstrap: str, kafka_service_name: str
) -> None:
    service = kafka_service_name
    store = EventStore(engine, producer=service)
    topic = store.topic
    await ensure_topics(kafka_bootstrap, [topic])
    for i in range(0, EVENTS, 20):  # 20 events per transaction, spread over the streams
        with engine.begin() as conn:
            for j in range(i, i + 20, 4):
                batch = [wrappers_pb2.StringValue(value=f"{j + k}") for k in range(4)]
                store.append(conn, f"stream-{(j // 4) % STREAMS}", ANY, batch)
    assert unsent(engine, topic) == EVENTS

    kills = 0
    for _ in range(2):  # kill twice, each time while rows are still pending
        before = unsent(engine, topic)
        relay = start_relay(fresh_pg_url, kafka_bootstrap, topic)
        wait_for(lambda b=before: unsent(engine, topic) < b - 1000, 90, "relay progress")
        os.kill(relay.pid, signal.SIGKILL)
        relay.wait(10)
        kills += 1
        assert relay.returncode == -signal.SIGKILL
        assert unsent(engine, topic) > 0, "killed too late: nothing left to publish"
    # A kill between "acknowledged" and "marked sent" re-sends the last batch; make sure that
    # path is exercised every run by un-marking the newest sent rows (what such a kill leaves).
    with engine.begin() as conn:
        last_sent = conn.execute(
            text("SELECT max(global_position) FROM eventlog_outbox WHERE sent_at IS NOT NULL")
        ).scalar_one()
        conn.execute(
            text("UPDATE eventlog_outbox SET sent_at = NULL WHERE global_position > :p"),
            {"p": last_sent - RESENT},
        )
    relay = start_relay(fresh_pg_url, kafka_bootstrap, topic)
    try:
        wait_for(lambda: unsent(engine, topic) == 0, 120, "relay to drain the outbox")
    finally:
        relay.send_signal(signal.SIGTERM)
        relay.wait(20)
    assert kills == 2

    with engine.connect() as conn:
        stored = list(store.iter_all(conn))
    assert len(stored) == EVENTS

    bus = KafkaBus(kafka_bootstrap, client_id="killtest")
    on_wire: dict[str, list[int]] = {}
    wire_ids: set[str] = set()
    total = 0
    async for message in bus.read_topic(topic):
        env = decode_envelope(message)
        assert message.key == env.stream_id.encode()
        # The record's Kafka timestamp: when the relay sent it, after the event occurred.
        assert message.timestamp_ms is not None
        assert message.timestamp_ms >= env.occurred_at.ToMilliseconds() - 1_000
        on_wire.setdefault(env.stream_id, []).append(env.stream_version)
        wire_ids.add(env.event_id)
        total += 1
    assert wire_ids == {e.event_id for e in stored}, "an event is missing from the topic"
    for stream, versions in on_wire.items():
        first_seen = list(dict.fromkeys(versions))
        assert first_seen == list(range(1, len(first_seen) + 1)), f"{stream} out of order"
        # Duplicates only re-send a suffix that was already sent (a batch retried whole).
        for a, b in itertools.pairwise(versions):
            assert b == a + 1 or b <= a, f"{stream}: gap {a} -> {b}"
    duplicates = total - EVENTS

    # Consume with the idempotent helper; stop half way (offsets partly uncommitted) and resume.
    consumer = IdempotentConsumer(f"{service}.effects")
    applied = skipped = 0
    for phase in range(2):
        worker = ConsumerWorker(
            engine=engine, bus=bus, consumer=consumer, topics=[topic], effect=record_effect
        )
        await bus.start()
        stop = asyncio.Event()
        task = asyncio.create_task(worker.run(stop))
        target = EVENTS // 2 if phase == 0 else EVENTS
        deadline = time.monotonic() + 120
        while applied + worker.applied < target:
            assert not task.done() or task.result() is None
            assert time.monotonic() < deadline, "consumer too slow"
            await asyncio.sleep(0.05)
        if phase == 1:  # let it also chew through trailing duplicates
            await asyncio.sleep(1.0)
        stop.set()
        await task
        applied += worker.applied
        skipped += worker.skipped
    await bus.stop()
    with engine.connect() as conn:
        counts = conn.execute(text("SELECT count(*), count(DISTINCT event_id) FROM effects")).one()
    assert tuple(counts) == (EVENTS, EVENTS), "an event was applied twice or not at all"
    assert applied == EVENTS
    assert duplicates >= RESENT and skipped >= duplicates
    print(f"kills={kills} wire={total} duplicates={duplicates} consumer_skipped={skipped}")
