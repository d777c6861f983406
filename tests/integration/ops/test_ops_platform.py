"""The operations test of issue 15: the four services as separate processes on PostgreSQL and
Kafka with bots playing, Debian's Prometheus and Alertmanager and the exporters
(deploy/observability.sh), then:

- `promtool check config` / `check rules` and `amtool check-config` pass;
- every rule expression evaluates through the Prometheus API, and Prometheus reports every rule
  healthy;
- every panel query of every dashboard returns data over the run (a range query, as Grafana
  asks for its time range), except the few of :func:`allowed_empty`, each with its reason;
- stopping a service brings `ServiceDown`, unbalancing the run's ledger brings
  `LedgerUnbalanced`, both through Alertmanager to the webhook receiver.

Short intervals (scrape 5 s, rule evaluation 1 s) keep it to a few minutes; the alerts' own
`for` (1 min for ServiceDown) is the longest wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from electric_bots.runner import BotRunner, BotRunnerConfig, Targets
from grpc_health.v1 import health_pb2, health_pb2_grpc
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.e2e.platform.platform_cluster import Cluster, run_cluster
from tests.integration.ops.ops_prometheus import (
    PrometheusQueries,
    exporter_dsn,
    observability_ports,
    wait_for,
)
from tests.integration.ops.ops_queries import has_data, panels, rules
from tests.support.auth import ISSUER_KEY

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[3]
OBSERVABILITY = ROOT / "deploy" / "observability.sh"
VERIFY = ROOT / "deploy" / "audit" / "verify_metrics.py"
BINARIES = ("prometheus", "promtool", "prometheus-alertmanager", "amtool")
BINARIES += ("prometheus-postgres-exporter",)
SERVICES = ("registration", "table", "wallet", "payout")
TOURNAMENTS = 6
CLIENT_CODES = "CANCELLED|INVALID_ARGUMENT|NOT_FOUND|ALREADY_EXISTS|PERMISSION_DENIED"
CLIENT_CODES += "|UNAUTHENTICATED|RESOURCE_EXHAUSTED|FAILED_PRECONDITION|ABORTED|OUT_OF_RANGE"


@dataclass
class OpsRun(PrometheusQueries):
    cluster: Cluster
    env: dict[str, str]
    obs_dir: Path
    prometheus: str
    #: When the stack came up (the start of a panel's time range).
    started: float

    def query_range(self, expr: str) -> list[dict[str, Any]]:
        """``expr`` over the run so far, as a Grafana panel asks (its time range, 5 s step).

        The range ends exactly now (the start moves back to a whole number of steps), so a
        series that first appeared in the last few seconds, such as the audit result written
        just before the panels are read, is at a step point."""
        end = time.time()
        start = end - 5 * math.ceil((end - self.started) / 5)
        data = self.api("query_range", query=expr, start=str(start), end=str(end), step="5")
        result: list[dict[str, Any]] = data["result"]
        return result

    def alerts_received(self) -> list[dict[str, Any]]:
        path = self.obs_dir / "alerts.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _play(cluster: Cluster) -> None:
    runner = BotRunner(
        BotRunnerConfig(
            targets=Targets(
                registration=cluster.target("registration"),
                table=cluster.target("table"),
                wallet=cluster.target("wallet"),
            ),
            key=ISSUER_KEY,
            bots=12,
            tiers=("electric-100", "electric-500"),
            mix=(("random", 1),),
            until_finished=TOURNAMENTS,
            seed=15,
            player_prefix=f"ops{uuid.uuid4().hex[:6]}",
        )
    )

    async def play() -> None:
        task = asyncio.create_task(runner.run())
        done, _ = await asyncio.wait({task}, timeout=240)
        if not done:
            runner.stop.set()
            await asyncio.wait({task}, timeout=30)
            raise AssertionError(f"bots stuck: {runner.stats}\n{cluster.logs()}")
        assert task.result().errors == 0, task.result().last_errors

    asyncio.run(play())


def _verify_until_it_passes(sources: list[str], budget: float) -> None:
    """``electric-audit verify`` alone (no metrics written, so no failed result reaches
    Prometheus) until it passes: the outbox relays publish the last events, and the writers
    sign their last checkpoint, a moment after the platform is quiet."""
    deadline = time.monotonic() + budget
    while True:
        proc = subprocess.run(
            [sys.executable, "-m", "electric_audit.cli", "verify", "--json", *sources],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if proc.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(3)
    failed = [line for line in proc.stdout.splitlines() if '"failed": 0' not in line]
    assert proc.returncode == 0, f"{failed}\n{proc.stderr[-3000:]}"


#: The latency panels: a histogram_quantile is a number only in a window where two scrapes of a
#: service saw its calls complete.
LATENCY_PANELS = (
    "Unary call latency p50 / p95 / p99",
    "Streaming call duration p50 / p99 (stream lifetime)",
)


def _calls_between_two_scrapes(run: OpsRun) -> None:
    """Health calls (a unary Check and a Watch stream ended after a moment) on every service
    until each latency panel has a number, for at most 90 s.

    Seen once in CI: the bots' calls all completed while the starved services' scrapes failed
    (their rate panels had data, as zero rates; the two histogram_quantile panels had none).
    What the services' scrapes did during the play is printed, so a run says which it was."""
    during_play = (
        f'avg_over_time(up{{job=~"{"|".join(SERVICES)}"}}[{int(time.time() - run.started) + 1}s])'
    )
    print(f"ops test: share of good scrapes per service: {run.query(during_play)}")
    first_query = {p.title: p.exprs[0] for p in panels() if p.title in LATENCY_PANELS}
    assert set(first_query) == set(LATENCY_PANELS), first_query
    missing = {t for t, expr in first_query.items() if not has_data(run.query_range(expr))}
    deadline = time.monotonic() + 90
    while missing and time.monotonic() < deadline:
        print(
            f"ops test: latency panels without a number yet, health calls made: {sorted(missing)}"
        )
        for service in SERVICES:
            with grpc.insecure_channel(run.cluster.target(service)) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                stub.Check(health_pb2.HealthCheckRequest(), timeout=10)
                watch = stub.Watch(health_pb2.HealthCheckRequest(), timeout=1)
                with contextlib.suppress(grpc.RpcError):  # DEADLINE_EXCEEDED: the stream ended
                    for _ in watch:
                        pass
        time.sleep(5)  # one scrape interval
        missing = {t for t in missing if not has_data(run.query_range(first_query[t]))}


