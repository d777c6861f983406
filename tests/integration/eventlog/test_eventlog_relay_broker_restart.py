"""Issue 18: the outbox relay stuck after a Kafka restart, reproduced on a real broker.

How it happened: while the broker restarts, the metadata it answers has no leader for some
partitions. aiokafka's idempotent producer then expires the batches waiting for those
partitions (after ``request_timeout_ms``) -- but it assigned their sequence numbers first
(``MessageAccumulator._pop_batch``). Once the broker is back, every later batch for such a
partition starts past the sequence the broker expects and is refused with
``OutOfOrderSequenceNumber``, a non-retriable error, forever: the producer is unusable for that
partition. Each relay retry then re-sent its whole batch: the other partitions' messages were
acknowledged again and again (duplicates on the topic) while the rows stayed unsent and the
relay logged a traceback from ``publish_once`` on every attempt.

The fault is injected where the broker restart shows it to the client: the producer's view of
the cluster reports no leader for one partition for a few seconds (everything else -- the
producer, its sequence numbers, the broker's answers -- is the real thing). The fix: a failed
publish discards the producer (the next one gets a new producer id, sequences from zero),
messages are acknowledged one by one and only acknowledged rows are marked sent (in stream
order), and a publish has a deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import pytest
from electric_eventlog import ANY, EventStore, OutboxRelay, decode_envelope, unsent_count
from electric_eventlog.kafka import KafkaBus, ensure_topics
from google.protobuf import wrappers_pb2
from sqlalchemy import Engine

pytestmark = pytest.mark.integration

STREAMS = 24
PER_STREAM = 25
BATCH = 100
FAULT_S = 3.0


def _unsent(engine: Engine, topic: str) -> int:
    with engine.connect() as conn:
        return unsent_count(conn, topic)


def _fill(engine: Engine, store: EventStore, first: int, count: int) -> None:
    for s in range(STREAMS):
        with engine.begin() as conn:
            events = [wrappers_pb2.StringValue(value=f"{s}:{first + k}") for k in range(count)]
            store.append(conn, f"stream-{s}", ANY, events)


def _no_leader_for(producer: Any, topic: str, partition: int) -> Callable[[], None]:
    """Make ``producer`` see no leader for ``topic``/``partition`` (as during a broker
    restart); returns the function that ends the fault."""
    cluster = producer.client.cluster
    real = cluster.leader_for_partition

    def leader(tp: Any) -> Any:
        if tp.topic == topic and tp.partition == partition:
            return -1
        return real(tp)

    cluster.leader_for_partition = leader
    return lambda: setattr(cluster, "leader_for_partition", real)


async def test_relay_recovers_after_partitions_lost_their_leader(
    pg_engine: Engine, kafka_bootstrap: str, kafka_service_name: str
) -> None:
    engine = pg_engine
    store = EventStore(engine, producer=kafka_service_name)
    topic = store.topic
    await ensure_topics(kafka_bootstrap, [topic], with_dlq=False)
    bus = KafkaBus(
        kafka_bootstrap,
        client_id="relay-restart-test",
        producer_options={"request_timeout_ms": 1000, "retry_backoff_ms": 50},
    )
    relay = OutboxRelay(engine, bus, topic=topic, batch_size=BATCH, poll_interval=0.01)
    await bus.start()
    _fill(engine, store, 0, 1)
    assert await relay.drain() == STREAMS  # producer id, sequences and metadata established

    _fill(engine, store, 1, PER_STREAM - 1)
    total = STREAMS * PER_STREAM
    end_fault = _no_leader_for(bus._producer, topic, 0)
    stop = asyncio.Event()
    task = asyncio.create_task(relay.run(stop))
    try:
        await asyncio.sleep(FAULT_S)
        end_fault()
        deadline = time.monotonic() + 30
        while (left := await asyncio.to_thread(_unsent, engine, topic)) > 0:
            assert not task.done(), "the relay died"
            assert time.monotonic() < deadline, f"relay stuck after the fault: {left} unsent"
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await task
        await bus.stop()

    on_wire: dict[str, list[int]] = {}
    ids: list[str] = []
    async for message in KafkaBus(kafka_bootstrap, client_id="reader").read_topic(topic):
        env = decode_envelope(message)
        on_wire.setdefault(env.stream_id, []).append(env.stream_version)
        ids.append(env.event_id)
    assert len(set(ids)) == total, "an event is missing from the topic"
    for stream, versions in on_wire.items():
        first_seen = list(dict.fromkeys(versions))
        assert first_seen == list(range(1, PER_STREAM + 1)), f"{stream} out of order"
    duplicates = len(ids) - total
    # Only what was in flight when the fault hit is re-sent: at most one batch per failure
    # of the one partition, never the other partitions' acknowledged messages over and over.
    assert duplicates <= BATCH, f"{duplicates} duplicates"
    print(f"wire={len(ids)} duplicates={duplicates}")
