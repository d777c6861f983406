"""The local observability stack, live: Prometheus, Alertmanager, the exporters and the
webhook receiver from deploy/observability.sh, a Kafka broker with the JMX exporter agent from
deploy/kafka.sh, and the shared PostgreSQL.

Everything runs on free loopback ports in a temporary folder: a private Kafka broker (the
shared one may have been started without the agent), a fresh database (so the bloat query has
a table to report), and four stand-in service endpoints in embedded mode (one process, four
metrics ports) to check that process metrics are kept once. Bounded (``timeout``), and the
processes are stopped by pid (``down``) whatever happens.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from prometheus_client import CollectorRegistry, Gauge, start_http_server
from prometheus_client import process_collector as prom_process
from sqlalchemy.engine import make_url

from tests.integration.ops.ops_prometheus import (
    PrometheusQueries,
    exporter_dsn,
    free_port,
    observability_ports,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

ROOT = Path(__file__).resolve().parents[3]
OBSERVABILITY = ROOT / "deploy" / "observability.sh"
KAFKA_SCRIPT = ROOT / "deploy" / "kafka.sh"
SERVICES = ("registration", "table", "wallet", "payout")
BINARIES = ("prometheus", "prometheus-alertmanager", "prometheus-postgres-exporter")


def _run(args: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@dataclass
class Stack(PrometheusQueries):
    env: dict[str, str]
    obs_dir: Path
    prometheus: str
    database: str
    kafka_bootstrap: str

    #: Shorter than the platform test's: this stack is small and answers at once.
    api_timeout = 10

    def wait_value(self, expr: str, expected: float, timeout: float = 60) -> None:
        """Until ``expr`` is ``expected``: a scrape may land mid-way through the test's writes,
        so an earlier value is not a failure yet."""
        seen: list[float | None] = []

        def probe() -> bool | None:
            seen.append(self.value(expr))
            return True if seen[-1] == expected else None

        try:
            wait_for(expr, probe, timeout)
        except AssertionError:
            raise AssertionError(f"{expr}: expected {expected}, last seen {seen[-3:]}") from None


def _stand_in_services(ports: dict[str, int]) -> list[Any]:
    """What the embedded runner looks like to Prometheus: one process, four /metrics ports,
    each with the process collector and a service gauge."""
    servers = []
    for port in ports.values():
        registry = CollectorRegistry()
        prom_process.ProcessCollector(registry=registry)
        Gauge("electric_service_up", "stand-in", registry=registry).set(1)
        server, _thread = start_http_server(port, addr="127.0.0.1", registry=registry)
        servers.append(server)
    return servers


async def _kafka_traffic(bootstrap: str, topic: str, group: str) -> None:
    """Five messages on a topic and a group that committed offset 2 on it: lag 3."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    try:
        for i in range(5):
            await producer.send_and_wait(topic, f"m{i}".encode(), partition=0)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, 0)])
        await consumer.commit({TopicPartition(topic, 0): 2})
    finally:
        await consumer.stop()


