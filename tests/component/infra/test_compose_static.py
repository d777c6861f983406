"""Static checks of docker-compose.yml, Prometheus and Grafana provisioning (no Docker needed).

Docker cannot run on our machines, so everything compose would wire is checked against the
code: the services and their modules, the environment variables and ports
electric_platform.config reads, the databases, the scrape targets and the dashboard metrics.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from electric_platform import config
from electric_platform.server import ServiceHost, SetupFn
from electric_registration import metrics as registration_metrics
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[3]
COMPOSE_FILE = ROOT / "docker-compose.yml"
PROMETHEUS_FILE = ROOT / "deploy" / "prometheus" / "prometheus.yml"
ALERTS_FILE = ROOT / "deploy" / "prometheus" / "alerts.yml"
GRAFANA = ROOT / "deploy" / "grafana"
DASHBOARDS = sorted((GRAFANA / "dashboards").glob("*.json"))
POSTGRES_INIT = ROOT / "deploy" / "postgres" / "init"

# ${VAR} / ${VAR:-default} / ${VAR-default} interpolation, as docker compose does it.
_INTERPOLATION = re.compile(r"\$\{(?P<name>\w+)(?::?-(?P<default>[^}]*))?\}")


def _load_yaml(path: Path) -> Any:
    with path.open() as f:
        return yaml.safe_load(f)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = _load_yaml(COMPOSE_FILE)
    assert isinstance(data, dict)
    return data


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    result = compose["services"]
    assert isinstance(result, dict)
    return result


def _interpolate(value: object) -> str:
    return _INTERPOLATION.sub(lambda m: m.group("default") or "", str(value))


def _command_module(spec: dict[str, Any]) -> str | None:
    command = spec.get("command")
    if isinstance(command, str):
        command = command.split()
    if isinstance(command, list) and len(command) == 3 and command[:2] == ["python", "-m"]:
        return str(command[2])
    return None


def app_services(services: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The compose services that run one of our Python services (``python -m electric_*``),
    without the extra instances (label ``electric.replica-of``: the table service's, issue 17;
    checked in test_compose_table_replicas.py)."""
    return {
        name: spec
        for name, spec in services.items()
        if _command_module(spec) in {f"electric_{s}" for s in config.SERVICES}
        and "electric.replica-of" not in (spec.get("labels") or {})
    }


def _environment(spec: dict[str, Any]) -> dict[str, str]:
    env = spec.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {str(k): _interpolate(v) for k, v in env.items()}


def _port_mappings(spec: dict[str, Any]) -> list[tuple[str, int, int]]:
    out = []
    for item in spec.get("ports") or []:
        parts = str(item).split(":")
        assert len(parts) == 3, f"port {item!r} must be published as 127.0.0.1:HOST:CONTAINER"
        out.append((parts[0], int(parts[1]), int(parts[2])))
    return out


# --- PromQL ---------------------------------------------------------------------------------

_PROMQL_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
}


def promql_metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (functions, labels and keywords removed)."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)  # label matchers
    s = re.sub(r"\[[^\]]*\]", " ", s)  # range selectors
    s = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    s = re.sub(r"\$\w+", " ", s)  # Grafana variables
    names = set()
    for m in re.finditer(r"(?<![\w.$])([A-Za-z_:][\w:]*)(\s*\()?", s):
        if m.group(2) or m.group(1).lower() in _PROMQL_KEYWORDS:
            continue
        names.add(m.group(1))
    return names


def _series_names(registry: Any) -> set[str]:
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_count", "_sum", "_created"),
        "summary": ("", "_count", "_sum", "_created"),
        "info": ("_info",),
        "gauge": ("",),
    }
    names = set()
    for family in registry.collect():
        for suffix in suffixes.get(family.type, ("",)):
            names.add(family.name + suffix)
    return names


