"""Issue 15 items 1-2 without a cluster: the counters start at 0, the new signals compute what
they say, and the periodic-job helpers (electric-audit verify → text file → HTTP) work."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest
from electric.table.v1 import events_pb2 as table_events
from electric_domain.tournament import default_config
from electric_domain.tournament import events as dev
from electric_payout.metrics import PayoutMetrics
from electric_payout.store import tables as payout_tables
from electric_platform.config import load_config
from electric_platform.server import ServiceHost
from electric_registration.metrics import RegistrationMetrics
from electric_table.casino.metrics import GAMES, CasinoMetrics, theoretical_rtp
from electric_table.tournament.metrics import TableMetrics
from electric_wallet.metrics import ledger_sums
from electric_wallet.store import tables as wallet_tables
from prometheus_client import CollectorRegistry
from sqlalchemy import create_engine, insert

ROOT = Path(__file__).resolve().parents[3]


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


verify_metrics = _load("ops_verify_metrics", ROOT / "deploy" / "audit" / "verify_metrics.py")
textfile = _load("ops_textfile_exporter", ROOT / "deploy/observability/textfile_exporter.py")


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_registration_counters_start_at_zero_for_every_tier() -> None:
    registry = CollectorRegistry()
    RegistrationMetrics(registry).configure(default_config())
    tiers = [f"electric-{t.buy_in_cents}" for t in default_config().buy_ins]
    assert tiers
    for tier in tiers:
        assert _value(registry, "electric_registration_unregistrations_total", tier=tier) == 0.0
        assert _value(registry, "electric_registration_entries_total", tier=tier) == 0.0


def test_background_restart_counter_starts_at_zero() -> None:
    env = {"ELECTRIC_METRICS_PORT": "-1", "ELECTRIC_DATABASE_URL": "sqlite://"}
    host = ServiceHost(load_config("table", env), None)

    async def task() -> None:
        return None

    host.add_background("outbox-relay", task, restart=True)
    registry = host.metrics.registry
    assert _value(registry, "electric_background_restarts_total", task="outbox-relay") == 0.0


def test_table_metrics_count_electric_mode_and_tournament_length() -> None:
    registry = CollectorRegistry()
    m = TableMetrics(registry)
    start = 1_700_000_000_000

    def hand(no: int, electric: bool) -> dev.HandStarted:
        return dev.HandStarted(no, start, 0, 1, 2, 1, 10, 20, 0, electric, (1500,) * 3, "c")

    events: list[object] = [hand(1, False), dev.ElectricModeStarted(2, start), hand(2, True)]
    m.observe(events, start)
    finished = dev.TournamentFinished(0, ((1,), (2,), (3,)), (300, 0, 0), 2, start + 150_000)
    m.observe([finished], start)
    assert _value(registry, "electric_table_hands_dealt_total") == 2.0
    assert _value(registry, "electric_table_electric_mode_hands_total") == 1.0
    assert _value(registry, "electric_table_electric_mode_tournaments_total") == 1.0
    assert _value(registry, "electric_table_tournaments_finished_total") == 1.0
    assert _value(registry, "electric_table_tournament_duration_seconds_sum") == 150.0
    assert _value(registry, "electric_table_tournament_duration_seconds_bucket", le="120.0") == 0
    assert _value(registry, "electric_table_tournament_duration_seconds_bucket", le="300.0") == 1
    assert _value(registry, "electric_table_tournament_hands_sum") == 2.0


def test_casino_counters_start_at_zero_and_rtp_comes_from_the_math() -> None:
    registry = CollectorRegistry()
    m = CasinoMetrics(registry)
    for game in GAMES:
        for name in ("rounds_started", "rounds_voided", "handle_cents", "returned_cents"):
            assert _value(registry, f"electric_table_casino_{name}_total", game=game) == 0.0
    doc = json.loads((ROOT / "apps/electric_math/data/thb.json").read_text())
    m.configure(int(doc["config_version"]))
    expected = float(doc["figures"]["rtp_total"])
    assert _value(registry, "electric_table_casino_theoretical_rtp", game="thb") == expected
    assert 0.9 < expected < 1.0
    # Figures of another config version are not published (they would certify nothing).
    assert theoretical_rtp("thb", int(doc["config_version"]) + 1) is None


def test_finish_to_credit_lag_is_measured_from_the_finished_event() -> None:
    engine = create_engine("sqlite://")
    payout_tables.metadata.create_all(engine)
    finished_at = 1_700_000_000_000
    finished = table_events.TournamentFinished(table_id="t1", tournament_id="t1")
    finished.domain.canonical_json = json.dumps(
        {"$t": "tournament.TournamentFinished", "at": finished_at}
    )
    with engine.begin() as conn:
        conn.execute(
            insert(payout_tables.results).values(
                tournament_id="t1",
                finished=finished.SerializeToString(),
                source_event_id="e1",
                received_at=datetime.now(UTC),
            )
        )
    registry = CollectorRegistry()
    m = PayoutMetrics(registry)
    m.watch(engine)
    m.prize_credited("t1", 500, now_ms=finished_at + 2_500)
    m.prize_credited("t1", 100, now_ms=finished_at + 40_000)
    m.prize_credited("unknown-table", 7, now_ms=finished_at)  # counted, no lag to observe
    assert _value(registry, "electric_payout_prizes_credited_total") == 3.0
    assert _value(registry, "electric_payout_credited_cents_total") == 607.0
    assert _value(registry, "electric_payout_finish_to_credit_seconds_count") == 2.0
    assert _value(registry, "electric_payout_finish_to_credit_seconds_sum") == 42.5
    assert _value(registry, "electric_payout_finish_to_credit_seconds_bucket", le="5.0") == 1.0


def test_ledger_sums_are_zero_for_double_entry_and_show_a_broken_row() -> None:
    engine = create_engine("sqlite://")
    wallet_tables.metadata.create_all(engine)
    now = datetime.now(UTC)
    rows = [
        ("operator:cash_in", 8, "", -1000, 0, 0),
        ("player:alice:cash", 1, "alice", 700, 200, 0),
        ("house:tournament_escrow", 6, "", 300, 0, 200),
    ]
    with engine.begin() as conn:
        for account_id, kind, player, posted, reserved, incoming in rows:
            conn.execute(
                insert(wallet_tables.accounts).values(
                    account_id=account_id,
                    kind=kind,
                    player_id=player,
                    posted=posted,
                    reserved=reserved,
                    incoming=incoming,
                    opened_at=now,
                )
            )
    with engine.connect() as conn:
        sums = ledger_sums(conn)
    assert sum(p for _, p, _ in sums) == 0 and sum(q for _, _, q in sums) == 0
    assert {k.name.lower(): p for k, p, _ in sums}["player_cash"] == 700
    with engine.begin() as conn:
        conn.execute(
            wallet_tables.accounts.update()
            .where(wallet_tables.accounts.c.account_id == "player:alice:cash")
            .values(posted=701)
        )
    with engine.connect() as conn:
        assert sum(p for _, p, _ in ledger_sums(conn)) == 1


def test_verify_metrics_render_keeps_the_last_success(tmp_path: Path) -> None:
    checks = verify_metrics.parse_checks(
        'sources: x\n{"check": "chain", "ok": true, "checked": 12, "failed": 0}\n'
        '{"check": "money", "ok": false, "checked": 3, "failed": 1}\nnot json\n'
    )
    assert [c["check"] for c in checks] == ["chain", "money"]
    path = tmp_path / verify_metrics.FILE_NAME
    verify_metrics.write_atomically(
        path, verify_metrics.render(code=0, ended=100.0, duration=1.5, checks=[], last_ok=None)
    )
    assert verify_metrics.previous_success(path) == 100.0
    text = verify_metrics.render(
        code=1,
        ended=200.0,
        duration=2.0,
        checks=checks,
        last_ok=verify_metrics.previous_success(path),
    )
    assert "electric_audit_verify_success 0\n" in text
    assert "electric_audit_verify_last_success_timestamp_seconds 100\n" in text
    assert 'electric_audit_verify_check_failures{check="money"} 1\n' in text
    assert "electric_audit_verify_last_run_timestamp_seconds 200\n" in text


def test_verify_metrics_runs_the_real_cli(tmp_path: Path) -> None:
    """No source given: electric-audit verify exits 2 (usage), recorded as a failed run."""
    code = verify_metrics.main(["--out", str(tmp_path)])
    assert code == 2
    text = (tmp_path / verify_metrics.FILE_NAME).read_text()
    assert "electric_audit_verify_exit_code 2\n" in text
    assert "electric_audit_verify_success 0\n" in text
    assert "last_success" not in text


def test_verify_metrics_repeats_with_every(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--every runs verify again and again (compose's audit service); --runs bounds it."""
    assert verify_metrics.main(["--out", str(tmp_path)]) == 2
    once = capsys.readouterr().err
    assert once.strip()
    assert verify_metrics.main(["--out", str(tmp_path), "--every", "0.01", "--runs", "2"]) == 2
    assert capsys.readouterr().err == once * 2
    text = (tmp_path / verify_metrics.FILE_NAME).read_text()
    assert "electric_audit_verify_exit_code 2\n" in text