def _conninfo(url: str, dbname: str | None = None) -> str:
    u = make_url(url)
    return (
        f"host={u.host} port={u.port or 5432} user={u.username} "
        f"password={u.password} dbname={dbname or u.database}"
    )


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[Stack]:
    missing = [b for b in BINARIES if not shutil.which(b)]
    if missing:
        pytest.skip(f"{', '.join(missing)} missing: run `bash deploy/observability.sh install`")
    if not (shutil.which("java") and shutil.which("mvn")):
        pytest.skip("java/mvn missing: `bash deploy/kafka.sh up` installs them as root")
    base = tmp_path_factory.mktemp("ops")
    obs_dir = base / "observability"
    (obs_dir / "rules").mkdir(parents=True)
    # An always-firing rule, `for: 5s` so that Prometheus has found its Alertmanager first.
    (obs_dir / "rules" / "ops-test.yml").write_text(
        yaml.safe_dump(
            {
                "groups": [
                    {
                        "name": "ops-test",
                        "rules": [
                            {
                                "alert": "OpsTestAlwaysFiring",
                                "expr": "vector(1)",
                                "for": "5s",
                                "labels": {"severity": "critical", "job": "ops-test"},
                                "annotations": {"summary": "always firing (ops test)"},
                            }
                        ],
                    }
                ]
            }
        )
    )
    # A fresh database with a table that has dead rows, for the bloat series.
    database = f"ops_{uuid.uuid4().hex[:16]}"
    admin = _conninfo(postgres_url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    slot = f"ops_test_slot_{uuid.uuid4().hex[:8]}"
    service_ports = {s: free_port() for s in SERVICES}
    env = {
        **os.environ,
        "OBS_DIR": str(obs_dir),
        **observability_ports(),
        "OBS_SCRAPE_INTERVAL": "1s",
        "OBS_EVAL_INTERVAL": "1s",
        "OBS_DEPLOYMENT": "embedded",
        "OBS_PG_DSN": exporter_dsn(postgres_url, database),
        "OBS_PG_DATABASES": database,
        "KAFKA_PORT": str(free_port()),
        "KAFKA_CONTROLLER_PORT": str(free_port()),
        "KAFKA_JMX_PORT": str(free_port()),
        "KAFKA_HEAP": "256m",
        "ELECTRIC_KAFKA_DIR": str(base / "kafka"),
        **{f"ELECTRIC_{s.upper()}_METRICS_PORT": str(p) for s, p in service_ports.items()},
    }
    servers = _stand_in_services(service_ports)
    try:
        with psycopg.connect(_conninfo(postgres_url, database), autocommit=True) as conn:
            # No autovacuum on it: the dead rows must stay until Prometheus has seen them.
            conn.execute(
                "CREATE TABLE ops_bloat (id int PRIMARY KEY, pad text)"
                " WITH (autovacuum_enabled = false)"
            )
            conn.execute(
                "INSERT INTO ops_bloat SELECT g, repeat('x', 100) FROM generate_series(1, 2000) g"
            )
            conn.execute("DELETE FROM ops_bloat WHERE id % 2 = 0")
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute("SELECT pg_create_physical_replication_slot(%s)", (slot,))
        kafka = _run(["bash", str(KAFKA_SCRIPT), "up"], env, timeout=240)
        assert kafka.returncode == 0, kafka.stdout + kafka.stderr
        if "WARNING: could not fetch the JMX exporter agent" in kafka.stderr:
            pytest.skip("the JMX exporter agent could not be fetched with Maven (offline?)")
        up = _run(["bash", str(OBSERVABILITY), "up"], env, timeout=300)
        assert up.returncode == 0, up.stdout + up.stderr
        yield Stack(
            env=env,
            obs_dir=obs_dir,
            prometheus=f"http://127.0.0.1:{env['OBS_PROMETHEUS_PORT']}",
            database=database,
            kafka_bootstrap=f"127.0.0.1:{env['KAFKA_PORT']}",
        )
    finally:
        down = _run(["bash", str(OBSERVABILITY), "down"], env, timeout=60)
        kafka_down = _run(["bash", str(KAFKA_SCRIPT), "down"], env, timeout=90)
        for server in servers:
            server.shutdown()
            server.server_close()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots"
                " WHERE slot_name = %s",
                (slot,),
            )
            conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        assert down.returncode == 0, down.stdout + down.stderr
        assert kafka_down.returncode == 0, kafka_down.stdout + kafka_down.stderr
        assert not list((obs_dir / "run").glob("*.pid")), "a process of the stack survived"


def test_exporter_targets_are_up(stack: Stack) -> None:
    def healthy() -> dict[str, str] | None:
        targets = stack.api("targets", state="active")["activeTargets"]
        health = {t["labels"]["job"]: t["health"] for t in targets}
        wanted = ("postgres", "kafka", "kafka-lag", "textfile", "alertmanager", *SERVICES)
        return health if all(health.get(job) == "up" for job in wanted) else None

    health = wait_for("every target up", healthy, 90)
    assert set(SERVICES) <= set(health)


def test_kafka_broker_and_lag_metrics(stack: Stack) -> None:
    topic, group = f"ops-{uuid.uuid4().hex[:8]}", f"ops-group-{uuid.uuid4().hex[:8]}"
    asyncio.run(_kafka_traffic(stack.kafka_bootstrap, topic, group))
    stack.wait_value('kafka_server_kafkaserver_brokerstate{job="kafka"}', 3.0)  # RUNNING
    stack.wait_value(f'kafka_server_brokertopicmetrics_messagesin_total{{topic="{topic}"}}', 5.0)
    stack.wait_value(f'kafka_consumergroup_lag{{consumergroup="{group}",topic="{topic}"}}', 3.0)
    stack.wait_value(f'kafka_consumergroup_current_offset{{consumergroup="{group}"}}', 2.0)
    assert stack.value("sum(kafka_controller_kafkacontroller_offlinepartitionscount)") == 0.0
    assert stack.value("sum(kafka_server_replicamanager_underreplicatedpartitions)") == 0.0
    assert stack.query('kafka_network_requestmetrics_requests_total{request="Produce"}')
    assert stack.query(f'kafka_log_log_size{{topic="{topic}"}}')


