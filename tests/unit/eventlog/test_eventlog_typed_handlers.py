"""ConsumerWorker with handlers registered by payload type: each type reaches its handler
once, other types are passed over without a ledger entry, and a handler's after-commit hook
runs only after its transaction committed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
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
    migrate,
)
from google.protobuf import wrappers_pb2
from sqlalchemy import Connection, Engine, text

TOPIC = "electric.typedsvc.events"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    eng = create_engine(f"sqlite:///{tmp_path / 'typed.db'}")
    migrate(eng)
    with eng.begin() as conn:
        conn.execute(text("CREATE TABLE seen (kind TEXT, value TEXT)"))
    yield eng
    eng.dispose()


def _rows(engine: Engine) -> list[tuple[str, str]]:
    with engine.connect() as conn:
        return [(r[0], r[1]) for r in conn.execute(text("SELECT kind, value FROM seen"))]


def _ledger(engine: Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM eventlog_applied")).scalar_one())


async def test_handlers_by_payload_type(engine: Engine) -> None:
    store = EventStore(engine, producer="typedsvc")
    store.append_in_new_tx(
        "s-1",
        ANY,
        [
            wrappers_pb2.StringValue(value="a"),
            wrappers_pb2.Int64Value(value=7),
            wrappers_pb2.BoolValue(value=True),  # no handler: passed over
            wrappers_pb2.StringValue(value="b"),
        ],
    )
    bus = InProcessBus()
    await OutboxRelay(engine, bus).drain()
    worker = ConsumerWorker(
        engine=engine, bus=bus, consumer=IdempotentConsumer("typed"), topics=[TOPIC]
    )
    committed: list[list[tuple[str, str]]] = []

    def on_string(conn: Connection, envelope: Envelope, value: wrappers_pb2.StringValue) -> object:
        conn.execute(text("INSERT INTO seen VALUES ('str', :v)"), {"v": value.value})
        # The hook sees the row: it runs after the commit, reading on another connection.
        return lambda: committed.append(_rows(engine))

    def on_int(conn: Connection, envelope: Envelope, value: wrappers_pb2.Int64Value) -> None:
        conn.execute(text("INSERT INTO seen VALUES ('int', :v)"), {"v": str(value.value)})

    worker.on(wrappers_pb2.StringValue, on_string)  # type: ignore[arg-type]
    worker.on(wrappers_pb2.Int64Value, on_int)
    with pytest.raises(ValueError):
        worker.on(wrappers_pb2.Int64Value, on_int)
    assert worker.handled_types == {"google.protobuf.StringValue", "google.protobuf.Int64Value"}
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while bus.committed("typed", TOPIC) < 4:
        assert loop.time() < deadline
        await asyncio.sleep(0.01)
    stop.set()
    await task
    assert _rows(engine) == [("str", "a"), ("int", "7"), ("str", "b")]
    assert (worker.applied, worker.ignored) == (3, 1)
    assert _ledger(engine) == 3, "the passed-over event left no ledger entry"
    assert committed == [[("str", "a")], [("str", "a"), ("int", "7"), ("str", "b")]]
    # Redelivered: recorded already, no second effect and no hook.
    for message in [m async for m in bus.read_topic(TOPIC)]:
        await worker.handle(message)
    assert len(_rows(engine)) == 3 and worker.skipped == 3 and len(committed) == 2


def test_one_effect_or_typed_handlers_not_both(engine: Engine) -> None:
    worker = ConsumerWorker(
        engine=engine,
        bus=InProcessBus(),
        consumer=IdempotentConsumer("both"),
        topics=[TOPIC],
        effect=lambda conn, env: None,
    )
    with pytest.raises(ValueError):
        worker.on(wrappers_pb2.StringValue, lambda conn, env, v: None)
