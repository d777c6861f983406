"""Payout's business metrics (in the service's own Prometheus registry).

- ``electric_payout_prizes_credited_total`` (counter): prizes credited by this process;
- ``electric_payout_credited_cents_total`` (counter): their amount in cents;
- ``electric_payout_prize_check_failures_total`` (counter): tournaments this process held
  because the audit re-check disagreed with the table's prizes (alert ``PrizeCheckFailed``);
- ``electric_payout_tournaments_held`` (gauge): tournaments held by a failed prize check
  (their money is not moved until an operator resolves them);
- ``electric_payout_prizes_uncredited`` (gauge): prizes awarded and not yet credited (a
  stuck credit shows here);
- ``electric_payout_results_unawarded`` (gauge): results received and neither awarded nor
  held (e.g. waiting for their TournamentStarted).
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge
from sqlalchemy import Connection, Engine

from electric_payout.store import repo


class PayoutMetrics:
    """Counters fed by the consumers and the credit worker; gauges read the database at
    scrape time."""

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
        self.check_failures = Counter(
            "electric_payout_prize_check_failures_total",
            "Tournaments held because payout's re-check disagreed with the table's prizes.",
            registry=registry,
        )
        self._registry = registry

    def decided(self, held: bool) -> None:
        """Count a committed decision (only holds are counted)."""
        if held:
            self.check_failures.inc()

    def watch(self, engine: Engine) -> None:
        """Register the gauges that read ``engine`` when scraped."""

        def reading(query: Callable[[Connection], int]) -> Callable[[], float]:
            def read() -> float:
                try:
                    with engine.connect() as conn:
                        return float(query(conn))
                except Exception:
                    return float("nan")

            return read

        for name, doc, query in (
            (
                "electric_payout_prizes_uncredited",
                "Prizes awarded and not yet credited.",
                repo.uncredited_count,
            ),
            (
                "electric_payout_results_unawarded",
                "Tournament results whose prizes are not awarded yet.",
                repo.unawarded_count,
            ),
            (
                "electric_payout_tournaments_held",
                "Tournaments held by a failed prize check (no money moved).",
                repo.held_count,
            ),
        ):
            Gauge(name, doc, registry=self._registry).set_function(reading(query))
