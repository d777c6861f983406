"""Payout's business metrics (in the service's own Prometheus registry).

- ``electric_payout_prizes_credited_total`` (counter): prizes credited by this process;
- ``electric_payout_credited_cents_total`` (counter): their amount in cents;
- ``electric_payout_prizes_uncredited`` (gauge): prizes awarded and not yet credited (a
  stuck credit shows here);
- ``electric_payout_results_unawarded`` (gauge): results received whose prizes are not yet
  awarded (e.g. waiting for their TournamentStarted).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge
from sqlalchemy import Engine, func, select

from electric_payout.store import tables as t


class PayoutMetrics:
    """Counters fed by the credit worker; gauges read the database at scrape time."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.credited = Counter(
            "electric_payout_prizes_credited_total",
            "Prizes credited to players' wallets.",
            registry=registry,
        )
        self.credited_cents = Counter(
            "electric_payout_credited_cents_total",
            "Cents credited to players as prizes.",
            registry=registry,
        )
        self._registry = registry

    def watch(self, engine: Engine) -> None:
        """Register the gauges that read ``engine`` when scraped."""
        uncredited = Gauge(
            "electric_payout_prizes_uncredited",
            "Prizes awarded and not yet credited.",
            registry=self._registry,
        )
        unawarded = Gauge(
            "electric_payout_results_unawarded",
            "Tournament results whose prizes are not awarded yet.",
            registry=self._registry,
        )

        def uncredited_count() -> float:
            try:
                with engine.connect() as conn:
                    q = select(func.count()).select_from(t.prizes)
                    return float(conn.execute(q.where(t.prizes.c.status == "awarded")).scalar_one())
            except Exception:
                return float("nan")

        def unawarded_count() -> float:
            try:
                with engine.connect() as conn:
                    q = select(func.count()).select_from(t.results)
                    return float(
                        conn.execute(q.where(t.results.c.awarded_at.is_(None))).scalar_one()
                    )
            except Exception:
                return float("nan")

        uncredited.set_function(uncredited_count)
        unawarded.set_function(unawarded_count)
