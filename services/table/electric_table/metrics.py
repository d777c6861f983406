"""The table service's business metrics (in the service's own Prometheus registry).

- ``electric_table_live_tables`` (gauge): tournaments running in this process;
- ``electric_table_overdue_seconds`` (gauge): the longest a live table's due time input
  (timer, level change, next deal) is late — a stuck table shows here;
- ``electric_table_hands_dealt_total``, ``electric_table_tournaments_finished_total``,
  ``electric_table_timeouts_total`` (counters): from the stored events;
- ``electric_table_driver_errors_total`` (counter): failed driver steps (retried).
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge


class TableMetrics:
    """Counters fed by the manager; gauges computed at scrape time."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self._registry = registry
        self.hands = Counter("electric_table_hands_dealt_total", "Hands dealt.", registry=registry)
        self.finished = Counter(
            "electric_table_tournaments_finished_total",
            "Tournaments finished.",
            registry=registry,
        )
        self.timeouts = Counter(
            "electric_table_timeouts_total",
            "Turns ended by the action timer / time bank.",
            registry=registry,
        )
        self.driver_errors = Counter(
            "electric_table_driver_errors_total",
            "Driver steps that failed (retried).",
            registry=registry,
        )

    def watch(self, live: Callable[[], float], overdue: Callable[[], float]) -> None:
        """Register the scrape-time gauges."""
        Gauge(
            "electric_table_live_tables", "Tournaments running here.", registry=self._registry
        ).set_function(live)
        Gauge(
            "electric_table_overdue_seconds",
            "Longest delay of a due time input over the live tables.",
            registry=self._registry,
        ).set_function(overdue)