#: Series Prometheus itself makes: scrape health and the state of alerting rules.
PROMETHEUS_SERIES = {"up", "ALERTS", "ALERTS_FOR_STATE"}
#: Series of the periodic `electric-audit verify` job (deploy/audit/verify_metrics.py writes
#: them as a text file; deploy/observability/textfile_exporter.py serves it).
AUDIT_SERIES = set(
    re.findall(
        r'"(electric_audit_verify_\w+)"', (ROOT / "deploy/audit/verify_metrics.py").read_text()
    )
)
#: Dashboards of the infrastructure exporters (Kafka, PostgreSQL): their series are checked
#: against the live exporters by tests/integration/ops/, not against the services.
SERVICE_DASHBOARDS = [p for p in DASHBOARDS if p.name != "electric-infra.json"]


async def _exported_by_running_services(var_dir: Path) -> dict[str, set[str]]:
    """Start the four services in this process (SQLite, in-process bus, any free gRPC port,
    no /metrics server) and read every series name their registries export."""
    from electric_payout.app import setup as payout_setup
    from electric_registration.app import setup as registration_setup
    from electric_table.app import setup as table_setup
    from electric_wallet.app import setup as wallet_setup

    from tests.support.auth import auth_env

    setups: dict[str, SetupFn] = {
        "wallet": wallet_setup,
        "registration": registration_setup,
        "table": table_setup,
        "payout": payout_setup,
    }
    env = {"ELECTRIC_VAR_DIR": str(var_dir), "ELECTRIC_LOG_LEVEL": "WARNING", **auth_env()}
    for service in setups:
        env[f"ELECTRIC_{service.upper()}_GRPC_PORT"] = "0"
        env[f"ELECTRIC_{service.upper()}_METRICS_PORT"] = "-1"
    hosts: list[ServiceHost] = []
    try:
        for service, setup in setups.items():  # wallet first: the others call it
            host = ServiceHost(config.load_config(service, env), setup)
            hosts.append(host)
            await host.start()
            env[f"ELECTRIC_{service.upper()}_TARGET"] = f"127.0.0.1:{host.grpc_port}"
        return {host.name: _series_names(host.metrics.registry) for host in hosts}
    finally:
        for host in reversed(hosts):
            await host.stop(0)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, set[str]]:
    """Series names per service, from the registries of the services really running."""
    return asyncio.run(_exported_by_running_services(tmp_path_factory.mktemp("services")))


@pytest.fixture(scope="module")
def alert_rules() -> dict[str, Any]:
    data = _load_yaml(ALERTS_FILE)
    assert isinstance(data, dict)
    return data


def _rules(alert_rules: dict[str, Any]) -> list[dict[str, Any]]:
    return [rule for group in alert_rules["groups"] for rule in group["rules"]]


def recorded_names(alert_rules: dict[str, Any]) -> set[str]:
    """Series names defined by the recording rules of alerts.yml."""
    return {str(rule["record"]) for rule in _rules(alert_rules) if "record" in rule}


def _dashboard_exprs(dashboard: dict[str, Any]) -> list[str]:
    exprs = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            exprs.extend(t["expr"] for t in panel.get("targets", []) if t.get("expr"))
            walk(panel.get("panels", []))

    walk(dashboard.get("panels", []))
    for var in dashboard.get("templating", {}).get("list", []):
        if var.get("type") == "query":
            query = var.get("query")
            exprs.append(query["query"] if isinstance(query, dict) else str(query))
    return exprs


# --- compose --------------------------------------------------------------------------------


def test_every_compose_service_has_build_or_image(services: dict[str, dict[str, Any]]) -> None:
    assert services
    for name, spec in services.items():
        assert spec.get("build") or spec.get("image"), f"service {name} has neither build nor image"
        if spec.get("build"):
            context = spec["build"] if isinstance(spec["build"], str) else spec["build"]["context"]
            assert (ROOT / context / "Dockerfile").is_file()


def test_compose_runs_exactly_the_four_services(services: dict[str, dict[str, Any]]) -> None:
    apps = app_services(services)
    assert sorted(apps) == sorted(config.SERVICES)
    for name, spec in apps.items():
        assert _command_module(spec) == f"electric_{name}"


