"""docker-compose runs the table service as three instances (issue 17, docs/scaling.md):
``table``, ``table-2`` and ``table-3``, one table database, ownership by partition, each
advertising its own compose name, published on loopback at 50052/50062/50072 (metrics
9102/9112/9122); deploy/tables.sh starts N instances on the same port scheme locally.
Registration, wallet and payout run as two instances each behind one network alias."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import yaml
from electric_platform import config

ROOT = Path(__file__).resolve().parents[3]
INSTANCES = ("table", "table-2", "table-3")
#: Services run as two interchangeable instances, with their gRPC and metrics ports.
TWINS = {"registration": (50051, 9101), "wallet": (50053, 9103), "payout": (50054, 9104)}


def _services() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services: dict[str, Any] = data["services"]
    return services


def test_compose_runs_three_table_instances_on_one_store() -> None:
    services = _services()
    replicas = {n for n, s in services.items() if "electric.replica-of" in (s.get("labels") or {})}
    assert replicas == {"table-2", "table-3", *(f"{n}-2" for n in TWINS)}
    envs = {n: {k: str(v) for k, v in services[n]["environment"].items()} for n in INSTANCES}
    known = config.all_env_var_names()
    for k, name in enumerate(INSTANCES):
        spec, env = services[name], envs[name]
        assert spec["command"] == ["python", "-m", "electric_table"]
        assert set(env) <= known, sorted(set(env) - known)
        assert env["ELECTRIC_TABLE_OWNERSHIP"] == "partitions"
        assert env["ELECTRIC_TABLE_ADVERTISED_ADDRESS"] == f"{name}:50052"
        assert env["ELECTRIC_GRPC_PORT"] == "50052" and env["ELECTRIC_METRICS_PORT"] == "9102"
        # The casino follows partition ownership: every instance hosts its share (`off`
        # is refused with partitions ownership).
        assert env.get("ELECTRIC_TABLE_CASINO", "on") == "on"
        # Same store, same keys and Kafka: one deployment of one service.
        for key in ("DATABASE_URL", "KAFKA_BOOTSTRAP_SERVERS", "ELECTRIC_AUTH_SIGNING_KEY_FILE"):
            assert env[key] == envs["table"][key]
        assert spec["ports"] == [
            f"127.0.0.1:{50052 + 10 * k}:50052",
            f"127.0.0.1:{9102 + 10 * k}:9102",
        ]
    prometheus = services["prometheus"]["depends_on"]
    assert set(INSTANCES) <= set(prometheus)


def test_local_script_uses_the_same_ports(tmp_path: Path) -> None:
    script = ROOT / "deploy" / "tables.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    text = script.read_text()
    assert 'GRPC_BASE="${ELECTRIC_TABLES_GRPC_BASE:-50052}"' in text
    assert 'METRICS_BASE="${ELECTRIC_TABLES_METRICS_BASE:-9102}"' in text
    assert "ELECTRIC_TABLE_OWNERSHIP=partitions" in text
    # Nothing started: status says so (exit 3) and down is a no-op.
    env = {"ELECTRIC_TABLES_VAR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    got = subprocess.run(["bash", str(script), "status"], env=env, capture_output=True)
    assert got.returncode == 3
    assert subprocess.run(["bash", str(script), "down"], env=env).returncode == 0


def test_compose_runs_two_of_registration_wallet_and_payout_behind_one_name() -> None:
    services = _services()
    shared = services["table"]["environment"]
    for name, (grpc_port, metrics_port) in TWINS.items():
        first, second = services[name], services[f"{name}-2"]
        assert second["labels"] == {"electric.replica-of": name}
        assert first["command"] == second["command"]
        assert first["environment"] == second["environment"]  # same store, keys, Kafka
        pool = f"{name}-pool"
        for spec in (first, second):
            assert spec["networks"] == {"default": {"aliases": [pool]}}
        assert first["ports"] == [
            f"127.0.0.1:{grpc_port}:{grpc_port}",
            f"127.0.0.1:{metrics_port}:{metrics_port}",
        ]
        assert second["ports"] == [
            f"127.0.0.1:{grpc_port + 10}:{grpc_port}",
            f"127.0.0.1:{metrics_port + 10}:{metrics_port}",
        ]
        # Every client names the pool (Docker's DNS answers with both; round robin).
        target = f"ELECTRIC_{name.upper()}_TARGET"
        assert shared[target] == f"dns:///{pool}:{grpc_port}"
        assert {name, f"{name}-2"} <= set(services["prometheus"]["depends_on"])
    prometheus = yaml.safe_load((ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    jobs = {j["job_name"]: j["static_configs"][0]["targets"] for j in prometheus["scrape_configs"]}
    for name, (_, metrics_port) in TWINS.items():
        assert jobs[name] == [f"{name}:{metrics_port}", f"{name}-2:{metrics_port}"]
