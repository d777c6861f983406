"""Issue 18 bounded resources in the event log: per-message acknowledgements in the relay,
sent outbox rows purged after a retention window (never unsent ones, hash chains intact),
consumer de-duplication records purged after theirs."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import (
    ANY,
    ConsumerWorker,
    EventStore,
    IdempotentConsumer,
    InProcessBus,
    OutboxRelay,
    create_engine,
    decode_envelope,
    migrate,
    schema,
    unsent_count,
    verify,
)
from electric_eventlog.bus import OutgoingMessage, ReceivedMessage
from electric_eventlog.outbox_relay import PartlyPublishedError, deliverable
from google.protobuf import wrappers_pb2
from sqlalchemy import Engine, func, select, text

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    eng = create_engine(f"sqlite:///{tmp_path / 'log.db'}")
    migrate(eng)
    yield eng
    eng.dispose()


def _append(engine: Engine, store: EventStore, stream: str, n: int) -> None:
    with engine.begin() as conn:
        store.append(conn, stream, ANY, [wrappers_pb2.StringValue(value=str(i)) for i in range(n)])


def _env(stream: str, position: int) -> Envelope:
    return Envelope(stream_id=stream, global_position=position)


def test_deliverable_keeps_each_stream_in_order() -> None:
    batch = [("t", _env("a", 1)), ("t", _env("b", 2)), ("t", _env("a", 3)), ("u", _env("a", 4))]
    boom = RuntimeError("no ack")
    # a@1 failed: a@3 (same topic and stream) must wait; b and the other topic's a go.
    assert deliverable(batch, [boom, None, None, None]) == [("t", 2), ("u", 4)]
    assert deliverable(batch, [None] * 4) == [("t", 1), ("t", 2), ("t", 3), ("u", 4)]
    assert deliverable(batch, [None, boom, None, boom]) == [("t", 1), ("t", 3)]


class FlakyBus(InProcessBus):
    """Acknowledges every message except those whose stream is in ``refuse``."""

    def __init__(self) -> None:
        super().__init__()
        self.refuse: set[str] = set()
        self.sent: list[str] = []

    async def publish_each(
        self, messages: Sequence[OutgoingMessage], *, timeout: float | None = None
    ) -> list[BaseException | None]:
        results: list[BaseException | None] = []
        for m in messages:
            if m.key.decode() in self.refuse:
                results.append(ConnectionError("partition without leader"))
            else:
                await self.publish([m])
                self.sent.append(m.key.decode())
                results.append(None)
        return results


async def test_relay_marks_only_acknowledged_rows(engine: Engine) -> None:
    store = EventStore(engine, producer="bounds")
    for stream in ("a", "b", "c"):
        _append(engine, store, stream, 3)
    bus = FlakyBus()
    relay = OutboxRelay(engine, bus, topic=store.topic, batch_size=100)
    bus.refuse = {"b"}
    with pytest.raises(PartlyPublishedError):
        await relay.publish_once()
    with engine.connect() as conn:
        assert unsent_count(conn, store.topic) == 3  # b's three rows only
    assert relay.published == 6
    bus.refuse = set()
    assert await relay.publish_once() == 3
    assert bus.sent == ["a"] * 3 + ["c"] * 3 + ["b"] * 3  # nothing acknowledged is re-sent
    with engine.connect() as conn:
        assert unsent_count(conn, store.topic) == 0


async def test_relay_without_any_ack_raises_the_bus_error(engine: Engine) -> None:
    store = EventStore(engine, producer="bounds")
    _append(engine, store, "a", 2)
    bus = FlakyBus()
    bus.refuse = {"a"}
    relay = OutboxRelay(engine, bus, topic=store.topic)
    with pytest.raises(ConnectionError):
        await relay.publish_once()
    assert relay.published == 0


def _outbox_rows(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(schema.outbox)).scalar_one())


async def test_sent_rows_purged_after_retention_never_unsent(engine: Engine) -> None:
    now = [T0]
    store = EventStore(engine, producer="bounds")
    bus = InProcessBus()
    relay = OutboxRelay(
        engine, bus, topic=store.topic, clock=lambda: now[0], sent_retention=timedelta(hours=24)
    )
    _append(engine, store, "old", 4)
    assert await relay.drain() == 4  # sent at T0
    now[0] = T0 + timedelta(hours=20)
    _append(engine, store, "new", 3)
    assert await relay.drain() == 3  # sent at T0+20h
    _append(engine, store, "pending", 2)  # never sent
    with engine.begin() as conn:  # an old unsent row: must survive any purge
        conn.execute(text("UPDATE eventlog_outbox SET created_at = :t"), {"t": T0 - timedelta(7)})
    assert _outbox_rows(engine) == 9

    assert relay.purge(T0 + timedelta(hours=23)) == 0  # nothing sent 24 h ago yet
    assert relay.purge(T0 + timedelta(hours=25)) == 4  # the T0 rows
    assert _outbox_rows(engine) == 5
    assert relay.purge(T0 + timedelta(days=30)) == 3  # the T0+20h rows; unsent stay
    assert _outbox_rows(engine) == 2
    with engine.connect() as conn:
        assert unsent_count(conn, store.topic) == 2
        report = verify(conn)  # the events and their hash chains are untouched
        assert report.ok and report.events_checked == 9
    assert relay.purged == 7
    assert await relay.drain() == 2
    assert [decode_envelope(m).stream_id for m in bus._logs[store.topic]][-2:] == ["pending"] * 2


async def test_purge_only_touches_its_topic_and_can_be_off(engine: Engine) -> None:
    store = EventStore(engine, producer="bounds")
    other = EventStore(engine, producer="other")
    _append(engine, store, "s", 2)
    _append(engine, other, "o", 2)
    bus = InProcessBus()
    mine = OutboxRelay(engine, bus, topic=store.topic, clock=lambda: T0)
    await mine.drain()
    await OutboxRelay(engine, bus, topic=other.topic, clock=lambda: T0).drain()
    keep = OutboxRelay(engine, bus, topic=store.topic, sent_retention=None)
    assert keep.purge(T0 + timedelta(days=30)) == 0
    assert mine.purge(T0 + timedelta(days=30)) == 2
    assert _outbox_rows(engine) == 2  # the other topic's sent rows stay


async def test_running_relay_purges_on_its_interval(engine: Engine) -> None:
    store = EventStore(engine, producer="bounds")
    _append(engine, store, "s", 3)
    now = [T0]
    relay = OutboxRelay(
        engine,
        InProcessBus(),
        topic=store.topic,
        clock=lambda: now[0],
        sent_retention=timedelta(seconds=1),
        purge_interval=0.05,
        poll_interval=0.01,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(relay.run(stop))
    while relay.published < 3:
        await asyncio.sleep(0.01)
    now[0] = T0 + timedelta(seconds=5)
    for _ in range(200):
        if relay.purged == 3:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await task
    assert relay.purged == 3 and _outbox_rows(engine) == 0


def _received(env: Envelope) -> ReceivedMessage:
    return ReceivedMessage(
        topic="t", partition=0, offset=0, key=env.stream_id.encode(), value=b"", headers=()
    )


def test_dedup_records_purged_per_consumer_by_age(engine: Engine) -> None:
    when = [T0]
    mine = IdempotentConsumer("mine", clock=lambda: when[0])
    theirs = IdempotentConsumer("theirs", clock=lambda: when[0])
    envs = [Envelope(event_id=f"e{i}", stream_id="s", stream_version=i + 1) for i in range(4)]
    with engine.begin() as conn:
        for env in envs[:2]:
            assert mine.apply(conn, env) and theirs.apply(conn, env)
        when[0] = T0 + timedelta(days=3)
        for env in envs[2:]:
            assert mine.apply(conn, env)
    with engine.begin() as conn:
        assert mine.purge(conn, before=T0 + timedelta(days=1)) == 2
    with engine.begin() as conn:
        assert not mine.is_applied(conn, "e0") and mine.is_applied(conn, "e2")
        assert theirs.is_applied(conn, "e0")  # another consumer's records are its own
        # What was forgotten would apply again: that is the bound documented for the purge.
        assert mine.apply(conn, envs[0])


async def test_worker_purges_old_dedup_records_while_running(engine: Engine) -> None:
    ancient = datetime.now(UTC) - timedelta(days=30)
    old = IdempotentConsumer("w", clock=lambda: ancient)
    with engine.begin() as conn:
        old.apply(conn, Envelope(event_id="ancient", stream_id="s", stream_version=1))
    worker = ConsumerWorker(
        engine=engine,
        bus=InProcessBus(),
        consumer=IdempotentConsumer("w"),
        topics=["t"],
        effect=lambda conn, env: None,
        dedup_retention=timedelta(days=7),
        purge_interval=0.05,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    for _ in range(200):
        if worker.purged:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await task
    assert worker.purged == 1
    with engine.connect() as conn:
        assert not IdempotentConsumer("w").is_applied(conn, "ancient")
