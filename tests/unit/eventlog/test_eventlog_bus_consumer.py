"""Outbox relay, idempotent consumers, dead letters and replay over the in-process bus."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import (
    ANY,
    ConsumerWorker,
    EventStore,
    IdempotentConsumer,
    InProcessBus,
    NewEvent,
    OutboxRelay,
    OutgoingMessage,
    create_engine,
    decode_envelope,
    migrate,
    replay_topic,
    unsent_count,
)
from google.protobuf import any_pb2, wrappers_pb2
from sqlalchemy import Connection, Engine, text

from tests.support.eventually import run_until

TOPIC = "electric.testsvc.events"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    eng = create_engine(f"sqlite:///{tmp_path / 'svc.db'}")
    migrate(eng)
    with eng.begin() as conn:
        conn.execute(text("CREATE TABLE effects (event_id TEXT, value TEXT)"))
    yield eng
    eng.dispose()


def count_effects(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT event_id, count(*) FROM effects GROUP BY event_id"))
        return {row[0]: row[1] for row in rows}


def record_effect(conn: Connection, envelope: Envelope) -> None:
    value = wrappers_pb2.StringValue()
    envelope.payload.Unpack(value)
    if value.value == "poison":
        raise ValueError("cannot apply a poison event")
    conn.execute(
        text("INSERT INTO effects (event_id, value) VALUES (:e, :v)"),
        {"e": envelope.event_id, "v": value.value},
    )


async def test_relay_publishes_in_order_and_consumer_applies_once(engine: Engine) -> None:
    store = EventStore(engine, producer="testsvc")
    for i in range(30):
        store.append_in_new_tx(f"s-{i % 3}", ANY, [wrappers_pb2.StringValue(value=str(i))])
    bus = InProcessBus()
    relay = OutboxRelay(engine, bus, batch_size=7)
    assert await relay.drain() == 30
    with engine.connect() as conn:
        assert unsent_count(conn) == 0
    # A crash between publish and mark re-sends: simulate by publishing everything again.
    with engine.begin() as conn:
        conn.execute(text("UPDATE eventlog_outbox SET sent_at = NULL WHERE global_position > 20"))
    assert await relay.drain() == 10
    assert bus.end_offset(TOPIC) == 40

    seen = [decode_envelope(m) async for m in bus.read_topic(TOPIC)]
    first_seen: dict[str, list[int]] = {}
    for env in seen:
        versions = first_seen.setdefault(env.stream_id, [])
        if env.stream_version not in versions:
            versions.append(env.stream_version)
    assert all(v == sorted(v) == list(range(1, len(v) + 1)) for v in first_seen.values())

    worker = ConsumerWorker(
        engine=engine,
        bus=bus,
        consumer=IdempotentConsumer("test.effects"),
        topics=[TOPIC],
        effect=record_effect,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    await run_until(lambda: bus.committed("test.effects", TOPIC) == 40, task)
    stop.set()
    await task
    effects = count_effects(engine)
    assert len(effects) == 30 and set(effects.values()) == {1}
    assert (worker.applied, worker.skipped) == (30, 10)

    # Redelivering everything to the same consumer (new group, same ledger): no new effect.
    again = ConsumerWorker(
        engine=engine,
        bus=bus,
        consumer=IdempotentConsumer("test.effects"),
        topics=[TOPIC],
        effect=record_effect,
        group_id="test.effects.replay",
    )
    for message in [m async for m in bus.read_topic(TOPIC)]:
        await again.handle(message)
    assert count_effects(engine) == effects and again.applied == 0


async def test_poison_event_goes_to_dlq_and_consumer_carries_on(engine: Engine) -> None:
    store = EventStore(engine, producer="testsvc")
    for value in ["ok-1", "poison", "ok-2"]:
        store.append_in_new_tx("p-1", ANY, [wrappers_pb2.StringValue(value=value)])
    bus = InProcessBus()
    await OutboxRelay(engine, bus).drain()
    await bus.publish([OutgoingMessage(TOPIC, b"garbage", b"\xff\xff not an envelope")])
    worker = ConsumerWorker(
        engine=engine,
        bus=bus,
        consumer=IdempotentConsumer("test.dlq"),
        topics=[TOPIC],
        effect=record_effect,
        retry_delay=0.001,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    await run_until(lambda: bus.committed("test.dlq", TOPIC) == 4, task)
    stop.set()
    await task
    with engine.connect() as conn:
        good = {e.event_id for e in store.read_stream(conn, "p-1") if e.stream_version != 2}
    assert set(count_effects(engine)) == good
    dlq = [m async for m in bus.read_topic(f"{TOPIC}.dlq")]
    assert len(dlq) == 2 and worker.dead_lettered == 2
    poison = decode_envelope(dlq[0])
    assert poison.stream_version == 2
    assert b"ValueError: cannot apply a poison event" in (dlq[0].header("dlq-reason") or b"")
    assert dlq[0].header("dlq-attempts") == b"3"
    assert dlq[0].header("dlq-source-offset") == b"1"
    assert (dlq[1].header("dlq-reason") or b"").startswith(b"undecodable envelope")
    with engine.connect() as conn:
        reasons = conn.execute(text("SELECT reason FROM eventlog_dead_letters ORDER BY id")).all()
        assert len(reasons) == 2
        # Redelivery of the poison event is skipped, not dead-lettered twice.
        assert IdempotentConsumer("test.dlq").is_applied(conn, poison.event_id)


async def test_unknown_type_passes_through_bus_and_replay(engine: Engine) -> None:
    store = EventStore(engine, producer="testsvc")
    unknown = any_pb2.Any(type_url="type.googleapis.com/electric.future.v9.Thing", value=b"\x01")
    store.append_in_new_tx("u-1", ANY, [NewEvent(payload=unknown), wrappers_pb2.StringValue()])
    bus = InProcessBus()
    await OutboxRelay(engine, bus).drain()
    replayed: list[Envelope] = []
    assert await replay_topic(bus, TOPIC, replayed.append) == 2
    assert replayed[0].payload == unknown
    assert store.decode(replayed[0]) == unknown
    assert store.decode(replayed[1]) == wrappers_pb2.StringValue()
    with engine.connect() as conn:
        assert [e.hash for e in store.read_all(conn)] == [e.hash for e in replayed]


def test_apply_records_in_the_callers_transaction(engine: Engine) -> None:
    consumer = IdempotentConsumer("test.tx")
    env = Envelope(event_id="e-1", stream_id="s", stream_version=1)
    with pytest.raises(RuntimeError), engine.begin() as conn:
        assert consumer.apply(conn, env)
        raise RuntimeError("effect failed: both the effect and the record roll back")
    with engine.begin() as conn:
        assert consumer.apply(conn, env)
    with engine.begin() as conn:
        assert not consumer.apply(conn, env)
        assert IdempotentConsumer("other").apply(conn, env)


async def test_transient_failures_retry_until_they_pass(engine: Engine) -> None:
    from sqlalchemy.exc import OperationalError

    store = EventStore(engine, producer="testsvc")
    store.append_in_new_tx("t-1", ANY, [wrappers_pb2.StringValue(value="x")])
    bus = InProcessBus()
    await OutboxRelay(engine, bus).drain()
    failures = [OperationalError("SELECT 1", {}, Exception("db away"))] * 5

    def flaky(conn: Connection, envelope: Envelope) -> None:
        if failures:
            raise failures.pop()
        record_effect(conn, envelope)

    worker = ConsumerWorker(
        engine=engine,
        bus=bus,
        consumer=IdempotentConsumer("test.flaky"),
        topics=[TOPIC],
        effect=flaky,
        max_attempts=2,
        retry_delay=0.001,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    await run_until(lambda: bus.committed("test.flaky", TOPIC) == 1, task)
    stop.set()
    await task
    # Five transient failures > max_attempts, yet no dead letter: transient means "wait".
    assert (worker.applied, worker.dead_lettered) == (1, 0)
    assert len(count_effects(engine)) == 1


async def test_restart_with_a_fresh_in_process_bus_loses_nothing(engine: Engine) -> None:
    store = EventStore(engine, producer="testsvc")
    for i in range(6):
        store.append_in_new_tx(f"r-{i % 2}", ANY, [wrappers_pb2.StringValue(value=str(i))])
    first_bus = InProcessBus()
    await OutboxRelay(engine, first_bus, batch_size=4).drain()
    worker = ConsumerWorker(
        engine=engine,
        bus=first_bus,
        consumer=IdempotentConsumer("test.restart"),
        topics=[TOPIC],
        effect=record_effect,
    )
    for message in [m async for m in first_bus.read_topic(TOPIC)][:3]:
        await worker.handle(message)  # "crash" after three of six were applied
    second_bus = InProcessBus()  # the process restarted: the in-memory topics are gone
    assert await OutboxRelay(engine, second_bus, batch_size=4).republish_all() == 6
    again = ConsumerWorker(
        engine=engine,
        bus=second_bus,
        consumer=IdempotentConsumer("test.restart"),
        topics=[TOPIC],
        effect=record_effect,
    )
    for message in [m async for m in second_bus.read_topic(TOPIC)]:
        await again.handle(message)
    assert (again.applied, again.skipped) == (3, 3)
    assert len(count_effects(engine)) == 6 and set(count_effects(engine).values()) == {1}


class _FlakyBus(InProcessBus):
    """An in-process bus whose first ``failures`` publishes fail (the broker away)."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.calls = 0

    async def publish(self, messages: Sequence[OutgoingMessage]) -> None:
        self.calls += 1
        if self.failures:
            self.failures -= 1
            raise ConnectionError("broker away")
        await super().publish(messages)


