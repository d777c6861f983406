"""Money-flow counters: every posted transfer counted once, in cents, by code and account
kinds; pending, voided and replayed commands count nothing."""

from __future__ import annotations

from pathlib import Path

from electric_wallet import domain as d
from electric_wallet.metrics import WalletFlowMetrics
from prometheus_client import CollectorRegistry

from tests.support.wallet_kit import open_wallet

CENTS = "electric_wallet_posted_cents_total"
TRANSFERS = "electric_wallet_posted_transfers_total"


def _cents(registry: CollectorRegistry, code: str, debit: str, credit: str) -> float:
    value = registry.get_sample_value(CENTS, {"code": code, "debit": debit, "credit": credit})
    return value or 0.0


def _transfers(registry: CollectorRegistry, code: str) -> float:
    return registry.get_sample_value(TRANSFERS, {"code": code}) or 0.0


def test_posted_transfers_are_counted_once_by_code_and_kind(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    wallet = open_wallet(f"sqlite:///{tmp_path}/w.db", observe=WalletFlowMetrics(registry).observe)

    wallet.deposit("dep-1", "alice", 10_000)
    wallet.deposit("dep-1", "alice", 10_000)  # replay: same transfer
    assert _cents(registry, "deposit", "operator_cash_in", "player_cash") == 10_000
    assert _transfers(registry, "deposit") == 1

    # Buy-in: pending reservation counts nothing; posting counts the posted amount.
    buy_in = d.TransferRequest(
        "buyin-1",
        d.PlayerFunds("alice"),
        d.AccountSide("house:tournament_escrow"),
        500,
        pending=True,
        code="buy_in",
    )
    wallet.create_transfer(buy_in)
    assert _transfers(registry, "buy_in") == 0
    wallet.post_transfer("buyin-1")
    wallet.post_transfer("buyin-1")  # replay
    assert _cents(registry, "buy_in", "player_cash", "tournament_escrow") == 500
    assert _transfers(registry, "buy_in") == 1

    # Rake and net buy-in out of escrow (single-phase transfers).
    for tid, credit, amount, code in (
        ("rake-1", "house:rake", 35, "rake"),
        ("net-1", "house:prize_reserve", 465, "prize_reserve"),
    ):
        wallet.create_transfer(
            d.TransferRequest(
                tid,
                d.AccountSide("house:tournament_escrow"),
                d.AccountSide(credit),
                amount,
                code=code,
            )
        )
    assert _cents(registry, "rake", "tournament_escrow", "house_rake") == 35
    assert _cents(registry, "prize_reserve", "tournament_escrow", "prize_reserve") == 465

    # A voided reservation moves no money.
    wallet.create_transfer(
        d.TransferRequest(
            "buyin-2",
            d.PlayerFunds("alice"),
            d.AccountSide("house:tournament_escrow"),
            500,
            pending=True,
            code="buy_in",
        )
    )
    wallet.void_transfer("buyin-2", "unregistered")
    assert _transfers(registry, "buy_in") == 1

    # Prize from the reserve, withdrawal and adjustment (through create_transfer).
    wallet.create_transfer(
        d.TransferRequest(
            "prize-1",
            d.AccountSide("house:prize_reserve"),
            d.PlayerWinnings("alice"),
            1_000,
            code="prize",
        )
    )
    wallet.withdraw("wd-1", "alice", 2_000)
    wallet.adjust("adj-1", "alice", d.AccountKind.PLAYER_CASH, 7, "goodwill")
    assert _cents(registry, "prize", "prize_reserve", "player_cash") == 1_000
    assert _cents(registry, "withdrawal", "player_cash", "operator_cash_out") == 2_000
    assert _cents(registry, "adjustment", "operator_adjustment", "player_cash") == 7

    # A partial post counts only what was posted; an unknown code is reported as "other".
    wallet.create_transfer(
        d.TransferRequest(
            "odd-1",
            d.PlayerFunds("alice"),
            d.AccountSide("house:casino_bankroll"),
            300,
            pending=True,
            code="some.client.code",
        )
    )
    wallet.post_transfer("odd-1", 120)
    assert _cents(registry, "other", "player_cash", "casino_bankroll") == 120

    # The counters agree with the ledger: cash-in is exactly minus the deposits, etc.
    assert wallet.account("house:rake").posted == 35
    assert wallet.account("house:prize_reserve").posted == 465 - 1_000


def test_every_flow_a_panel_or_alert_reads_exists_at_zero_from_start_up() -> None:
    """A series the dashboard or an alert selects (``credit="operator_cash_out"``: the
    withdrawals panel) exists at 0 before its first transfer, so the panel shows 0, not "no
    data" (issue 28 item 6). Read from the dashboard and the alert rules themselves."""
    import json
    import re

    root = Path(__file__).resolve().parents[3]
    texts = [p.read_text() for p in (root / "deploy/grafana/dashboards").glob("*.json")]
    texts.append((root / "deploy/prometheus/alerts.yml").read_text())
    exprs = [
        e["expr"]
        for t in texts[:-1]
        for e in _targets(json.loads(t))
        if "electric_wallet_posted" in e.get("expr", "")
    ] + [texts[-1]]
    wanted = set()
    for text in exprs:
        for name, body in re.findall(r"(electric_wallet_posted_\w+_total)\{([^}]*)\}", text):
            pairs = re.findall(r'(\w+)\s*=\s*\\?"([^"\\]+)\\?"', body)
            if pairs:
                wanted.add((name, tuple(sorted(pairs))))
    assert len(wanted) >= 7, wanted  # the selectors were found (the test can fail)
    registry = CollectorRegistry()
    WalletFlowMetrics(registry)
    samples = [
        (s.name, s.labels, s.value)
        for metric in registry.collect()
        for s in metric.samples
        if s.name.endswith("_total")
    ]
    for name, pairs in sorted(wanted):
        hits = [
            v for n, labels, v in samples if n == name and dict(pairs).items() <= labels.items()
        ]
        assert hits == [0.0] * len(hits) and hits, (name, pairs)


def _targets(node: object) -> list[dict[str, str]]:
    """Every ``targets`` entry of a Grafana dashboard (panels nest in rows)."""
    found: list[dict[str, str]] = []
    if isinstance(node, dict):
        found.extend(t for t in node.get("targets", []) if isinstance(t, dict))
        for value in node.values():
            if isinstance(value, dict | list):
                found.extend(_targets(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_targets(value))
    return found
