"""Payout's business metrics (in the service's own Prometheus registry).

- ``electric_payout_prizes_credited_total`` (counter): prizes credited by this process;
- ``electric_payout_credited_cents_total`` (counter): their amount in cents;
- ``electric_payout_finish_to_credit_seconds`` (histogram): per prize credited, the time from
  its tournament's TournamentFinished (the table's domain time) to the credit (alert
  ``PrizeCreditSlow``);
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

import json
import time
from collections.abc import Callable

from electric.table.v1 import events_pb2 as table_events
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from sqlalchemy import Connection, Engine, select

from electric_payout.store import repo
from electric_payout.store import tables as t

#: Finish-to-credit buckets, seconds (bus hop + award + wallet call; minutes = stuck).
LAG_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)
#: Finish times remembered (a tournament's prizes are credited close together).
_FINISH_CACHE = 256


def finished_at_ms(conn: Connection, table_id: str) -> int | None:
    """Domain time (epoch ms) of the table's TournamentFinished, from the stored result."""
    row = conn.execute(
        select(t.results.c.finished).where(t.results.c.tournament_id == table_id)
    ).first()
    if row is None:
        return None
    finished = table_events.TournamentFinished.FromString(bytes(row.finished))
    try:
        at = json.loads(finished.domain.canonical_json).get("at")
    except ValueError:
        return None
    return int(at) if isinstance(at, int) else None


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
        self.finish_to_credit = Histogram(
            "electric_payout_finish_to_credit_seconds",
            "Time from a tournament's TournamentFinished to the credit of one of its prizes.",
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self._registry = registry
        self._engine: Engine | None = None
        self._finished: dict[str, int] = {}

    def prize_credited(self, table_id: str, cents: int, now_ms: int | None = None) -> None:
        """Count one prize credited (committed) and observe its finish-to-credit lag."""
        self.credited.inc()
        self.credited_cents.inc(cents)
        at = self._finished.get(table_id)
        if at is None and self._engine is not None:
            try:
                with self._engine.connect() as conn:
                    at = finished_at_ms(conn, table_id)
            except Exception:
                at = None
            if at is not None:
                if len(self._finished) >= _FINISH_CACHE:
                    self._finished.pop(next(iter(self._finished)))
                self._finished[table_id] = at
        if at is not None:
            now = now_ms if now_ms is not None else int(time.time() * 1000)
            self.finish_to_credit.observe(max(0, now - at) / 1000.0)

    def decided(self, held: bool) -> None:
        """Count a committed decision (only holds are counted)."""
        if held:
            self.check_failures.inc()

    def watch(self, engine: Engine) -> None:
        """Register the gauges that read ``engine`` when scraped (and read finish times)."""
        self._engine = engine

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
