"""Over real Kafka: a poison event goes to `<topic>.dlq` with its reason, the consumer carries
on, offsets are committed after the effect, and a restart in the same group re-applies
nothing. Also replay of the topic from offset zero."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import (
    ANY,
    ConsumerWorker,
    EventStore,
    IdempotentConsumer,
    OutboxRelay,
    create_engine,
    decode_envelope,
    dlq_topic_for,
    fold_stream,
    migrate,
    replay_topic,
)
from electric_eventlog.kafka import KafkaBus, ensure_topics
from google.protobuf import wrappers_pb2
from sqlalchemy import Connection, Engine, text

pytestmark = pytest.mark.integration


@pytest.fixture
def engine(fresh_pg_url: str) -> Iterator[Engine]:
    eng = create_engine(fresh_pg_url)
    migrate(eng)
    with eng.begin() as conn:
        conn.execute(text("CREATE TABLE effects (event_id TEXT PRIMARY KEY, value TEXT)"))
    yield eng
    eng.dispose()


def effect(conn: Connection, envelope: Envelope) -> None:
    value = wrappers_pb2.StringValue()
    envelope.payload.Unpack(value)
    if value.value.startswith("poison"):
        raise ValueError(f"refusing {value.value}")
    conn.execute(
        text("INSERT INTO effects (event_id, value) VALUES (:e, :v)"),
        {"e": envelope.event_id, "v": value.value},
    )


async def run_worker(worker: ConsumerWorker, done: object, timeout: float = 60) -> None:
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    deadline = time.monotonic() + timeout
    while not done():  # type: ignore[operator]
        if task.done():
            task.result()
        assert time.monotonic() < deadline, "worker did not finish in time"
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # let the offset commit of the last batch happen
    stop.set()
    await task


async def test_poison_to_dlq_and_consumer_carries_on(
    engine: Engine, kafka_bootstrap: str, kafka_service_name: str
) -> None:
    service = kafka_service_name
    store = EventStore(engine, producer=service)
    await ensure_topics(kafka_bootstrap, [store.topic])
    values = ["a", "b", "poison-1", "c", "d"]
    for value in values:
        store.append_in_new_tx("dlq-stream", ANY, [wrappers_pb2.StringValue(value=value)])
    bus = KafkaBus(kafka_bootstrap, client_id=service)
    await bus.start()
    try:
        assert await OutboxRelay(engine, bus).drain() == 5
        consumer = IdempotentConsumer(f"{service}.effects")
        worker = ConsumerWorker(
            engine=engine,
            bus=bus,
            consumer=consumer,
            topics=[store.topic],
            effect=effect,
            retry_delay=0.01,
        )
        await run_worker(worker, lambda: worker.applied + worker.dead_lettered == 5)
        assert (worker.applied, worker.dead_lettered) == (4, 1)
        with engine.connect() as conn:
            applied = conn.execute(text("SELECT value FROM effects ORDER BY value")).scalars()
            assert list(applied) == ["a", "b", "c", "d"]

        dlq = [m async for m in bus.read_topic(dlq_topic_for(store.topic))]
        assert len(dlq) == 1
        assert decode_envelope(dlq[0]).stream_version == 3
        assert dlq[0].header("dlq-reason") == b"ValueError: refusing poison-1"
        assert dlq[0].header("dlq-source-topic") == store.topic.encode()
        assert dlq[0].key == b"dlq-stream"

        # Same group after a restart: offsets were committed, nothing is applied again.
        store.append_in_new_tx("dlq-stream", ANY, [wrappers_pb2.StringValue(value="e")])
        await OutboxRelay(engine, bus).drain()
        again = ConsumerWorker(
            engine=engine, bus=bus, consumer=consumer, topics=[store.topic], effect=effect
        )
        await run_worker(again, lambda: again.applied == 1)
        assert (again.applied, again.skipped, again.dead_lettered) == (1, 0, 0)

        # Replay from offset zero rebuilds the same fold as the store.
        replayed: list[str] = []

        def collect(env: Envelope) -> None:
            value = wrappers_pb2.StringValue()
            env.payload.Unpack(value)
            replayed.append(value.value)

        assert await replay_topic(bus, store.topic, collect) == 6

        def append_value(acc: list[str], env: Envelope) -> list[str]:
            payload = store.decode(env)
            assert isinstance(payload, wrappers_pb2.StringValue)
            return [*acc, payload.value]

        with engine.connect() as conn:
            empty: list[str] = []
            folded, version = fold_stream(conn, store, "dlq-stream", empty, append_value)
        assert replayed == folded == [*values, "e"] and version == 6
    finally:
        await bus.stop()
