"""The observability configs, checked by Prometheus' and Alertmanager's own tools.

No server is started: ``deploy/observability.sh config`` writes the local configs into a
temporary folder, then ``promtool check config`` / ``check rules`` / ``test rules`` and
``amtool check-config`` / ``config routes test`` judge them. The binaries come from Debian's
packages (``bash deploy/observability.sh install``, which ``.ci/run`` calls); without them
these tests skip, saying so. The live stack is tested in test_ops_stack.py.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
SCRIPT = DEPLOY / "observability.sh"
ALERTMANAGER_FILE = DEPLOY / "alertmanager" / "alertmanager.yml"
INFRA_ALERTS = DEPLOY / "prometheus" / "infra-alerts.yml"
SERVICES = ("registration", "table", "wallet", "payout")


def _tool(name: str) -> str:
    path = os.environ.get(name.upper()) or shutil.which(name)
    if not path:
        pytest.skip(
            f"no {name} binary: `bash deploy/observability.sh install` installs Debian's "
            "prometheus and prometheus-alertmanager packages (set "
            f"{name.upper()} to use another binary)"
        )
    return path


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), capture_output=True, text=True, timeout=120, env=env, check=False
    )


def _write_configs(obs_dir: Path, **extra: str) -> Path:
    env = {**os.environ, "OBS_DIR": str(obs_dir), **extra}
    result = _run("bash", str(SCRIPT), "config", env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return obs_dir


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("deployment", ["processes", "embedded"])
def test_generated_prometheus_config_passes_promtool(tmp_path: Path, deployment: str) -> None:
    promtool = _tool("promtool")
    obs = _write_configs(tmp_path, OBS_DEPLOYMENT=deployment)
    result = _run(promtool, "check", "config", str(obs / "prometheus.yml"))
    assert result.returncode == 0, result.stdout + result.stderr
    # Both rule files were found and checked along with the config.
    assert "alerts.yml" in result.stdout and "infra-alerts.yml" in result.stdout


def test_generated_config_wires_every_job(tmp_path: Path) -> None:
    obs = _write_configs(
        tmp_path,
        OBS_DEPLOYMENT="embedded",
        OBS_ALERTMANAGER_PORT="19995",
        OBS_PG_EXPORTER_PORT="19987",
        KAFKA_JMX_PORT="19904",
        OBS_KAFKA_LAG_PORT="19908",
        OBS_WEBHOOK_PORT="19999",
        ELECTRIC_TABLE_METRICS_PORT="19102",
    )
    prom = _load(obs / "prometheus.yml")
    jobs = {job["job_name"]: job for job in prom["scrape_configs"]}
    assert set(jobs) == {
        "electric",
        "postgres",
        "kafka",
        "kafka-lag",
        "textfile",
        "alertmanager",
        "prometheus",
    }
    assert jobs["postgres"]["static_configs"][0]["targets"] == ["127.0.0.1:19987"]
    assert jobs["kafka"]["static_configs"][0]["targets"] == ["127.0.0.1:19904"]
    assert jobs["kafka-lag"]["static_configs"][0]["targets"] == ["127.0.0.1:19908"]
    am = prom["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    assert am == ["127.0.0.1:19995"]
    assert [Path(f).name for f in prom["rule_files"]] == ["alerts.yml", "infra-alerts.yml", "*.yml"]
    # The services: one file_sd job, job label = service, embedded drops shared process series.
    (sd,) = jobs["electric"]["file_sd_configs"]
    targets = json.loads(Path(sd["files"][0]).read_text())
    by_service = {t["labels"]["service"]: t for t in targets}
    assert sorted(by_service) == sorted(SERVICES)
    assert by_service["table"]["targets"] == ["127.0.0.1:19102"]
    assert by_service["wallet"]["targets"] == ["127.0.0.1:9103"]
    assert {t["labels"]["deployment"] for t in targets} == {"embedded"}
    relabel = jobs["electric"]["relabel_configs"]
    assert {"source_labels": ["service"], "target_label": "job"} in relabel
    (drop,) = jobs["electric"]["metric_relabel_configs"]
    assert drop["action"] == "drop"
    pattern = re.compile(drop["regex"])
    assert not pattern.fullmatch("embedded;registration;process_resident_memory_bytes")
    assert pattern.fullmatch("embedded;wallet;process_resident_memory_bytes")
    assert pattern.fullmatch("embedded;payout;python_gc_collections_total")
    assert not pattern.fullmatch("processes;wallet;process_resident_memory_bytes")
    assert not pattern.fullmatch("embedded;wallet;electric_wallet_posted_cents_total")
    # Alertmanager's copy sends to the receiver's configured port.
    am_conf = (obs / "alertmanager.yml").read_text()
    assert "http://127.0.0.1:19999/alerts/critical" in am_conf and ":9099/" not in am_conf


def test_targets_switch_between_deployments(tmp_path: Path) -> None:
    env = {**os.environ, "OBS_DIR": str(tmp_path)}
    for mode in ("embedded", "processes"):
        result = _run("bash", str(SCRIPT), "targets", mode, env=env)
        assert result.returncode == 0, result.stderr
        targets = json.loads((tmp_path / "targets" / "electric.json").read_text())
        assert {t["labels"]["deployment"] for t in targets} == {mode}
    bad = _run("bash", str(SCRIPT), "targets", "sideways", env=env)
    assert bad.returncode != 0


def test_compose_prometheus_config_syntax() -> None:
    promtool = _tool("promtool")
    result = _run(
        promtool, "check", "config", "--syntax-only", str(DEPLOY / "prometheus" / "prometheus.yml")
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_infra_alert_rules_pass_promtool() -> None:
    promtool = _tool("promtool")
    check = _run(promtool, "check", "rules", str(INFRA_ALERTS))
    assert check.returncode == 0, check.stdout + check.stderr
    scenarios = _run(
        promtool, "test", "rules", str(INFRA_ALERTS.with_name("infra-alerts_test.yml"))
    )
    assert scenarios.returncode == 0, scenarios.stdout + scenarios.stderr


def test_infra_alert_rules_are_complete() -> None:
    rules = [r for g in _load(INFRA_ALERTS)["groups"] for r in g["rules"]]
    names = [r["alert"] for r in rules]
    assert len(names) == len(set(names))
    for rule in rules:
        assert re.fullmatch(r"\d+[smh]", str(rule["for"])), rule["alert"]
        assert rule["labels"]["severity"] in {"critical", "warning"}, rule["alert"]
        assert rule["annotations"]["summary"].strip(), rule["alert"]
    assert {"KafkaDown", "KafkaOfflinePartitions", "KafkaUnderReplicatedPartitions"} <= set(names)
    assert {"KafkaConsumerGroupLag", "PostgresDown", "PostgresReplicationSlotInactive"} <= set(
        names
    )


def test_alertmanager_configs_pass_amtool(tmp_path: Path) -> None:
    amtool = _tool("amtool")
    obs = _write_configs(tmp_path, OBS_WEBHOOK_PORT="19099")
    for path in (ALERTMANAGER_FILE, obs / "alertmanager.yml"):
        result = _run(amtool, "check-config", str(path))
        assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("labels", "receiver"),
    [
        (["alertname=ServiceDown", "job=wallet", "severity=critical"], "ops-critical"),
        (["alertname=ConsumerLag", "job=payout", "severity=warning"], "ops-warning"),
        (["alertname=Unlabelled"], "ops-warning"),
    ],
)
def test_alertmanager_routes_by_severity(labels: list[str], receiver: str) -> None:
    amtool = _tool("amtool")
    result = _run(amtool, "config", "routes", "test", f"--config.file={ALERTMANAGER_FILE}", *labels)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split() == [receiver]


def _matches(matchers: list[str], labels: dict[str, str]) -> bool:
    for matcher in matchers:
        m = re.fullmatch(r'(\w+)\s*(=~|!~|!=|=)\s*"(.*)"', matcher)
        assert m, matcher
        name, op, value = m.groups()
        actual = labels.get(name, "")
        ok = {
            "=": actual == value,
            "!=": actual != value,
            "=~": re.fullmatch(value, actual) is not None,
            "!~": re.fullmatch(value, actual) is None,
        }[op]
        if not ok:
            return False
    return True


def _inhibited(source: dict[str, str], target: dict[str, str]) -> bool:
    for rule in _load(ALERTMANAGER_FILE)["inhibit_rules"]:
        if (
            _matches(rule["source_matchers"], source)
            and _matches(rule["target_matchers"], target)
            and all(source.get(k) == target.get(k) for k in rule.get("equal", []))
        ):
            return True
    return False


def test_inhibition_rules() -> None:
    down = {"alertname": "ServiceDown", "job": "payout", "severity": "critical"}
    assert _inhibited(down, {"alertname": "PrizesNotCredited", "job": "payout"})
    assert not _inhibited(down, {"alertname": "PrizesNotCredited", "job": "wallet"})
    assert not _inhibited(down, {"alertname": "ServiceDown", "job": "payout"})
    kafka = {"alertname": "KafkaDown", "job": "kafka-lag", "severity": "critical"}
    for name in ("ConsumerLag", "KafkaConsumerGroupLag", "OutboxBacklog", "DeadLetters"):
        assert _inhibited(kafka, {"alertname": name, "job": "table", "severity": "warning"})
    assert not _inhibited(kafka, {"alertname": "PostgresDown", "severity": "critical"})
    pg = {"alertname": "PostgresDown", "severity": "critical"}
    assert _inhibited(pg, {"alertname": "PostgresConnectionsNearLimit", "severity": "warning"})
    assert not _inhibited(pg, {"alertname": "PostgresDown", "severity": "critical"})
    # Every alert name an inhibition rule names exists in some rule file.
    defined = {
        str(rule["alert"])
        for path in (INFRA_ALERTS, INFRA_ALERTS.with_name("alerts.yml"))
        for group in _load(path)["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }
    for rule in _load(ALERTMANAGER_FILE)["inhibit_rules"]:
        for matcher in rule["source_matchers"] + rule["target_matchers"]:
            m = re.fullmatch(r'alertname\s*(=~|=)\s*"(.*)"', matcher)
            if m and m.group(1) == "=":
                assert m.group(2) in defined, matcher
            elif m:
                for name in m.group(2).split("|"):
                    if name.isidentifier():
                        assert name in defined, (matcher, name)
