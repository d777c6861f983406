"""The tamper suite over real Kafka (fresh namespace), SQLite and PostgreSQL stores: the
checkpoint writer publishes to the real ``electric.checkpoints`` topic and the outbox relay
to the real event topic, as the services do. Then the database is rewritten with every hash
recomputed and a forged checkpoint is published: ``electric-audit verify --store --kafka``
locates the store that differs from its topic, blames the store (the topic still matches the
signed checkpoints), and refuses the forged record at its partition and offset."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from electric_audit.cli import main
from electric_audit.sources import store_name
from electric_eventlog import ANY, EventStore, OutboxRelay, create_engine, migrate
from electric_eventlog.checkpoint import CHECKPOINT_TOPIC, checkpoint_message
from electric_eventlog.checkpoint_writer import CheckpointWriter
from electric_eventlog.kafka import KafkaBus, ensure_topics
from electric_eventlog.testing import event
from electric_platform.checkpointing import ensure_checkpoint_key, new_checkpoint_key

from tests.support.anchoring import rewrite
from tests.support.backends import Backend
from tests.support.kafka_topics import topic_namespace

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

TOPIC = "electric.table.events"


@pytest.fixture
def namespace(kafka_bootstrap: str) -> Iterator[str]:
    with topic_namespace(kafka_bootstrap, "tamper") as name:
        yield name


async def _run_service(url: str, keys: Path, bootstrap: str, namespace: str) -> Any:
    """Append three rounds with a checkpoint after each, relay everything to Kafka; then
    publish a forged copy of the second checkpoint. Returns the genuine records."""
    await ensure_topics(bootstrap, [TOPIC], with_dlq=False, namespace=namespace)
    await ensure_topics(bootstrap, [CHECKPOINT_TOPIC], with_dlq=False, namespace=namespace)
    engine = create_engine(url)
    migrate(engine)
    store = EventStore(engine, producer="table")
    key = ensure_checkpoint_key(keys, "table")
    bus = KafkaBus(bootstrap, namespace=namespace)
    await bus.start()
    try:
        writer = CheckpointWriter(
            engine, bus, producer="table", kid=key.kid, private_key=key.private
        )
        for r in range(3):
            for stream in ("s0", "s1", "s2"):
                await asyncio.to_thread(store.append_in_new_tx, stream, ANY, [event(f"{r}")])
            await writer.write_once()
        await OutboxRelay(engine, bus, topic=TOPIC).drain()
        genuine = writer.written[1]
        forger = new_checkpoint_key("table")
        forged = replace(genuine, merkle_root="0" * 64).signed(forger.private)
        await bus.publish([checkpoint_message(forged)])
        return writer.written
    finally:
        await bus.stop()
        engine.dispose()


def test_store_rewrite_and_forged_checkpoint_over_kafka(
    backend: Backend,
    kafka_bootstrap: str,
    namespace: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    keys = tmp_path / "keys"
    records = asyncio.run(_run_service(backend.url, keys, kafka_bootstrap, namespace))
    argv = [
        "verify",
        "--json",
        "--store",
        backend.url,
        "--kafka",
        kafka_bootstrap,
        "--namespace",
        namespace,
        "--service",
        "table",
        "--checkpoint-keys",
        str(keys),
    ]
    code = main(argv)
    result = {r["check"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert code == 1  # the forged record only
    assert result["checkpoints"]["failed"] == 1 and result["checkpoints"]["checked"] == 4
    assert (
        result["checkpoints"]["first_failure"].startswith(f"topic:{CHECKPOINT_TOPIC} partition ")
        and "(checkpoint table #2 part 1/1 at position 6): signature does not verify"
        in (result["checkpoints"]["first_failure"])
    )
    for name in ("chains", "positions", "store-topic", "anchor-store", "anchor-topic"):
        assert result[name]["ok"], result[name]
    assert result["anchor-store"]["checked"] == 3 and result["anchor-topic"]["checked"] == 3
    assert [r.global_position for r in records] == [3, 6, 9]

    def change(found: list[dict[str, Any]]) -> list[dict[str, Any]]:
        found[4]["payload"] = b"\x0a\x03bad"  # s1 version 2, position 5
        return found

    rewrite(backend.url, change, renumber=False)
    code = main(argv)
    result = {r["check"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert code == 1
    store = f"store:{store_name(backend.url)}"
    assert result["store-topic"]["first_failure"].startswith(
        f"{store} stream s1 version 2 position 5: differs from the same event on topic:{TOPIC}"
    )
    assert result["chains"]["ok"]  # recomputed: the chains alone are fooled
    assert result["anchor-store"]["first_failure"].startswith(
        f"{store} stream s1 version 2 position 5: hash "
    )
    assert result["anchor-topic"]["ok"]  # the topic still matches what was signed