@pytest.fixture(scope="module")
def ops(
    postgres_url: str, kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OpsRun]:
    missing = [b for b in BINARIES if not shutil.which(b)]
    if missing:
        pytest.skip(f"{', '.join(missing)} missing: run `bash deploy/observability.sh install`")
    tmp = tmp_path_factory.mktemp("ops-platform")
    obs_dir = tmp / "observability"
    extra = {"ELECTRIC_TABLE_HAND_PAUSE_MS": "0", "ELECTRIC_LOG_LEVEL": "INFO"}
    with run_cluster(postgres_url, kafka_bootstrap, tmp, extra_env=extra) as cluster:
        u = make_url(postgres_url)
        databases = [make_url(p.db_url).database for p in cluster.procs.values()]  # type: ignore[attr-defined]
        env = {
            **os.environ,
            "OBS_DIR": str(obs_dir),
            "OBS_DEPLOYMENT": "processes",
            **observability_ports(),
            # Not shorter: a scrape's timeout is its interval, and a busy machine answers late.
            "OBS_SCRAPE_INTERVAL": "5s",
            "OBS_EVAL_INTERVAL": "1s",
            "OBS_PG_DSN": exporter_dsn(postgres_url, str(u.database)),
            "OBS_PG_DATABASES": ",".join(str(d) for d in databases),
            "KAFKA_PORT": kafka_bootstrap.rsplit(":", 1)[1],
            # This run's groups only: the shared broker holds every other run's topics too.
            "OBS_KAFKA_LAG_GROUPS": f"^{re.escape(cluster.namespace)}\\.",
            **{
                f"ELECTRIC_{name.upper()}_METRICS_PORT": str(proc.metrics_port)  # type: ignore[attr-defined]
                for name, proc in cluster.procs.items()
            },
        }
        up = subprocess.run(
            ["bash", str(OBSERVABILITY), "up"], env=env, capture_output=True, text=True, timeout=300
        )
        try:
            assert up.returncode == 0, up.stdout + up.stderr
            prometheus = f"http://127.0.0.1:{env['OBS_PROMETHEUS_PORT']}"
            run = OpsRun(cluster, env, obs_dir, prometheus, time.time())
            # Play only once Prometheus has scraped every service: a rate or increase needs a
            # sample from before the first tournament (on a starved machine, the whole run
            # could otherwise fall before the first scrape and leave the rate panels empty).
            every_service = f'count(up{{job=~"{"|".join(SERVICES)}"}} == 1) == {len(SERVICES)}'
            wait_for("a scrape of every service", lambda: run.query(every_service) or None, 120)
            _play(cluster)
            # Quiet first: no live table, every result awarded and every prize credited (two
            # scrapes in a row), so the audit sees a finished run.
            quiet = (
                "max_over_time(sum(electric_table_live_tables)[11s:1s])"
                " + max_over_time(sum(electric_payout_prizes_uncredited)[11s:1s])"
                " + max_over_time(sum(electric_payout_results_unawarded)[11s:1s]) == 0"
            )
            wait_for("a quiet platform", lambda: run.query(quiet) or None, 120)
            # The periodic audit, once: electric-audit verify over the run's four stores, its
            # Kafka topics and the services' signed checkpoints (their public keys are in
            # tmp/keys, written by run_cluster). The run's own namespace only: the shared
            # broker holds other runs' topics and checkpoints.
            sources = [
                *(f"--store={proc.db_url}" for proc in cluster.procs.values()),  # type: ignore[attr-defined]
                *(f"--kafka={kafka_bootstrap}", f"--namespace={cluster.namespace}"),
                f"--checkpoint-keys={tmp / 'keys'}",
            ]
            _verify_until_it_passes(sources, budget=150)
            verify = subprocess.run(
                [sys.executable, str(VERIFY), "--out", str(obs_dir / "textfile"), "--", *sources],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert verify.returncode == 0, verify.stdout + verify.stderr
            checked = {
                str(r["check"]): int(r["checked"])
                for r in (json.loads(x) for x in verify.stdout.splitlines() if x.startswith("{"))
                if "check" in r
            }
            # The topics and the checkpoints were really read, not only the stores.
            assert min(checked[c] for c in ("store-topic", "checkpoints", "anchor-topic")) > 0
            # Prometheus has the credits and the audit result.
            wait_for(
                "finish-to-credit observations",
                lambda: run.value("sum(electric_payout_finish_to_credit_seconds_count)") or None,
                60,
            )
            wait_for("verify result", lambda: run.query("electric_audit_verify_success"), 30)
            try:  # and in a panel's range query (see allowed_empty)
                wait_for(
                    "verify result in a range query",
                    lambda: has_data(run.query_range("electric_audit_verify_success")) or None,
                    30,
                )
            except AssertionError as exc:
                print(f"ops test: {exc}")
            # The broker's exporters (JMX agent every 30 s, lag exporter every 10 s) get a
            # bounded chance; allowed_empty() says why when they did not answer.
            for expr in ('sum(up{job="kafka"}) > 0', "count(kafka_consumergroup_lag) > 0"):
                try:
                    wait_for(expr, lambda e=expr: run.query(e) or None, 60)
                except AssertionError as exc:
                    print(f"ops test: {exc}")
            _calls_between_two_scrapes(run)
            yield run
        finally:
            down = subprocess.run(
                ["bash", str(OBSERVABILITY), "down"], env=env, capture_output=True, text=True
            )
            assert down.returncode == 0, down.stdout + down.stderr
            assert not list((obs_dir / "run").glob("*.pid")), "a process of the stack survived"


def test_promtool_and_amtool_accept_the_configs(ops: OpsRun) -> None:
    checks = [
        ["promtool", "check", "config", str(ops.obs_dir / "prometheus.yml")],
        [
            "promtool",
            "check",
            "rules",
            *(str(p) for p in (ROOT / "deploy/prometheus").glob("*alerts.yml")),
        ],
        ["amtool", "check-config", str(ops.obs_dir / "alertmanager.yml")],
    ]
    for args in checks:
        result = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, f"{args}: {result.stdout}{result.stderr}"


def test_every_rule_evaluates_and_is_healthy(ops: OpsRun) -> None:
    for _name, expr in rules():
        ops.query(expr)  # a PromQL error fails in api()
    loaded = {r["name"]: r for g in ops.api("rules")["groups"] for r in g["rules"]}
    assert {name for name, _ in rules()} <= set(loaded)
    unhealthy = {n: r.get("lastError") for n, r in loaded.items() if r["health"] != "ok"}
    assert not unhealthy, unhealthy


def allowed_empty(ops: OpsRun) -> dict[str, str]:
    """Panels that may show nothing in this run, each with the reason (decided from what the
    run did, so a panel that should have data is never excused)."""
    reasons = {"Firing alerts": "nothing fires in a healthy run (the alert test makes it fire)"}
    if not ops.value('sum(electric_registration_tables_filled_total{multiplier!="2"}) > 0'):
        reasons["Prize reserve drift: prizes paid / net buy-ins"] = (
            "only 2x drawn: the prize reserve paid nothing out"
        )
    # The audit result is one scrape of the textfile exporter written at the end of the run.
    # Seen by the instant query (asserted in test_every_panel_returns_data) but, on a starved
    # CI machine, not yet by the panels' range query (follow-up: docs/operations.md).
    verify_range = has_data(ops.query_range("electric_audit_verify_success"))
    if ops.value("electric_audit_verify_success") is not None and not verify_range:
        for title in (
            "Last electric-audit verify: 1 pass, 0 fail",
            "Age of the last verify run (h)",
            "Failed items per check (last verify)",
        ):
            reasons[title] = "the single verify scrape is not yet in the range query"
    jmx = "the broker's JMX exporter agent never answered within its 30 s scrape timeout"
    if not ops.value('max_over_time(up{job="kafka"}[15m])'):
        for title in (
            "Broker state (3 = running)",
            "Active controllers, offline and under-replicated partitions",
            "Log size by topic (bytes)",
        ):
            reasons[title] = f"{jmx} (absent, or a starved broker)"
    # A rate needs two scrapes within its window (2 min).
    if (ops.value('max_over_time(sum_over_time(up{job="kafka"}[2m])[15m:15s])') or 0) < 2:
        for title in ("Messages in / s by topic", "Produce / fetch requests / s"):
            reasons[title] = f"{jmx} twice within 2 min (a starved broker)"
    if not ops.value("max_over_time(kafka_lag_exporter_up[15m])"):
        reasons["Consumer-group lag by group and topic"] = (
            "the lag exporter's polls of the broker all failed (see its log)"
        )
    return reasons


def test_every_panel_returns_data(ops: OpsRun) -> None:
    every = panels()
    titles = {p.title for p in every}
    assert len(every) > 60
    reasons = allowed_empty(ops)
    assert set(reasons) <= titles, set(reasons) - titles
    empty = []
    quiet: set[str] = set()
    for panel in every:
        assert panel.exprs, panel
        data = any(has_data(ops.query_range(expr)) for expr in panel.exprs)
        if not data:
            quiet.add(panel.title)
        if not data and panel.title not in reasons:
            empty.append(f"{panel.dashboard}: {panel.title}: {panel.exprs}")
    assert not empty, "panels without data:\n" + "\n".join(empty)
    excused = {t: r for t, r in reasons.items() if t in quiet}
    print(f"panels: {len(every)}, empty with a reason: {excused}")
    # The signals of issue 15 in particular.
    assert (ops.value('sum(grpc_server_handled_total{grpc_code="OK"})') or 0) > 0
    assert ops.value("sum(electric_wallet_ledger_posted_cents)") == 0.0
    assert (ops.value("sum(electric_table_tournament_duration_seconds_count)") or 0) >= TOURNAMENTS
    assert ops.value("electric_audit_verify_success") == 1.0
    # process metrics once per process: four processes, four resident-memory series
    services = 'job=~"registration|table|wallet|payout"'
    assert len(ops.query(f"process_resident_memory_bytes{{{services}}}")) == len(SERVICES)


def _arrived(ops: OpsRun, alertname: str, job: str) -> dict[str, Any] | None:
    for alert in ops.alerts_received():
        labels = alert["labels"]
        wanted = labels.get("alertname") == alertname and labels.get("job") == job
        if wanted and alert["status"] == "firing":
            return alert
    return None


def test_service_down_and_unbalanced_ledger_reach_the_webhook(ops: OpsRun) -> None:
    payout = ops.cluster.procs["payout"].popen  # type: ignore[attr-defined]
    payout.terminate()
    payout.wait(30)
    wallet_url = ops.cluster.procs["wallet"].db_url  # type: ignore[attr-defined]
    engine = create_engine(wallet_url)
    try:
        with engine.begin() as conn:  # one cent out of nowhere: no transfer made it
            conn.execute(
                text("UPDATE wallet_accounts SET posted = posted + 1 WHERE account_id = :a"),
                {"a": "house:promotions"},
            )
    finally:
        engine.dispose()
    ledger = wait_for("LedgerUnbalanced", lambda: _arrived(ops, "LedgerUnbalanced", "wallet"), 90)
    assert ledger["receiver"] == "ops-critical"
    assert ledger["annotations"]["summary"] == "The wallet's ledger does not balance (1 cents)"
    down = wait_for("ServiceDown", lambda: _arrived(ops, "ServiceDown", "payout"), 150)
    assert down["receiver"] == "ops-critical"
    assert down["labels"]["severity"] == "critical"
    firing = {r["metric"]["alertname"] for r in ops.query('ALERTS{alertstate="firing"}')}
    assert {"ServiceDown", "LedgerUnbalanced"} <= firing