@pytest.mark.parametrize("service", config.SERVICES)
def test_service_command_names_a_runnable_module(
    services: dict[str, dict[str, Any]], service: str
) -> None:
    module = _command_module(services[service])
    assert module is not None
    package_dir = ROOT / "services" / service / module
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, f"{module} is not importable"
    assert Path(spec.origin).resolve().parent == package_dir.resolve()
    assert (package_dir / "__main__.py").is_file(), f"`python -m {module}` needs a __main__.py"


def test_depends_on_names_existing_services(services: dict[str, dict[str, Any]]) -> None:
    for name, spec in services.items():
        for dep in spec.get("depends_on") or []:
            assert dep in services, f"{name} depends on unknown service {dep}"


def test_service_environment_is_what_config_reads(services: dict[str, dict[str, Any]]) -> None:
    known = config.all_env_var_names()
    for name, spec in app_services(services).items():
        env = _environment(spec)
        unknown = set(env) - known
        assert not unknown, f"{name} sets variables no service reads: {sorted(unknown)}"
        for required in (
            "DATABASE_URL",
            "KAFKA_BOOTSTRAP_SERVERS",
            "ELECTRIC_AUTH_JWKS_FILE",
            "ELECTRIC_AUTH_SIGNING_KEY_FILE",
        ):
            assert env.get(required), f"{name} must set {required}"


@pytest.mark.parametrize("service", config.SERVICES)
def test_service_config_resolves_to_the_compose_wiring(
    services: dict[str, dict[str, Any]], service: str
) -> None:
    env = _environment(services[service])
    cfg = config.load_config(service, env)
    assert cfg.grpc_host == "0.0.0.0" and cfg.metrics_host == "0.0.0.0"
    assert cfg.grpc_port == config.DEFAULT_GRPC_PORTS[service]
    assert cfg.metrics_port == config.DEFAULT_METRICS_PORTS[service]
    # Keys come from the `keys` init service's volume, mounted read-only.
    assert env["ELECTRIC_AUTH_JWKS_FILE"] == "/keys/jwks.json"
    assert env["ELECTRIC_AUTH_SIGNING_KEY_FILE"] == f"/keys/{service}.jwk.json"
    assert "authkeys:/keys:ro" in services[service]["volumes"]
    assert services[service]["depends_on"]["keys"]["condition"] == (
        "service_completed_successfully"
    )
    assert services["keys"]["command"][:3] == ["python", "-m", "electric_platform.keys"]
    assert "authkeys:/keys" in services["keys"]["volumes"]
    url = make_url(cfg.database_url)
    assert url.drivername == "postgresql+psycopg"
    assert url.host in services and url.port == 5432
    assert url.database == f"electric_{service}"
    for server in cfg.kafka_bootstrap_servers.split(","):
        host, port = server.rsplit(":", 1)
        assert host in services
        listeners = str(services[host]["environment"]["KAFKA_ADVERTISED_LISTENERS"])
        assert f"//{host}:{port}" in listeners
    for other in config.SERVICES:
        port, target = config.DEFAULT_GRPC_PORTS[other], cfg.target(other)
        if not target.startswith("dns:///"):
            assert target == f"{other}:{port}"
            continue
        # A pool of instances behind one network alias (issue 17): `other` and its twins.
        pool, _, pool_port = target.removeprefix("dns:///").rpartition(":")
        assert int(pool_port) == port
        members = {
            name
            for name, spec in services.items()
            if pool in ((spec.get("networks") or {}).get("default") or {}).get("aliases", [])
        }
        assert other in members and len(members) >= 2, (pool, members)


def test_every_service_has_its_own_database(services: dict[str, dict[str, Any]]) -> None:
    urls = [_environment(spec)["DATABASE_URL"] for spec in app_services(services).values()]
    databases = {make_url(u).database for u in urls}
    assert len(databases) == len(urls)
    created: set[str] = set()
    for sql in POSTGRES_INIT.glob("*.sql"):
        created |= set(re.findall(r"CREATE DATABASE (\w+)", sql.read_text(), flags=re.IGNORECASE))
    assert databases <= created
    mounts = [str(v) for v in services["postgres"].get("volumes", [])]
    assert "./deploy/postgres/init:/docker-entrypoint-initdb.d:ro" in mounts
    # The local script (deploy/postgres.sh) creates the same databases.
    script = (ROOT / "deploy" / "postgres.sh").read_text()
    local = re.search(r"^SERVICE_DBS=\(([^)]*)\)", script, flags=re.MULTILINE)
    assert local is not None
    assert set(local.group(1).split()) == created


