"""The two small processes of the observability stack, without Kafka or Alertmanager:
deploy/alertmanager/webhook_receiver.py over real HTTP, and the lag exporter's collector."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from prometheus_client import CollectorRegistry, generate_latest

ROOT = Path(__file__).resolve().parents[3]


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their module by name
    spec.loader.exec_module(module)
    return module


webhook = _load("ops_webhook_receiver", ROOT / "deploy" / "alertmanager" / "webhook_receiver.py")
lag_exporter = _load("ops_lag_exporter", ROOT / "deploy" / "kafka" / "lag_exporter.py")

PAYLOAD = {
    "version": "4",
    "receiver": "ops-critical",
    "status": "firing",
    "groupKey": '{}/{severity="critical"}:{alertname="ServiceDown", job="wallet"}',
    "alerts": [
        {
            "status": "firing",
            "labels": {"alertname": "ServiceDown", "job": "wallet", "severity": "critical"},
            "annotations": {"summary": "wallet is down"},
            "startsAt": "2026-01-01T00:00:00Z",
            "endsAt": "0001-01-01T00:00:00Z",
            "fingerprint": "abc",
        },
        {
            "status": "resolved",
            "labels": {"alertname": "ServiceDown", "job": "table", "severity": "critical"},
            "annotations": {},
            "startsAt": "2026-01-01T00:00:00Z",
            "endsAt": "2026-01-01T00:05:00Z",
            "fingerprint": "def",
        },
    ],
}


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    out = tmp_path / "alerts.jsonl"
    server = webhook.serve("127.0.0.1", 0, out)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", out
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _post(url: str, body: bytes) -> int:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_webhook_receiver_appends_one_line_per_alert(receiver: tuple[str, Path]) -> None:
    base, out = receiver
    assert _post(f"{base}/alerts/critical", json.dumps(PAYLOAD).encode()) == 200
    assert _post(f"{base}/alerts/critical", json.dumps(PAYLOAD).encode()) == 200
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 4
    assert [line["labels"]["job"] for line in lines] == ["wallet", "table", "wallet", "table"]
    assert {line["receiver"] for line in lines} == {"ops-critical"}
    assert lines[1]["status"] == "resolved" and lines[0]["groupKey"] == PAYLOAD["groupKey"]
    with urllib.request.urlopen(f"{base}/alerts", timeout=5) as response:
        assert json.loads(response.read()) == lines
    with urllib.request.urlopen(f"{base}/-/healthy", timeout=5) as response:
        assert response.status == 200


@pytest.mark.parametrize("body", [b"not json", b"[]", b'{"alerts": 3}', b'{"alerts": [1]}'])
def test_webhook_receiver_rejects_malformed_payloads(
    receiver: tuple[str, Path], body: bytes
) -> None:
    base, out = receiver
    assert _post(f"{base}/alerts", body) == 400
    assert out.read_text() == ""


def _samples(collector: object) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(collector)  # type: ignore[arg-type]
    out = {}
    for family in registry.collect():
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    assert generate_latest(registry)  # renders in the exposition format
    return out


def test_lag_collector_reports_lag_per_partition_and_topic() -> None:
    collector = lag_exporter.LagCollector()
    before = _samples(collector)
    assert before[("kafka_lag_exporter_up", ())] == 0.0  # no poll yet
    collector.update(
        lag_exporter.Snapshot(
            ok=True,
            last_success=1000.0,
            poll_seconds=0.01,
            end_offsets={("t", 0): 10, ("t", 1): 7, ("gone", 0): 1},
            committed={
                ("g", "t", 0): 4,
                ("g", "t", 1): 9,  # committed past the end read a moment earlier
                ("g", "deleted", 0): 3,
            },
        )
    )
    s = _samples(collector)
    part = (("consumergroup", "g"), ("partition", "0"), ("topic", "t"))
    assert s[("kafka_lag_exporter_up", ())] == 1.0
    assert s[("kafka_consumergroup_lag", part)] == 6.0
    assert s[("kafka_consumergroup_lag", (part[0], ("partition", "1"), part[2]))] == 0.0
    assert s[("kafka_consumergroup_current_offset", part)] == 4.0
    assert s[("kafka_consumergroup_lag_sum", (("consumergroup", "g"), ("topic", "t")))] == 6.0
    assert s[("kafka_topic_partition_current_offset", (("partition", "1"), ("topic", "t")))] == 7.0
    # A committed offset on a topic that no longer exists has no lag series.
    assert not any(k[0] == "kafka_consumergroup_lag" and ("topic", "deleted") in k[1] for k in s)
    # A failed poll drops the group series instead of reporting stale lag.
    collector.update(lag_exporter.Snapshot(ok=False, last_success=1000.0))
    after = _samples(collector)
    assert after[("kafka_lag_exporter_up", ())] == 0.0
    assert after[("kafka_lag_exporter_last_success_timestamp_seconds", ())] == 1000.0
    assert not any(k[0].startswith("kafka_consumergroup") for k in after)
