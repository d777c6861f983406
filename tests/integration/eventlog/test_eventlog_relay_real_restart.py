"""Issue 18 on a real broker: the outbox relay keeps publishing through a Kafka kill -9 and
restart, and afterwards every event is on the topic, each stream in order, with at most a
few re-sent batches as duplicates.

A private broker (``deploy/kafka.sh`` with its own directory and loopback ports) is killed
and restarted, so the shared broker of the other tests is never disturbed. ``slow``: the
JVM starts twice (about a minute on a loaded machine); run with
``pytest -m slow tests/integration/eventlog/test_eventlog_relay_real_restart.py``. The
deterministic reproduction of the stuck relay is test_eventlog_relay_broker_restart.py.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from electric_eventlog import ANY, EventStore, OutboxRelay, decode_envelope, unsent_count
from electric_eventlog.kafka import KafkaBus, ensure_topics
from google.protobuf import wrappers_pb2
from sqlalchemy import Engine

from tests.support.ports import free_port

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
STREAMS = 40
BATCH = 200


class PrivateKafka:
    """One KRaft broker of our own, driven through deploy/kafka.sh."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.env = {
            **os.environ,
            "ELECTRIC_KAFKA_DIR": str(directory),
            "KAFKA_PORT": str(self.port),
            "KAFKA_CONTROLLER_PORT": str(free_port()),
            "KAFKA_JMX_EXPORTER": "0",
            "KAFKA_HEAP": "256m",
        }
        self.pid_file = directory / "kafka.pid"
        self.bootstrap = f"127.0.0.1:{self.port}"

    def _script(self, command: str) -> None:
        subprocess.run(
            ["bash", str(ROOT / "deploy" / "kafka.sh"), command],
            env=self.env,
            check=True,
            capture_output=True,
            timeout=180,
        )

    def up(self) -> None:
        self._script("up")

    def kill(self) -> None:
        """kill -9 the broker (no clean shutdown)."""
        pid = int(self.pid_file.read_text().strip())
        os.kill(pid, signal.SIGKILL)
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        self.pid_file.unlink(missing_ok=True)

    def down(self) -> None:
        self._script("down")


@pytest.fixture
def private_kafka(tmp_path: Path) -> Iterator[PrivateKafka]:
    broker = PrivateKafka(tmp_path / "kafka")
    broker.up()
    try:
        yield broker
    finally:
        broker.down()


def _unsent(engine: Engine, topic: str) -> int:
    with engine.connect() as conn:
        return unsent_count(conn, topic)


def _fill(engine: Engine, store: EventStore, rounds: int, tag: str) -> None:
    for r in range(rounds):
        with engine.begin() as conn:
            for s in range(STREAMS):
                store.append(conn, f"s-{s}", ANY, [wrappers_pb2.StringValue(value=f"{tag}{r}")])


async def test_relay_publishes_through_a_broker_kill_and_restart(
    pg_engine: Engine, private_kafka: PrivateKafka
) -> None:
    engine = pg_engine
    store = EventStore(engine, producer="restart")
    topic = store.topic
    await ensure_topics(private_kafka.bootstrap, [topic], with_dlq=False)
    _fill(engine, store, 25, "a")  # 1,000 events
    bus = KafkaBus(
        private_kafka.bootstrap,
        client_id="relay-real-restart",
        producer_options={"request_timeout_ms": 3000, "retry_backoff_ms": 100},
    )
    relay = OutboxRelay(engine, bus, topic=topic, batch_size=BATCH, poll_interval=0.01)
    await bus.start()
    stop = asyncio.Event()
    task = asyncio.create_task(relay.run(stop))
    try:
        while relay.published < 2 * BATCH:
            assert not task.done()
            await asyncio.sleep(0.01)
        await asyncio.to_thread(private_kafka.kill)
        await asyncio.to_thread(_fill, engine, store, 25, "b")  # written while Kafka is away
        await asyncio.sleep(5)  # longer than request_timeout_ms: waiting batches expire
        await asyncio.to_thread(private_kafka.up)
        deadline = time.monotonic() + 90
        while (left := await asyncio.to_thread(_unsent, engine, topic)) > 0:
            assert not task.done(), "the relay died"
            assert time.monotonic() < deadline, f"relay stuck after the restart: {left} unsent"
            await asyncio.sleep(0.2)
    finally:
        stop.set()
        await task
        await bus.stop()

    total = 50 * STREAMS
    on_wire: dict[str, list[int]] = {}
    ids: list[str] = []
    async for message in KafkaBus(private_kafka.bootstrap).read_topic(topic):
        env = decode_envelope(message)
        on_wire.setdefault(env.stream_id, []).append(env.stream_version)
        ids.append(env.event_id)
    assert len(set(ids)) == total, "an event is missing from the topic"
    for stream, versions in on_wire.items():
        assert list(dict.fromkeys(versions)) == list(range(1, 51)), f"{stream} out of order"
    duplicates = len(ids) - total
    assert duplicates <= 3 * BATCH, f"{duplicates} duplicates"
    print(f"wire={len(ids)} duplicates={duplicates} published={relay.published}")