def test_port_mappings_match_config_defaults(services: dict[str, dict[str, Any]]) -> None:
    for name, spec in services.items():
        for host_ip, _, _ in _port_mappings(spec):
            assert host_ip == "127.0.0.1", f"{name} publishes a port beyond loopback"
    for name, spec in app_services(services).items():
        expected = {config.DEFAULT_GRPC_PORTS[name], config.DEFAULT_METRICS_PORTS[name]}
        mappings = _port_mappings(spec)
        assert {container for _, _, container in mappings} == expected
        assert all(host == container for _, host, container in mappings)


def test_kafka_is_apache_3_9_and_versions_agree(services: dict[str, dict[str, Any]]) -> None:
    image = str(services["kafka"]["image"])
    repo, tag = image.rsplit(":", 1)
    assert repo == "apache/kafka"
    assert re.fullmatch(r"3\.9\.\d+", tag)
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    pom = (ROOT / "deploy" / "kafka" / "pom.xml").read_text()
    assert f"<kafka.version>{tag}</kafka.version>" in pom
    test_infra = (ROOT / "tests" / "support" / "infra.py").read_text()
    assert f'KAFKA_IMAGE = "{image}"' in test_infra


def test_dockerfile_copies_what_exists() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    sources = []
    for line in dockerfile.splitlines():
        if line.startswith("COPY ") and "--from" not in line:
            sources.extend(line.split()[1:-1])
    assert sources
    for src in sources:
        assert (ROOT / src).exists(), f"Dockerfile copies missing {src}"


# --- Prometheus and Grafana -----------------------------------------------------------------


def test_prometheus_scrapes_every_service_metrics_port(services: dict[str, dict[str, Any]]) -> None:
    prom = _load_yaml(PROMETHEUS_FILE)
    jobs = {job["job_name"]: job for job in prom["scrape_configs"]}
    for name in app_services(services):
        assert name in jobs, f"no scrape job for {name}"
        targets = [t for sc in jobs[name]["static_configs"] for t in sc["targets"]]
        replicas = [
            r
            for r, spec in services.items()
            if (spec.get("labels") or {}).get("electric.replica-of") == name
        ]
        port = config.DEFAULT_METRICS_PORTS[name]
        assert targets == [f"{n}:{port}" for n in (name, *replicas)]
    mounts = [str(v) for v in services["prometheus"]["volumes"]]
    assert "./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro" in mounts


def test_grafana_provisioning_is_wired(services: dict[str, dict[str, Any]]) -> None:
    mounts = dict(str(v).rsplit(":", 1)[0].split(":", 1) for v in services["grafana"]["volumes"])
    assert mounts["./deploy/grafana/provisioning"] == "/etc/grafana/provisioning"
    datasources = _load_yaml(GRAFANA / "provisioning" / "datasources" / "prometheus.yml")
    (source,) = datasources["datasources"]
    assert source["type"] == "prometheus"
    assert source["url"] == "http://prometheus:9090" and "prometheus" in services
    providers = _load_yaml(GRAFANA / "provisioning" / "dashboards" / "dashboards.yml")
    (provider,) = providers["providers"]
    assert mounts["./deploy/grafana/dashboards"] == provider["options"]["path"]
    assert DASHBOARDS
    for path in DASHBOARDS:
        dashboard = json.loads(path.read_text())
        for panel in dashboard["panels"]:
            if panel["type"] != "row":
                assert panel["datasource"]["uid"] == source["uid"], f"{path.name}: {panel['title']}"