def test_postgres_metrics(stack: Stack) -> None:
    assert wait_for("pg_up", lambda: stack.value("pg_up"), 60) == 1.0
    db = stack.database
    commits = wait_for(
        "transactions", lambda: stack.value(f'pg_stat_database_xact_commit{{datname="{db}"}}'), 60
    )
    assert commits > 0
    assert (stack.value("max(pg_settings_max_connections)") or 0) > 0
    assert stack.query(f'pg_stat_activity_count{{datname="{db}"}}')
    table = f'datname="{db}",relname="ops_bloat"'
    stack.wait_value(f"pg_table_bloat_dead_tuples{{{table}}}", 1000.0)
    stack.wait_value(f"pg_table_bloat_dead_ratio{{{table}}}", 0.5)
    assert (stack.value(f"pg_table_bloat_estimated_bloat_bytes{{{table}}}") or 0) > 0
    assert (stack.value("max(pg_replication_slots_summary_total)") or 0) >= 1
    slots = stack.query("pg_replication_slot_active")
    assert any(s["metric"]["slot_name"].startswith("ops_test_slot_") for s in slots)


def test_embedded_process_metrics_are_kept_once(stack: Stack) -> None:
    rss = wait_for(
        "process metrics",
        lambda: stack.query('process_resident_memory_bytes{deployment="embedded"}') or None,
        60,
    )
    assert [r["metric"]["service"] for r in rss] == ["registration"]
    ups = stack.query('electric_service_up{deployment="embedded"}')
    assert sorted(r["metric"]["job"] for r in ups) == sorted(SERVICES)


def test_infra_alert_rules_query_series_that_exist(stack: Stack) -> None:
    """Every metric an infrastructure alert reads is exported by the live exporters."""
    import re

    rules_file = ROOT / "deploy" / "prometheus" / "infra-alerts.yml"
    groups = yaml.safe_load(rules_file.read_text())["groups"]
    names: set[str] = set()
    for group in groups:
        for rule in group["rules"]:
            expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\b(by|on|without)\s*\([^)]*\)", " ", rule["expr"])
            for m in re.finditer(r"\b([a-z_][a-z0-9_]*)\b(?!\s*\()", expr):
                if m.group(1) not in {"and", "or", "unless", "by", "on", "e9"}:
                    names.add(m.group(1))
    assert "kafka_lag_exporter_up" in names and "pg_up" in names
    # The lag series exist only for a consumer group with committed offsets: this test makes
    # its own (it must not rely on another test having run first on this worker). The lag
    # exporter polls the broker on its own schedule; a loaded machine delays it (120 s).
    topic, group = f"ops-rules-{uuid.uuid4().hex[:8]}", f"ops-rules-{uuid.uuid4().hex[:8]}"
    asyncio.run(_kafka_traffic(stack.kafka_bootstrap, topic, group))
    for name in sorted(names):

        def present(n: str = name) -> list[dict[str, Any]] | None:
            return stack.query(f"count({n})") or None

        wait_for(f"series {name}", present, 120)


def test_always_firing_alert_reaches_the_webhook(stack: Stack) -> None:
    alerts_file = stack.obs_dir / "alerts.jsonl"

    def arrived() -> dict[str, Any] | None:
        if not alerts_file.exists():
            return None
        for line in alerts_file.read_text().splitlines():
            alert: dict[str, Any] = json.loads(line)
            if alert["labels"].get("alertname") == "OpsTestAlwaysFiring":
                return alert
        return None

    alert = wait_for("OpsTestAlwaysFiring at the webhook receiver", arrived, 120)
    assert alert["status"] == "firing"
    assert alert["receiver"] == "ops-critical"  # routed by severity
    assert alert["labels"]["environment"] == "local"  # external label added by Prometheus
    assert alert["annotations"]["summary"] == "always firing (ops test)"
