"""Payout's casino metrics (in the service's own Prometheus registry).

- ``electric_payout_casino_wins_credited_total{game}`` (counter): winning bets credited by
  this process;
- ``electric_payout_casino_credited_cents_total{game}`` (counter): their stake + win;
- ``electric_payout_casino_wins_owed`` (gauge, read at scrape time): wins owed and not yet
  credited (a stuck credit shows here).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge
from sqlalchemy import Engine

from electric_payout.casino import repo

#: The games a label may name (anything else is ``other``: labels stay bounded).
_GAMES = frozenset({"thb", "uth"})


class CasinoPayoutMetrics:
    """Counters fed by the crediter; the gauge reads the database."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.credited = Counter(
            "electric_payout_casino_wins_credited_total",
            "Winning casino bets credited to players' wallets.",
            ["game"],
            registry=registry,
        )
        self.credited_cents = Counter(
            "electric_payout_casino_credited_cents_total",
            "Cents (stake + win) credited to players for winning casino bets.",
            ["game"],
            registry=registry,
        )
        self._registry = registry
        for game in (*sorted(_GAMES), "other"):  # at 0 from the start for increase()
            self.credited.labels(game)
            self.credited_cents.labels(game)

    def count(self, game: str, cents: int) -> None:
        """One credit done."""
        label = game if game in _GAMES else "other"
        self.credited.labels(label).inc()
        self.credited_cents.labels(label).inc(cents)

    def watch(self, engine: Engine) -> None:
        """Register the owed-wins gauge reading ``engine`` when scraped."""

        def read() -> float:
            try:
                with engine.connect() as conn:
                    return float(repo.owed_count(conn))
            except Exception:
                return float("nan")

        Gauge(
            "electric_payout_casino_wins_owed",
            "Casino wins owed and not yet credited.",
            registry=self._registry,
        ).set_function(read)
