"""docker-compose.yml's observability services against the local stack's configs (no Docker).

tests/component/infra/test_compose_static.py checks the services, ports and dashboards; this
file checks what issue 15 added: the JMX agent on Kafka, the PostgreSQL and lag exporters,
Alertmanager and its webhook receiver, and that compose's Prometheus scrapes and alerts the same
way as the local one (deploy/observability/prometheus.yml.in).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[3]


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    data = _load(ROOT / "docker-compose.yml")["services"]
    assert isinstance(data, dict)
    return data


def _mounts(spec: dict[str, Any]) -> dict[str, str]:
    """container path -> source, for ``source:target[:ro]`` volume entries."""
    out = {}
    for volume in spec.get("volumes", []):
        source, target = str(volume).split(":")[:2]
        out[target] = source
    return out


def _mounted_file(spec: dict[str, Any], container_path: str) -> Path:
    source = _mounts(spec)[container_path]
    assert source.startswith("./"), source
    path = ROOT / source
    assert path.is_file(), path
    return path


def test_kafka_runs_the_jmx_agent_with_the_local_rules(services: dict[str, Any]) -> None:
    kafka = services["kafka"]
    script = " ".join(kafka["command"])
    m = re.search(r"-javaagent:(\S+\.jar)=(\d+):(\S+?\.yml)", script)
    assert m, script
    jar, port, config = m.groups()
    assert port == "9404"
    assert _mounted_file(kafka, config) == ROOT / "deploy" / "kafka" / "jmx-exporter.yml"
    # The jar comes from the jmx-agent service's volume, fetched with the same pom as kafka.sh.
    agent = services["jmx-agent"]
    volume = _mounts(kafka)[str(Path(jar).parent)]
    assert _mounts(agent)[str(Path(jar).parent)] == volume
    assert "jmx-agent-pom.xml" in " ".join(agent["command"])
    assert kafka["depends_on"]["jmx-agent"]["condition"] == "service_completed_successfully"
    # Kafka starts without the agent when the jar is missing, and the CLI health check must
    # not start a second agent on the same port.
    assert "if [ -f " in script and "exec /etc/kafka/docker/run" in script
    assert "KAFKA_OPTS= " in " ".join(kafka["healthcheck"]["test"])


def test_postgres_exporter_uses_the_local_queries(services: dict[str, Any]) -> None:
    spec = services["postgres-exporter"]
    args = spec["command"]
    query_arg = next(a for a in args if a.startswith("--extend.query-path="))
    queries = _mounted_file(spec, query_arg.split("=", 1)[1])
    assert queries == ROOT / "deploy" / "postgres" / "exporter-queries.yaml"
    assert {"pg_replication_slots_summary", "pg_table_bloat"} <= set(_load(queries))
    included = next(a for a in args if a.startswith("--include-databases=")).split("=", 1)[1]
    script = (ROOT / "deploy" / "observability.sh").read_text()
    assert f":-{included}}}" in script, "the local stack reports the same databases"
    assert "@postgres:5432/" in spec["environment"]["DATA_SOURCE_NAME"]
    # Same exporter version as Debian 12's prometheus-postgres-exporter (0.11).
    assert str(spec["image"]).endswith(":v0.11.1")


def test_alertmanager_and_webhook_receiver(services: dict[str, Any]) -> None:
    am = services["alertmanager"]
    config = next(a for a in am["command"] if a.startswith("--config.file="))
    path = _mounted_file(am, config.split("=", 1)[1])
    assert path == ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
    assert "--cluster.listen-address=" in am["command"]
    assert am["ports"] == ["127.0.0.1:9095:9093"]
    # The receiver shares Alertmanager's network namespace: the config's loopback URL works.
    receiver = services["webhook-receiver"]
    assert receiver["network_mode"] == "service:alertmanager"
    port = receiver["command"][receiver["command"].index("--port") + 1]
    urls = [hook["url"] for r in _load(path)["receivers"] for hook in r.get("webhook_configs", [])]
    assert urls and all(u.startswith(f"http://127.0.0.1:{port}/") for u in urls)
    assert _mounted_file(receiver, "/deploy/alertmanager/webhook_receiver.py")


def test_compose_prometheus_matches_the_local_jobs(services: dict[str, Any]) -> None:
    compose = _load(ROOT / "deploy" / "prometheus" / "prometheus.yml")
    jobs = {j["job_name"]: j for j in compose["scrape_configs"]}
    targets = {name: j["static_configs"][0]["targets"] for name, j in jobs.items()}
    assert targets["postgres"] == ["postgres-exporter:9187"]
    assert targets["kafka"] == ["kafka:9404"]
    assert targets["kafka-lag"] == ["kafka-lag-exporter:9308"]
    assert targets["alertmanager"] == ["alertmanager:9093"]
    for name in ("postgres-exporter", "kafka-lag-exporter", "alertmanager"):
        assert name in services
    am = compose["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    assert am == ["alertmanager:9093"]
    # The local template has the same infrastructure jobs and rule files.
    template = (ROOT / "deploy" / "observability" / "prometheus.yml.in").read_text()
    local_jobs = set(re.findall(r"job_name: ([\w-]+)", template))
    assert {"postgres", "kafka", "kafka-lag", "alertmanager", "prometheus"} <= local_jobs
    for rules in compose["rule_files"]:
        assert f"deploy/prometheus/{Path(rules).name}" in template
    lag = services["kafka-lag-exporter"]
    assert "--port" in lag["command"] and "9308" in lag["command"]
    assert _mounted_file(lag, "/deploy/kafka/lag_exporter.py")
