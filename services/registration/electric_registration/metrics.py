"""Registration's business metrics (in the service's own Prometheus registry).

- ``electric_registration_entries_total{tier}`` (counter): entries bought (not replays);
- ``electric_registration_unregistrations_total{tier}`` (counter);
- ``electric_registration_tables_filled_total{tier, multiplier}`` (counter): the observed
  multiplier draws, to alert on a skew against the pay table;
- ``electric_registration_wallet_ops_pending`` (gauge): wallet calls owed and not yet done;
- ``electric_registration_attempts_unfinished`` (gauge): Register attempts reserving or
  rolling back.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge
from sqlalchemy import Engine, func, select

from electric_registration.store import tables as t


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
        self._registry = registry

    def watch(self, engine: Engine) -> None:
        """Register the gauges that read ``engine`` when scraped."""
        pending = Gauge(
            "electric_registration_wallet_ops_pending",
            "Wallet calls owed by committed decisions and not yet done.",
            registry=self._registry,
        )
        unfinished = Gauge(
            "electric_registration_attempts_unfinished",
            "Register attempts still reserving or being rolled back.",
            registry=self._registry,
        )

        def count(table: object, *where: object) -> float:
            try:
                with engine.connect() as conn:
                    q = select(func.count()).select_from(table).where(*where)  # type: ignore[arg-type]
                    return float(conn.execute(q).scalar_one())
            except Exception:
                return float("nan")

        pending.set_function(lambda: count(t.wallet_ops, t.wallet_ops.c.status == "pending"))
        unfinished.set_function(
            lambda: count(t.requests, t.requests.c.status.in_(("reserving", "voiding")))
        )