async def test_relay_backs_off_while_the_broker_is_away_then_catches_up(engine: Engine) -> None:
    store = EventStore(engine, producer="testsvc")
    for i in range(5):
        store.append_in_new_tx("s", ANY, [wrappers_pb2.StringValue(value=str(i))])
    bus = _FlakyBus(failures=3)
    relay = OutboxRelay(engine, bus, poll_interval=0.001)
    stop = asyncio.Event()
    task = asyncio.create_task(relay.run(stop))
    await run_until(lambda: bus.end_offset(TOPIC) == 5, task)
    stop.set()
    await task
    assert bus.calls == 4  # three failures, then one batch with all five events
    with engine.connect() as conn:
        assert unsent_count(conn) == 0


async def test_a_stopped_relay_does_not_wait_out_its_backoff(engine: Engine) -> None:
    store = EventStore(engine, producer="testsvc")
    store.append_in_new_tx("s", ANY, [wrappers_pb2.StringValue(value="x")])
    bus = _FlakyBus(failures=1_000)
    relay = OutboxRelay(engine, bus, poll_interval=10.0)  # backoff 20 s after one failure
    stop = asyncio.Event()
    task = asyncio.create_task(relay.run(stop))
    await run_until(lambda: bus.calls >= 1, task)
    stop.set()
    await asyncio.wait_for(task, timeout=2.0)
    assert bus.calls == 1
