"""Registration's business metrics (in the service's own Prometheus registry).

- ``electric_registration_entries_total{tier}`` (counter): entries bought (not replays);
- ``electric_registration_unregistrations_total{tier}`` (counter); both start at 0 for every
  configured tier;
- ``electric_registration_tables_filled_total{tier, multiplier}`` (counter): the observed
  multiplier draws, to alert on a skew against the pay table (every tier × multiplier of the
  configuration starts at 0, so ``increase()`` also sees the first draw of a rare one);
- ``electric_registration_multiplier_configured_probability{multiplier}`` (gauge): weight /
  weight total of each multiplier in the configured pay table, for PromQL to compare with;
- ``electric_registration_tables{status}`` (gauge): sit-and-go tables per lifecycle status
  (registering, filled, running, finished, cancelled), read at scrape time;
- ``electric_registration_wallet_ops_pending`` (gauge): wallet calls owed and not yet done;
- ``electric_registration_wallet_ops_oldest_pending_age_seconds`` (gauge): how long the
  oldest owed wallet call has been waiting (0 when none); the alert ``WalletWorkPendingTooLong``
  fires when it stays above 5 minutes (a buy-in post, move, void or refund that does not go
  through);
- ``electric_registration_attempts_unfinished`` (gauge): Register attempts reserving or
  rolling back.

The alert rules in ``deploy/prometheus/alerts.yml`` compare the draws with the configured
probabilities; :func:`multiplier_deviation_alerts` is the same computation in Python (the
rules' thresholds are checked against the constants below by the tests).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime

from electric_domain.lobby import tier_id_for
from electric_domain.tournament import TournamentConfig
from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Connection, Engine

from electric_registration.store import repo

#: Every status a registration table can have (always reported, 0 when none).
TABLE_STATUSES = repo.TABLE_STATUSES


#: |z| above which a multiplier's observed frequency is a significant deviation.
Z_LIMIT = 5.0
#: Smallest n·p·(1−p) for which the normal approximation (the z-score rule) is used.
MIN_VARIANCE = 9.0
#: Draws a rare multiplier (variance below MIN_VARIANCE) needs before it can alert.
RARE_MIN_DRAWS = 5


def multiplier_deviation_alerts(
    draws: Mapping[int, float], probabilities: Mapping[int, float]
) -> dict[int, str]:
    """Which multiplier alert of ``alerts.yml`` fires for each multiplier.

    ``draws``: draws per multiplier in the window (missing = 0); ``probabilities``: the
    configured probability of every multiplier. With n = Σ draws, k = draws of m and p its
    probability: expected = n·p, variance = n·p·(1−p), z = (k − expected) / √variance.

    - ``MultiplierFrequencyDeviation`` when |z| > :data:`Z_LIMIT` and variance >=
      :data:`MIN_VARIANCE`;
    - ``RareMultiplierExcess`` when z > :data:`Z_LIMIT`, k >= :data:`RARE_MIN_DRAWS` and
      variance < :data:`MIN_VARIANCE`.

    Multipliers for which nothing fires are left out.
    """
    n = float(sum(draws.values()))
    fired: dict[int, str] = {}
    for multiplier, p in probabilities.items():
        k = float(draws.get(multiplier, 0))
        expected = n * p
        variance = expected * (1 - p)
        if variance <= 0:
            continue  # no draws yet (or p is 0 or 1): PromQL gives NaN/Inf, no alert
        z = (k - expected) / math.sqrt(variance)
        if variance >= MIN_VARIANCE and abs(z) > Z_LIMIT:
            fired[multiplier] = "MultiplierFrequencyDeviation"
        elif variance < MIN_VARIANCE and k >= RARE_MIN_DRAWS and z > Z_LIMIT:
            fired[multiplier] = "RareMultiplierExcess"
    return fired


class RegistrationMetrics:
    """Counters fed by the registrar; gauges read the database at scrape time."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.entries = Counter(
            "electric_registration_entries_total",
            "Tournament entries bought (buy-ins reserved).",
            ["tier"],
            registry=registry,
        )
        self.unregistrations = Counter(
            "electric_registration_unregistrations_total",
            "Entries withdrawn before their table filled.",
            ["tier"],
            registry=registry,
        )
        self.filled = Counter(
            "electric_registration_tables_filled_total",
            "Tables filled, by the Prize Pool Multiplier drawn.",
            ["tier", "multiplier"],
            registry=registry,
        )
        self.configured_probability = Gauge(
            "electric_registration_multiplier_configured_probability",
            "Probability of each Prize Pool Multiplier in the configured pay table.",
            ["multiplier"],
            registry=registry,
        )
        self._registry = registry

    def configure(self, config: TournamentConfig) -> None:
        """Publish the pay table's probabilities and start every draw, entry and
        unregistration counter at 0 (so ``increase()`` sees the first of each)."""
        pay_table = config.pay_table
        for tier in config.buy_ins:
            self.entries.labels(tier_id_for(tier.buy_in_cents))
            self.unregistrations.labels(tier_id_for(tier.buy_in_cents))
        for entry in pay_table.entries:
            label = str(entry.multiplier)
            self.configured_probability.labels(label).set(entry.weight / pay_table.weight_total)
            for tier in config.buy_ins:
                self.filled.labels(tier_id_for(tier.buy_in_cents), label)

    def watch(self, engine: Engine) -> None:
        """Register the gauges that read ``engine`` when scraped."""
        pending = Gauge(
            "electric_registration_wallet_ops_pending",
            "Wallet calls owed by committed decisions and not yet done.",
            registry=self._registry,
        )
        oldest = Gauge(
            "electric_registration_wallet_ops_oldest_pending_age_seconds",
            "Age of the oldest wallet call owed and not yet done (0 when none).",
            registry=self._registry,
        )
        unfinished = Gauge(
            "electric_registration_attempts_unfinished",
            "Register attempts still reserving or being rolled back.",
            registry=self._registry,
        )

        def count(query: Callable[[Connection], float]) -> float:
            try:
                with engine.connect() as conn:
                    return float(query(conn))
            except Exception:
                return float("nan")

        pending.set_function(lambda: count(repo.pending_wallet_ops))
        oldest.set_function(lambda: count(pending_age_seconds))
        unfinished.set_function(lambda: count(repo.unfinished_attempts))
        if self._registry is not None:
            self._registry.register(TableStatusCollector(engine))


def pending_age_seconds(conn: Connection, now: datetime | None = None) -> float:
    """Seconds the oldest owed wallet call has waited (0 when nothing is owed)."""
    oldest = repo.oldest_pending_wallet_op(conn)
    if oldest is None:
        return 0.0
    if oldest.tzinfo is None:  # SQLite keeps naive UTC
        oldest = oldest.replace(tzinfo=UTC)
    return max(0.0, ((now or datetime.now(UTC)) - oldest).total_seconds())


class TableStatusCollector(Collector):
    """``electric_registration_tables{status}``: one GROUP BY query per scrape."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "electric_registration_tables",
            "Sit-and-go tables per lifecycle status.",
            labels=["status"],
        )
        try:
            with self.engine.connect() as conn:
                counts = {s: float(n) for s, n in repo.tables_by_status(conn).items()}
        except Exception:
            counts = dict.fromkeys(TABLE_STATUSES, float("nan"))
        for status, n in counts.items():
            family.add_metric([status], n)
        yield family
