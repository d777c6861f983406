"""Casino business metrics (the table service's registry).

- ``electric_table_casino_rounds_started_total{game}``, ``..._rounds_settled_total{game}``,
  ``..._rounds_voided_total{game}`` (counters);
- ``electric_table_casino_handle_cents_total{game}`` (counter): sum of bets placed;
- ``electric_table_casino_unfinished_rounds`` (gauge, at scrape): rounds open or unseen.
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge


class CasinoMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self._registry = registry
        self.started = Counter(
            "electric_table_casino_rounds_started_total",
            "Casino rounds started.",
            ["game"],
            registry=registry,
        )
        self.settled = Counter(
            "electric_table_casino_rounds_settled_total",
            "Casino rounds settled.",
            ["game"],
            registry=registry,
        )
        self.voided = Counter(
            "electric_table_casino_rounds_voided_total",
            "Casino rounds voided (operator or auto-void).",
            ["game"],
            registry=registry,
        )
        self.handle = Counter(
            "electric_table_casino_handle_cents_total",
            "Sum of casino bets placed, in cents.",
            ["game"],
            registry=registry,
        )

    def watch(self, unfinished: Callable[[], float]) -> None:
        Gauge(
            "electric_table_casino_unfinished_rounds",
            "Casino rounds with unresolved bets or an unseen result.",
            registry=self._registry,
        ).set_function(unfinished)
