"""ELECTRIC_KAFKA_NAMESPACE: every topic and consumer group a service uses on Kafka is
prefixed, the defaults are unchanged, and callers keep the plain names.

The Kafka clients are replaced by fakes that record what would reach the broker."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from electric_eventlog import ConsumerWorker, IdempotentConsumer, namespaced, topic_for
from electric_eventlog import kafka as kafka_mod
from electric_eventlog.bus import OutgoingMessage, ReceivedMessage
from electric_platform.config import (
    KAFKA_NAMESPACE,
    SERVICES,
    ConfigError,
    all_env_var_names,
    load_config,
)


def test_namespace_defaults_to_empty_and_keeps_the_plain_names() -> None:
    for service in SERVICES:
        cfg = load_config(service, {})
        assert cfg.kafka_namespace == ""
        assert cfg.kafka_name(cfg.events_topic) == f"electric.{service}.events"
        assert cfg.kafka_name("table.tournaments") == "table.tournaments"
    assert namespaced("", "electric.table.events") == "electric.table.events"


def test_namespace_prefixes_topics_and_groups() -> None:
    env = {"ELECTRIC_KAFKA_NAMESPACE": "run-42"}
    for service in SERVICES:
        cfg = load_config(service, env)
        assert cfg.kafka_namespace == "run-42"
        assert cfg.kafka_name(cfg.events_topic) == f"run-42.electric.{service}.events"
    cfg = load_config("payout", env)
    assert cfg.kafka_name("payout.table-results") == "run-42.payout.table-results"
    assert "ELECTRIC_KAFKA_NAMESPACE" in all_env_var_names()
    assert not KAFKA_NAMESPACE.per_service  # one cluster = one namespace for all services


@pytest.mark.parametrize("bad", ["has space", "a/b", "ü", "x" * 101])
def test_namespace_is_validated(bad: str) -> None:
    with pytest.raises(ConfigError, match="ELECTRIC_KAFKA_NAMESPACE"):
        load_config("table", {"ELECTRIC_KAFKA_NAMESPACE": bad})


class _Record:
    def __init__(self, topic: str, offset: int) -> None:
        self.topic, self.partition, self.offset = topic, 0, offset
        self.key, self.value, self.headers = b"k", b"v", [("event-type", b"x")]
        self.timestamp = 1_700_000_000_000  # aiokafka's ConsumerRecord: ms since the epoch


class _FakeProducer:
    sent: ClassVar[list[str]] = []

    def __init__(self, **options: Any) -> None:
        pass

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def send(self, topic: str, **kw: Any) -> asyncio.Future[None]:
        _FakeProducer.sent.append(topic)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


class _FakeConsumer:
    joined: ClassVar[list[tuple[tuple[str, ...], str | None]]] = []
    committed: ClassVar[list[Any]] = []

    def __init__(self, *topics: str, group_id: str | None = None, **options: Any) -> None:
        _FakeConsumer.joined.append((topics, group_id))
        self._topics = topics
        self._given = False

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    async def getmany(self, **kw: Any) -> dict[Any, list[_Record]]:
        if self._given:
            await asyncio.sleep(0.01)
            return {}
        self._given = True
        return {("tp", 0): [_Record(self._topics[0], 0)]}

    async def commit(self, offsets: Any) -> None:
        _FakeConsumer.committed.append(offsets)


class _FakeAdmin:
    created: ClassVar[list[tuple[str, int]]] = []

    def __init__(self, **kw: Any) -> None:
        pass

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def list_topics(self) -> list[str]:
        return []

    async def create_topics(self, topics: list[Any]) -> Any:
        _FakeAdmin.created.extend((t.name, t.num_partitions) for t in topics)

        return SimpleNamespace(topic_errors=[(t.name, 0) for t in topics])


@pytest.fixture
def fake_kafka(monkeypatch: pytest.MonkeyPatch) -> None:
    _FakeProducer.sent, _FakeConsumer.joined, _FakeAdmin.created = [], [], []
    monkeypatch.setattr(kafka_mod, "AIOKafkaProducer", _FakeProducer)
    monkeypatch.setattr(kafka_mod, "AIOKafkaConsumer", _FakeConsumer)
    monkeypatch.setattr(kafka_mod, "AIOKafkaAdminClient", _FakeAdmin)


@pytest.mark.parametrize("namespace", ["", "ci-7"])
async def test_kafka_bus_prefixes_what_reaches_the_broker(fake_kafka: None, namespace: str) -> None:
    table = topic_for("table")
    bus = kafka_mod.KafkaBus("127.0.0.1:1", namespace=namespace)
    assert bus.kafka_name(table) == namespaced(namespace, table)
    await bus.publish([OutgoingMessage(table, b"k", b"v", ())])
    assert _FakeProducer.sent == [namespaced(namespace, table)]

    seen: list[ReceivedMessage] = []
    stop = asyncio.Event()

    async def handler(message: ReceivedMessage) -> None:
        seen.append(message)
        stop.set()

    await asyncio.wait_for(
        bus.consume([table], group_id="payout.table-results", handler=handler, stop=stop), 5
    )
    assert _FakeConsumer.joined == [
        ((namespaced(namespace, table),), namespaced(namespace, "payout.table-results"))
    ]
    # Handlers see the plain topic (so e.g. the dead-letter topic is derived from it and
    # prefixed again when published).
    assert [m.topic for m in seen] == [table]
    assert [m.timestamp_ms for m in seen] == [1_700_000_000_000]  # the record's, passed on

    created = await kafka_mod.ensure_topics("127.0.0.1:1", [table], namespace=namespace)
    # Partition counts follow the plain name (the table topic has 12, its DLQ 1).
    assert _FakeAdmin.created == [
        (namespaced(namespace, table), 12),
        (namespaced(namespace, f"{table}.dlq"), 1),
    ]
    assert created == [namespaced(namespace, table), namespaced(namespace, f"{table}.dlq")]


async def test_consumer_worker_group_is_prefixed_on_the_broker(fake_kafka: None) -> None:
    """A service's ConsumerWorker keeps its plain group id; the bus prefixes it."""
    bus = kafka_mod.KafkaBus("127.0.0.1:1", namespace="ns1")
    worker = ConsumerWorker(
        engine=None,  # type: ignore[arg-type]
        bus=bus,
        consumer=IdempotentConsumer("table.tournaments"),
        topics=[topic_for("registration")],
        effect=lambda conn, env: None,
    )
    assert worker.group_id == "table.tournaments"
    stop = asyncio.Event()

    async def handler(message: ReceivedMessage) -> None:
        stop.set()

    await asyncio.wait_for(
        bus.consume(worker.topics, group_id=worker.group_id, handler=handler, stop=stop), 5
    )
    assert _FakeConsumer.joined == [
        (("ns1.electric.registration.events",), "ns1.table.tournaments")
    ]