@pytest.mark.parametrize("path", SERVICE_DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_queries_only_metrics_the_services_export(
    path: Path, exported: dict[str, set[str]], alert_rules: dict[str, Any]
) -> None:
    dashboard = json.loads(path.read_text())
    exprs = _dashboard_exprs(dashboard)
    assert exprs
    known = (
        set().union(*exported.values())
        | recorded_names(alert_rules)
        | PROMETHEUS_SERIES
        | AUDIT_SERIES
    )
    for expr in exprs:
        unknown = promql_metric_names(expr) - known
        assert not unknown, f"{path.name}: {expr!r} queries metrics nobody exports: {unknown}"
    used = set().union(*(promql_metric_names(e) for e in exprs))
    assert "grpc_server_handled_total" in used and "grpc_server_handling_seconds_bucket" in used
    # Every service's business metrics are on the dashboard.
    for service in config.SERVICES:
        assert any(name.startswith(f"electric_{service}_") for name in used), service


def test_every_service_exports_its_metrics(exported: dict[str, set[str]]) -> None:
    assert sorted(exported) == sorted(config.SERVICES)
    for service, names in exported.items():
        assert {"grpc_server_handled_total", "electric_service_up"} <= names, service
        assert "electric_outbox_unsent_events" in names, service
        assert "electric_eventlog_published_total" in names, service
    for service in ("registration", "table", "payout"):  # the ones that consume events
        assert "electric_eventlog_consumed_total" in exported[service]
        assert "electric_eventlog_consumer_lag" in exported[service]
        assert "electric_eventlog_dead_letters_total" in exported[service]
    assert "electric_registration_multiplier_configured_probability" in exported["registration"]
    assert "electric_registration_tables_filled_total" in exported["registration"]
    assert "electric_registration_wallet_ops_oldest_pending_age_seconds" in exported["registration"]
    assert "electric_wallet_posted_cents_total" in exported["wallet"]
    assert "electric_table_overdue_seconds" in exported["table"]
    assert "electric_payout_credited_cents_total" in exported["payout"]
    assert "electric_payout_prize_check_failures_total" in exported["payout"]
    assert "electric_payout_tournaments_held" in exported["payout"]


def test_alert_rules_query_only_exported_or_recorded_metrics(
    exported: dict[str, set[str]], alert_rules: dict[str, Any]
) -> None:
    known = set().union(*exported.values()) | PROMETHEUS_SERIES | AUDIT_SERIES
    defined: set[str] = set()
    for group in alert_rules["groups"]:
        for rule in group["rules"]:
            names = promql_metric_names(str(rule["expr"]))
            assert names, rule
            # A recording rule is used only after it is defined (same group: evaluated in
            # order, so the alert sees this evaluation's value).
            unknown = names - known - defined
            assert not unknown, f"{rule.get('alert') or rule['record']}: unknown {unknown}"
            if "record" in rule:
                defined.add(str(rule["record"]))


def test_alert_rules_are_complete(alert_rules: dict[str, Any]) -> None:
    alerts = [rule for rule in _rules(alert_rules) if "alert" in rule]
    names = [rule["alert"] for rule in alerts]
    assert len(names) == len(set(names))
    for rule in alerts:
        assert str(rule.get("expr", "")).strip(), rule["alert"]
        assert re.fullmatch(r"\d+[smhd]", str(rule.get("for", ""))), rule["alert"]
        assert rule.get("labels", {}).get("severity") in {"critical", "warning"}, rule["alert"]
        assert str(rule.get("annotations", {}).get("summary", "")).strip(), rule["alert"]
    for rule in _rules(alert_rules):
        assert ("alert" in rule) != ("record" in rule), rule
        if "record" in rule:
            assert re.fullmatch(r"[a-z_]+:[a-z0-9_]+(:[a-z0-9_]+)?", rule["record"]), rule
    # What operations asked for (docs: deploy/grafana/README.md "Alerts").
    assert {
        "MultiplierFrequencyDeviation",
        "RareMultiplierExcess",
        "PrizeReserveBelowFloor",
        "PrizeReserveDrift",
        "OutboxBacklog",
        "ConsumerLag",
        "DeadLetters",
        "TableOverdue",
        "ServiceDown",
        "GrpcServerErrors",
        "PrizeCheckFailed",
        "WalletWorkPendingTooLong",
    } <= set(names)


def test_prometheus_loads_the_alert_rules(services: dict[str, dict[str, Any]]) -> None:
    prom = _load_yaml(PROMETHEUS_FILE)
    # infra-alerts.yml: Kafka and PostgreSQL (checked in tests/integration/ops/).
    assert prom["rule_files"] == ["/etc/prometheus/alerts.yml", "/etc/prometheus/infra-alerts.yml"]
    mounts = [str(v) for v in services["prometheus"]["volumes"]]
    assert "./deploy/prometheus/alerts.yml:/etc/prometheus/alerts.yml:ro" in mounts
    assert "./deploy/prometheus/infra-alerts.yml:/etc/prometheus/infra-alerts.yml:ro" in mounts


def test_alert_rules_behave_under_promtool() -> None:
    """The scenarios of deploy/prometheus/alerts_test.yml (configured frequencies, skews,
    rare excess, low counts, stuck table, backlog, service down, reserve floor) through
    Prometheus' own rule engine. Needs a ``promtool`` binary (PATH or $PROMTOOL): machines
    without one skip it; the Python model of the multiplier rules is tested regardless."""
    promtool = os.environ.get("PROMTOOL") or shutil.which("promtool")
    if not promtool:
        pytest.skip("no promtool binary (set PROMTOOL or put promtool on PATH)")
    result = subprocess.run(
        [promtool, "test", "rules", str(ALERTS_FILE.with_name("alerts_test.yml"))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    check = subprocess.run(
        [promtool, "check", "rules", str(ALERTS_FILE)], capture_output=True, text=True, timeout=60
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_multiplier_alert_thresholds_are_the_python_ones(alert_rules: dict[str, Any]) -> None:
    """The PromQL rules and electric_registration.metrics.multiplier_deviation_alerts (whose
    behaviour is tested in tests/component/registration) use the same thresholds."""
    rules = {rule.get("alert"): " ".join(str(rule["expr"]).split()) for rule in _rules(alert_rules)}
    z = f"{registration_metrics.Z_LIMIT:g}"
    var = f"{registration_metrics.MIN_VARIANCE:g}"
    rare = f"{registration_metrics.RARE_MIN_DRAWS:g}"
    assert rules["MultiplierFrequencyDeviation"] == (
        f"abs(electric:multiplier_draws:zscore1d) > {z}"
        f" and on (multiplier) electric:multiplier_draws:variance1d >= {var}"
    )
    assert rules["RareMultiplierExcess"] == (
        f"electric:multiplier_draws:zscore1d > {z}"
        f" and on (multiplier) electric:multiplier_draws:increase1d >= {rare}"
        f" and on (multiplier) electric:multiplier_draws:variance1d < {var}"
    )
    records = {
        rule["record"]: " ".join(str(rule["expr"]).split())
        for rule in _rules(alert_rules)
        if "record" in rule
    }
    assert records["electric:multiplier_draws:variance1d"] == (
        "electric:multiplier_draws:expected1d"
        " * on (multiplier) (1 - electric:multiplier_configured_probability)"
    )
    assert records["electric:multiplier_draws:zscore1d"] == (
        "(electric:multiplier_draws:increase1d"
        " - on (multiplier) electric:multiplier_draws:expected1d)"
        " / on (multiplier) sqrt(electric:multiplier_draws:variance1d)"
    )


def test_promql_metric_name_extraction() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (le, job) (rate(a_seconds_bucket{job=~"$service",'
        'code!="OK"}[$__rate_interval]))) / clamp_min(sum without (x) (b_total offset 5m), 1e-9)'
        " and on (job) up"
    )
    assert promql_metric_names(expr) == {"a_seconds_bucket", "b_total", "up"}
    expr = "electric:x:rate1d * on () group_left () scalar(sum(c_total)) / on (m) sqrt(d) > 1e-9"
    assert promql_metric_names(expr) == {"electric:x:rate1d", "c_total", "d"}
