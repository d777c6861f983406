"""Event-path metrics: relay published count, consumer applied/skipped/dead letters and lag
(in-process bus), all in the service host's own registry."""

from __future__ import annotations

import asyncio
from pathlib import Path

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.platform.v1 import events_pb2 as platform_events
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
from electric_eventlog.kafka import KafkaBus
from electric_platform.config import load_config
from electric_platform.eventmetrics import watch_consumers
from electric_platform.eventpath import register_outbox_metrics
from electric_platform.server import ServiceHost
from sqlalchemy import Connection


def _host(tmp_path: Path) -> ServiceHost:
    return ServiceHost(load_config("payout", {"ELECTRIC_VAR_DIR": str(tmp_path)}))


def _sample(host: ServiceHost, name: str, labels: dict[str, str]) -> float | None:
    return host.metrics.registry.get_sample_value(name, labels)


async def test_relay_and_consumer_metrics(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/events.db")
    migrate(engine)
    store = EventStore(engine, producer="payout")
    bus = InProcessBus()
    relay = OutboxRelay(engine, bus, topic=store.topic)
    host = _host(tmp_path)
    register_outbox_metrics(host, engine, store.topic, relay)

    def effect(conn: Connection, envelope: Envelope) -> None:
        if envelope.stream_id == "instance-poison":
            raise ValueError("poison")

    worker = ConsumerWorker(
        engine=engine,
        bus=bus,
        consumer=IdempotentConsumer("test.consumer"),
        topics=[store.topic],
        effect=effect,
        max_attempts=1,
        retry_delay=0,
    )
    watch_consumers(host, worker)
    consumer = {"consumer": "test.consumer"}
    lag = {"consumer": "test.consumer", "topic": store.topic}
    assert _sample(host, "electric_eventlog_consumer_lag", lag) == 0

    for stream in ("instance-a", "instance-b", "instance-poison"):
        store.append_in_new_tx(stream, ANY, [platform_events.ServiceInstanceStarted(service="x")])
    assert _sample(host, "electric_outbox_unsent_events", {}) == 3
    assert await relay.publish_once() == 3
    assert _sample(host, "electric_outbox_unsent_events", {}) == 0
    assert _sample(host, "electric_eventlog_published_total", {"topic": store.topic}) == 3
    assert _sample(host, "electric_eventlog_consumer_lag", lag) == 3

    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    for _ in range(200):
        if bus.committed(worker.group_id, store.topic) == 3:
            break
        await asyncio.sleep(0.01)
    assert _sample(host, "electric_eventlog_consumer_lag", lag) == 0
    assert (
        _sample(host, "electric_eventlog_consumed_total", {**consumer, "outcome": "applied"}) == 2
    )
    assert _sample(host, "electric_eventlog_dead_letters_total", consumer) == 1

    # A redelivery (the in-process bus lost its offsets) is skipped, and counted as such.
    await worker.handle(bus._logs[store.topic][0])
    assert (
        _sample(host, "electric_eventlog_consumed_total", {**consumer, "outcome": "skipped"}) == 1
    )
    stop.set()
    await task
    engine.dispose()


def test_kafka_consumers_start_one_lag_poller(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path}/events.db")
    host = _host(tmp_path)
    bus = KafkaBus("127.0.0.1:1")  # never connected: the poller only runs once the host starts
    workers = [
        ConsumerWorker(
            engine=engine,
            bus=bus,
            consumer=IdempotentConsumer(name),
            topics=["electric.table.events"],
            effect=lambda conn, env: None,
        )
        for name in ("a", "b")
    ]
    watch_consumers(host, workers[0])
    watch_consumers(host, workers[1])
    assert [name for name, _, _ in host._background] == ["consumer-lag"]
    # Until the first poll, Kafka lag is not reported (rather than a made-up 0).
    assert _sample(host, "electric_eventlog_consumer_lag", {"consumer": "a", "topic": "x"}) is None
    engine.dispose()
