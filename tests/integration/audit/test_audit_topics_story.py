"""An auditor with the raw topics only: bots play a tournament on the embedded platform
(four services, SQLite), every store's events are published to its service topic in a fresh
Kafka namespace (as the outbox relays do), then from the topics alone ``tournament ID``
passes every check, ``export --validate`` reads every hand back with pokerkit, and ``verify``
over topics and stores finds 0 failures."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from electric_audit.cli import main
from electric_audit.sources import read_store
from electric_eventlog import envelope_message
from electric_eventlog.kafka import KafkaBus, ensure_topics

from tests.support.kafka_topics import topic_namespace
from tests.support.platform_kit import embedded_platform

pytestmark = [pytest.mark.integration, pytest.mark.timeout(360)]

SERVICES = ("registration", "table", "wallet", "payout")


async def _play_and_publish(tmp_path: Path, bootstrap: str, namespace: str) -> dict[str, str]:
    async with embedded_platform(tmp_path) as platform:
        runner = platform.bot_runner(seed=5, player_prefix="topics")
        stats = await asyncio.wait_for(runner.run(), timeout=240)
        assert len(stats.tables_finished) == 1 and not stats.errors, stats
        await asyncio.sleep(1.5)  # payout credits the prize
        urls = dict(platform.db_urls)
    topics = [f"electric.{s}.events" for s in SERVICES]
    await ensure_topics(bootstrap, topics, with_dlq=False, namespace=namespace)
    bus = KafkaBus(bootstrap, namespace=namespace)
    await bus.start()
    try:
        for service in SERVICES:
            envelopes = [x.envelope for x in read_store(urls[service]).events]
            topic = f"electric.{service}.events"
            await bus.publish([envelope_message(topic, e) for e in envelopes])
    finally:
        await bus.stop()
    return urls


@pytest.fixture
def namespace(kafka_bootstrap: str) -> Iterator[str]:
    with topic_namespace(kafka_bootstrap, "auditstory") as name:
        yield name


def _json(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_a_tournament_from_the_raw_topics(
    kafka_bootstrap: str, namespace: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    urls = asyncio.run(_play_and_publish(tmp_path, kafka_bootstrap, namespace))
    kafka = ["--kafka", kafka_bootstrap, "--namespace", namespace]
    finished = [
        x.envelope.stream_id.removeprefix("table-")
        for x in read_store(urls["table"]).events
        if x.envelope.event_type.endswith(".TournamentFinished")
    ]
    assert len(finished) == 1

    assert main(["tournament", finished[0], *kafka, "--json"]) == 0
    checks = {str(x["check"]): x for x in _json(capsys) if "check" in x}
    assert len(checks) == 8
    assert all(x["failed"] == 0 and int(str(x["checked"])) >= 1 for x in checks.values()), checks

    out = tmp_path / "export"
    assert main(["export", *kafka, "--out", str(out), "--validate", "--json"]) == 0
    report = {k: v for line in _json(capsys) for k, v in line.items()}
    assert int(str(report["exported"])) >= 1
    assert report["exported"] == report["validated_phh"] == report["validated_pokerstars"]
    assert report["validation_failed"] == 0

    stores = [arg for s in SERVICES for arg in ("--store", urls[s])]
    assert main(["verify", *stores, *kafka, "--json"]) == 0
    results = {str(x["check"]): x for x in _json(capsys)}
    assert all(x["failed"] == 0 for x in results.values()), results
    # Every stored event was published, so each one is compared with its topic copy (a
    # short tournament has fewer than a hundred events: count them, do not guess).
    stored = sum(len(read_store(urls[s]).events) for s in SERVICES)
    assert int(str(results["store-topic"]["checked"])) == stored