@pytest.fixture
def textfile_server(tmp_path: Path) -> Iterator[str]:
    from http.server import ThreadingHTTPServer

    server = ThreadingHTTPServer(("127.0.0.1", 0), textfile.make_handler(tmp_path))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_textfile_exporter_serves_the_prom_files(tmp_path: Path, textfile_server: str) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    (tmp_path / "a.prom").write_text("# TYPE job_result gauge\njob_result 1")
    (tmp_path / "ignored.txt").write_text("not served 1\n")
    with urllib.request.urlopen(f"{textfile_server}/metrics", timeout=5) as response:
        body = response.read().decode()
    families = {f.name: f for f in text_string_to_metric_families(body)}
    assert families["job_result"].samples[0].value == 1.0
    assert "not served" not in body
    (mtime,) = families["electric_textfile_mtime_seconds"].samples
    assert mtime.labels == {"file": "a.prom"} and mtime.value > 0


def test_grafana_readme_lists_every_panel_query_and_alert() -> None:
    from tests.integration.ops.ops_queries import DASHBOARDS, rules

    readme = (ROOT / "deploy" / "grafana" / "README.md").read_text()
    rows = {line.split(" | ")[0].lstrip("| ").strip(): line for line in readme.splitlines()}
    for path in DASHBOARDS:
        for panel in json.loads(path.read_text())["panels"]:
            if panel["type"] == "row":
                continue
            line = rows.get(panel["title"])
            assert line is not None, f"{path.name}: panel {panel['title']!r} not in the README"
            for target in panel["targets"]:
                assert target["expr"].replace("|", "\\|") in line, (panel["title"], target)
            assert line.rstrip(" |").rsplit(" | ", 1)[1].strip(), f"no action for {panel['title']}"
    alerts = [name for name, _ in rules() if ":" not in name]
    for name in alerts:
        if (ROOT / "deploy/prometheus/alerts.yml").read_text().count(f"alert: {name}\n"):
            assert f"| `{name}` |" in readme, name
