"""The table service's business metrics (in the service's own Prometheus registry).

- ``electric_table_live_tables`` (gauge): tournaments running in this process;
- ``electric_table_tables_in_memory`` (gauge): tables held in memory, running or finished
  and not yet released (finished ones leave after ``FINISHED_RETENTION_S``; issue 18);
- ``electric_table_overdue_seconds`` (gauge): the longest a live table's due time input
  (timer, level change, next deal) is late — a stuck table shows here;
- ``electric_table_hands_dealt_total``, ``electric_table_tournaments_finished_total``,
  ``electric_table_timeouts_total`` (counters): from the stored events;
- ``electric_table_electric_mode_tournaments_total`` (counter): tournaments whose clock ran
  out (ElectricModeStarted); ``electric_table_electric_mode_hands_total`` (counter): hands
  dealt in Electric Mode;
- ``electric_table_tournament_duration_seconds`` (histogram): TournamentStarted to
  TournamentFinished, in domain time; ``electric_table_tournament_hands`` (histogram): hands
  a finished tournament took;
- ``electric_table_driver_errors_total`` (counter): failed driver steps (retried).

Every counter is present at 0 from the start (``increase()`` sees the first event).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from electric_domain.tournament import events as dev
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: Tournament length buckets, seconds (1 min … 2 h; the clock is levels × level duration).
DURATION_BUCKETS = (60.0, 120.0, 300.0, 600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0, 7200.0)
#: Hands per tournament buckets.
HANDS_BUCKETS = (5.0, 10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 150.0, 250.0)


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
        self.electric_tournaments = Counter(
            "electric_table_electric_mode_tournaments_total",
            "Tournaments that entered Electric Mode (their clock ran out).",
            registry=registry,
        )
        self.electric_hands = Counter(
            "electric_table_electric_mode_hands_total",
            "Hands dealt in Electric Mode.",
            registry=registry,
        )
        self.duration = Histogram(
            "electric_table_tournament_duration_seconds",
            "Time from TournamentStarted to TournamentFinished (domain time).",
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.hands_per_tournament = Histogram(
            "electric_table_tournament_hands",
            "Hands a finished tournament took.",
            buckets=HANDS_BUCKETS,
            registry=registry,
        )

    def observe(self, events: Iterable[object], started_at_ms: int) -> None:
        """Count the domain events just stored for a table started at ``started_at_ms``."""
        for e in events:
            if isinstance(e, dev.HandStarted):
                self.hands.inc()
                if e.electric:
                    self.electric_hands.inc()
            elif isinstance(e, dev.TimedOut):
                self.timeouts.inc()
            elif isinstance(e, dev.ElectricModeStarted):
                self.electric_tournaments.inc()
            elif isinstance(e, dev.TournamentFinished):
                self.finished.inc()
                self.duration.observe(max(0, e.at - started_at_ms) / 1000.0)
                self.hands_per_tournament.observe(e.hands)

    def watch_held(self, held: Callable[[], float]) -> None:
        """Register the gauge of tables held in memory (running or finished, not released)."""
        Gauge(
            "electric_table_tables_in_memory",
            "Tables held in this process's memory (finished ones until released).",
            registry=self._registry,
        ).set_function(held)

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
