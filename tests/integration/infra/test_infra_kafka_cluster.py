"""A replicated Kafka survives losing a broker for good (issue 28 item 1): the local 3-broker
KRaft cluster of ``deploy/kafka.sh cluster`` on ports of its own; the platform's topics
created with ``ELECTRIC_KAFKA_REPLICATION_FACTOR=3`` (replication factor 3,
``min.insync.replicas`` 2) and written by the platform's idempotent ``acks=all`` producer
(``KafkaBus``). Broker 2 is killed and its data deleted while messages are being sent; sends
go on with two in-sync replicas; a replacement broker 2 (formatted anew, same node id) joins
and catches up until every partition is fully in sync again. Read back from offset zero:
every acknowledged message is there exactly once, in each key's order."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from electric_eventlog.bus import OutgoingMessage
from electric_eventlog.kafka import KafkaBus, ensure_topics

from tests.support.ports import free_port_run

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[3]
TOPIC = "electric.table.events"  # 12 partitions (electric_eventlog.topics)
KEYS = 24


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    base = free_port_run(8, 21000, 29000)
    env = {
        **os.environ,
        "KAFKA_CLUSTER_PORT": str(base),
        "KAFKA_CLUSTER_CONTROLLER_PORT": str(base + 7),
        "ELECTRIC_KAFKA_CLUSTER_DIR": str(tmp_path / "kafka-cluster"),
    }

    def kafka(*args: str) -> None:
        subprocess.run(
            ["bash", str(ROOT / "deploy/kafka.sh"), "cluster", *args],
            env=env,
            check=True,
            timeout=240,
        )

    kafka("up")
    try:
        yield ",".join(f"127.0.0.1:{base + i}" for i in range(3)), env
    finally:
        kafka("down")


async def _in_sync(bootstrap: str, topic: str) -> dict[int, int]:
    """partition -> size of its in-sync replica set."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics([topic])
    finally:
        await admin.close()
    return {p["partition"]: len(p["isr"]) for p in described[0]["partitions"]}


async def _topic_config(bootstrap: str, topic: str, timeout_s: float = 30.0) -> dict[str, str]:
    """The topic's configuration. Right after the create, the broker asked may not know the
    topic yet (its metadata arrives a moment later, later under load): it answers with an
    error and no entries, so ask again until the entries come or ``timeout_s`` ran out."""
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            got = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
            resource = got[0].resources[0]
            entries = {str(c[0]): str(c[1]) for c in resource[4]}
            if entries or time.monotonic() > deadline:
                assert entries, f"no configuration of {topic}: error {resource[0]} {resource[1]}"
                return entries
            await asyncio.sleep(0.2)
    finally:
        await admin.close()


async def _send(bus: KafkaBus, round_no: int, per_key: int) -> list[tuple[str, str]]:
    sent = []
    for k in range(KEYS):
        batch = []
        for i in range(per_key):
            value = f"{round_no}:{i}"
            batch.append(OutgoingMessage(TOPIC, f"key-{k}".encode(), value.encode()))
            sent.append((f"key-{k}", value))
        await bus.publish(batch)  # returns once every message is acknowledged (acks=all)
    return sent


async def _scenario(bootstrap: str, env: dict[str, str]) -> None:
    ns = f"kc-{uuid.uuid4().hex[:8]}"
    os.environ["ELECTRIC_KAFKA_REPLICATION_FACTOR"] = "3"
    try:
        await ensure_topics(bootstrap, [TOPIC], namespace=ns, with_dlq=False)
    finally:
        del os.environ["ELECTRIC_KAFKA_REPLICATION_FACTOR"]
    physical = f"{ns}.{TOPIC}"
    assert (await _topic_config(bootstrap, physical))["min.insync.replicas"] == "2"
    assert set((await _in_sync(bootstrap, physical)).values()) == {3}

    bus = KafkaBus(bootstrap, client_id="kc-test", namespace=ns)
    await bus.start()
    try:
        sent = await _send(bus, 1, 5)
        wipe = asyncio.create_task(
            asyncio.to_thread(
                subprocess.run,
                ["bash", str(ROOT / "deploy/kafka.sh"), "cluster", "wipe", "2"],
                env=env,
                check=True,
                timeout=120,
            )
        )
        sent += await _send(bus, 2, 5)  # while broker 2 dies
        await wipe
        sent += await _send(bus, 3, 5)  # two in-sync replicas: still acknowledged
        await asyncio.to_thread(
            subprocess.run,
            ["bash", str(ROOT / "deploy/kafka.sh"), "cluster", "start", "2"],
            env=env,
            check=True,
            timeout=240,
        )
        sent += await _send(bus, 4, 5)
        for _ in range(240):  # the replacement catches up: every partition fully in sync
            if set((await _in_sync(bootstrap, physical)).values()) == {3}:
                break
            await asyncio.sleep(0.5)
        assert set((await _in_sync(bootstrap, physical)).values()) == {3}
        got = [
            (m.key.decode(), m.value.decode())
            async for m in bus.read_topic(TOPIC)  # from offset zero, every partition
        ]
    finally:
        await bus.stop()
    assert sorted(got) == sorted(sent), (len(got), len(sent))  # every one, exactly once
    for k in range(KEYS):  # and each key's messages in the order they were sent
        key = f"key-{k}"
        assert [v for kk, v in got if kk == key] == [v for kk, v in sent if kk == key]


def test_losing_a_broker_and_its_disk_loses_no_acknowledged_message(
    cluster: tuple[str, dict[str, str]],
) -> None:
    bootstrap, env = cluster
    asyncio.run(_scenario(bootstrap, env))
