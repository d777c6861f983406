"""electric-audit over real Kafka: a service store's events published (as the outbox relay
does) to its topic in a fresh namespace; `verify --store --kafka --namespace` finds the store
and the topic identical, and a topic that differs from its store is located."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from electric_audit.cli import main
from electric_eventlog import ANY, EventStore, create_engine, envelope_message, migrate
from electric_eventlog.kafka import KafkaBus, ensure_topics
from electric_eventlog.testing import event

from tests.support.kafka_topics import topic_namespace

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

TOPIC = "electric.wallet.events"


async def _publish(bootstrap: str, namespace: str, messages: list[object]) -> None:
    await ensure_topics(bootstrap, [TOPIC], with_dlq=False, namespace=namespace)
    bus = KafkaBus(bootstrap, namespace=namespace)
    await bus.start()
    try:
        await bus.publish(messages)  # type: ignore[arg-type]
    finally:
        await bus.stop()


@pytest.fixture
def namespace(kafka_bootstrap: str) -> Iterator[str]:
    """A fresh topic namespace; its topics are deleted after the test."""
    with topic_namespace(kafka_bootstrap, "audit") as name:
        yield name


def test_store_and_topic_agree_then_differ(
    kafka_bootstrap: str, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'wallet.db'}"
    engine = create_engine(url)
    migrate(engine)
    store = EventStore(engine, producer="wallet")
    envelopes = []
    for i in range(3):
        envelopes += store.append_in_new_tx(
            f"wallet-{i}", ANY, [event(f"{i}-{j}") for j in range(3)]
        )
    engine.dispose()
    asyncio.run(
        _publish(kafka_bootstrap, namespace, [envelope_message(TOPIC, e) for e in envelopes])
    )
    argv = [
        "verify",
        "--json",
        "--store",
        url,
        "--kafka",
        kafka_bootstrap,
        "--namespace",
        namespace,
        "--service",
        "wallet",
    ]
    code = main(argv)
    result = {r["check"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert code == 0, result
    assert result["store-topic"]["checked"] == 9 and result["chains"]["checked"] == 18

    forged = envelopes[4]
    forged.payload.value = forged.payload.value + b"\x00"
    asyncio.run(
        _publish(kafka_bootstrap, namespace + "x", [envelope_message(TOPIC, e) for e in envelopes])
    )
    argv[argv.index(namespace)] = namespace + "x"
    code = main(argv)
    result = {r["check"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert code == 1
    assert str(result["store-topic"]["first_failure"]).startswith(
        f"store:wallet.db stream {forged.stream_id} version {forged.stream_version} "
        f"position {forged.global_position}: differs from the same event on topic:{TOPIC}"
    )
    assert str(result["chains"]["first_failure"]).startswith(
        f"topic:{TOPIC} stream {forged.stream_id} version {forged.stream_version} partition"
    )


def test_unreachable_kafka_exits_2(tmp_path: Path) -> None:
    assert main(["events", "--kafka", "127.0.0.1:1"]) == 2
