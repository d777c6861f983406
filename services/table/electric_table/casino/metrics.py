"""Casino business metrics (the table service's registry).

- ``electric_table_casino_rounds_started_total{game}``, ``..._rounds_settled_total{game}``,
  ``..._rounds_voided_total{game}`` (counters);
- ``electric_table_casino_handle_cents_total{game}`` (counter): sum of bets placed;
- ``electric_table_casino_returned_cents_total{game}`` (counter): cents going back to the
  players: stake + win of won bets, stakes of pushed bets, every stake of a voided round.
  Gross gaming revenue = handle − returned; observed RTP = returned ÷ handle;
- ``electric_table_casino_theoretical_rtp{game}`` (gauge): the RTP over the total stake of
  optimal play from the exact math (``electric_math/data/<game>.json``, ``rtp_total``), only
  when those figures are for the loaded casino config version;
- ``electric_table_casino_unfinished_rounds`` (gauge, at scrape): rounds open or unseen.

Every counter starts at 0 for every game of :data:`GAMES` (``increase()`` sees the first).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

#: The house-banked games (label values; bounded).
GAMES = ("thb", "uth")


def theoretical_rtp(game: str, config_version: int) -> float | None:
    """``rtp_total`` of the stored exact figures of ``game`` for ``config_version``, else None."""
    try:
        text = (resources.files("electric_math") / "data" / f"{game}.json").read_text("utf-8")
        doc = json.loads(text)
        if int(doc["config_version"]) != config_version:
            return None  # figures of another pay table would certify math never computed
        return float(doc["figures"]["rtp_total"])
    except (OSError, ValueError, KeyError, TypeError, ModuleNotFoundError):
        return None


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
        self.returned = Counter(
            "electric_table_casino_returned_cents_total",
            "Cents returned to players by settled or voided casino rounds (stakes + wins).",
            ["game"],
            registry=registry,
        )
        self.theoretical = Gauge(
            "electric_table_casino_theoretical_rtp",
            "Theoretical return to player over the total stake (optimal play, exact math).",
            ["game"],
            registry=registry,
        )
        self.placements_per_pass = Histogram(
            "electric_table_casino_uth_placements_per_pass",
            "PlaceBets carried by one pass under a live UTH table's lock (group commit).",
            buckets=(1, 2, 4, 8, 16, 32, 64),
            registry=registry,
        )
        for game in GAMES:
            for counter in (self.started, self.settled, self.voided, self.handle, self.returned):
                counter.labels(game)

    def configure(self, config_version: int) -> None:
        """Publish the theoretical RTP of each game whose figures match ``config_version``."""
        for game in GAMES:
            rtp = theoretical_rtp(game, config_version)
            if rtp is not None:
                self.theoretical.labels(game).set(rtp)

    def watch(self, unfinished: Callable[[], float]) -> None:
        Gauge(
            "electric_table_casino_unfinished_rounds",
            "Casino rounds with unresolved bets or an unseen result.",
            registry=self._registry,
        ).set_function(unfinished)
