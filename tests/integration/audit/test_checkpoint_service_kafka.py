"""The wallet service on real PostgreSQL + Kafka (fresh namespace) anchors its store: its
checkpoints reach `electric.checkpoints` (periodic, and a final one at shutdown covering the
whole store), signed with the key generated under its var dir, and `electric-audit verify
--store --kafka --checkpoint-keys` passes over the store, its topic and the checkpoints."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from electric_audit.cli import main
from electric_eventlog.checkpoint import CHECKPOINT_TOPIC, from_json
from electric_eventlog.kafka import KafkaBus
from electric_platform.config import load_config
from electric_platform.server import ServiceHost
from electric_wallet.app import setup

from tests.support.anchoring import rows
from tests.support.auth import auth_env
from tests.support.kafka_topics import topic_namespace

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


@pytest.fixture
def namespace(kafka_bootstrap: str) -> Iterator[str]:
    with topic_namespace(kafka_bootstrap, "ckpt") as name:
        yield name


async def test_wallet_checkpoints_reach_kafka_and_verify(
    fresh_pg_url: str,
    kafka_bootstrap: str,
    namespace: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    config = load_config(
        "wallet",
        {
            "DATABASE_URL": fresh_pg_url,
            "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "ELECTRIC_KAFKA_NAMESPACE": namespace,
            **auth_env(),
            "ELECTRIC_VAR_DIR": str(tmp_path),
            "ELECTRIC_WALLET_GRPC_PORT": "0",
            "ELECTRIC_WALLET_METRICS_PORT": "-1",
            "ELECTRIC_CHECKPOINT_INTERVAL_SECONDS": "0.3",
        },
    )
    host = ServiceHost(config, setup)
    await host.start()
    await asyncio.sleep(0.8)
    await host.stop(0)

    bus = KafkaBus(kafka_bootstrap, namespace=namespace)
    records = [from_json(m.value) async for m in bus.read_topic(CHECKPOINT_TOPIC)]
    assert records and {r.producer for r in records} == {"wallet"}
    assert records[-1].global_position == rows(fresh_pg_url)[-1]["global_position"]
    assert not (tmp_path / "checkpoints").exists()  # Kafka mode: the topic only

    argv = ["verify", "--json", "--store", fresh_pg_url, "--kafka", kafka_bootstrap]
    argv += ["--namespace", namespace, "--service", "wallet"]
    code = await asyncio.to_thread(main, [*argv, "--checkpoint-keys", str(tmp_path / "keys")])
    result = {r["check"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert code == 0, result
    assert result["checkpoints"]["checked"] == len(records)
    assert result["anchor-store"]["checked"] == len(records)
    assert result["anchor-topic"]["checked"] == len(records)
