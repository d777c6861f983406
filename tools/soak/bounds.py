"""The soak run's growth bound (documented in docs/chaos.md, "Soak run"), as pure functions.

Samples are rows ``{"t": seconds, "phase": 1 under load / 0 after, "<figure>.<service>":
value, ...}``. Trend checks look at the samples under load only, and compare the second
half of the run with the first (the first half includes warm-up: imports, caches, pools,
the first tables):

* **RSS** of each service: the least-squares slope over the second half must stay below
  ``rss_mb_per_hour`` — unless the fitted growth over that half is below ``rss_step_mb``
  (allocator arenas grow in steps of a few MiB; a short run cannot tell a step from a
  trend, so it only catches leaks faster than ``rss_step_mb`` per half run);
* **open descriptors**: the second half's maximum at most ``fd_growth`` above the first's;
* **metric series** of each service: the second half's maximum at most
  ``series_growth`` (fraction) + ``series_slack`` above the first half's — a series per
  table, round or player would grow with every tournament;
* **tables in memory**: at every sample, the finished tables still held
  (``tables_in_memory - live_tables``) are at most the tournaments that finished within the
  retention window (+ two sampling intervals) — more means a finished table was kept; and
  after the load, the held tables fall to the live ones;
* **Kafka lag** and **unsent outbox rows**: back to 0 once the load stopped.

Database size grows with events by design (the event store keeps every event; docs/chaos.md
says how much per event); outbox rows and de-dup records are bounded by their retention.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

Row = Mapping[str, float]


@dataclass(frozen=True)
class Bounds:
    """The documented bound; the defaults are the ones ``make soak`` and CI use."""

    rss_mb_per_hour: float = 30.0
    rss_step_mb: float = 6.0
    fd_growth: int = 10
    series_growth: float = 0.10
    series_slack: int = 40
    #: The table service's ELECTRIC_TABLE_FINISHED_RETENTION_MS, in seconds.
    retention_s: float = 60.0
    interval_s: float = 60.0


def slope_per_hour(points: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, value) points, in value per hour (0 if < 2 points)."""
    n = len(points)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in points) / n
    mv = sum(v for _, v in points) / n
    var = sum((t - mt) ** 2 for t, _ in points)
    if var == 0:
        return 0.0
    cov = sum((t - mt) * (v - mv) for t, v in points)
    return cov / var * 3600.0


def halves(rows: Sequence[Row]) -> tuple[list[Row], list[Row]]:
    """The samples under load split at the middle of their time span."""
    load = [r for r in rows if r.get("phase", 1) == 1]
    if not load:
        return [], []
    mid = (load[0]["t"] + load[-1]["t"]) / 2
    return [r for r in load if r["t"] < mid], [r for r in load if r["t"] >= mid]


def columns(rows: Sequence[Row], prefix: str) -> list[str]:
    """Column names starting with ``prefix.`` (one per service or group), sorted."""
    return sorted({k for r in rows for k in r if k.startswith(prefix + ".")})


def rss_trends(rows: Sequence[Row]) -> dict[str, tuple[float, float]]:
    """Service -> (slope MiB/h, fitted growth MiB) of RSS over the second half."""
    _, second = halves(rows)
    out = {}
    for col in columns(rows, "rss_mb"):
        points = [(r["t"], r[col]) for r in second if col in r]
        slope = slope_per_hour(points)
        span = (points[-1][0] - points[0][0]) if len(points) > 1 else 0.0
        out[col.split(".", 1)[1]] = (slope, slope * span / 3600.0)
    return out


def _finished_in_window(rows: Sequence[Row], i: int, window: float) -> float:
    now = rows[i].get("tournaments_finished", 0.0)
    before = [r for r in rows[: i + 1] if r["t"] <= rows[i]["t"] - window]
    then = before[-1].get("tournaments_finished", 0.0) if before else 0.0
    return now - then


def check(rows: Sequence[Row], bounds: Bounds) -> list[str]:
    """Every violation of the bound (empty: the run is within it)."""
    bad: list[str] = []
    first, second = halves(rows)
    if len(first) < 2 or len(second) < 2:
        return [f"too few samples under load to judge a trend: {len(first) + len(second)}"]
    for service, (slope, growth) in rss_trends(rows).items():
        if slope > bounds.rss_mb_per_hour and growth > bounds.rss_step_mb:
            bad.append(
                f"RSS of {service} grows {slope:.1f} MiB/h over the second half "
                f"(+{growth:.1f} MiB; bound {bounds.rss_mb_per_hour} MiB/h)"
            )
    for col in columns(rows, "fds"):
        a = max(r.get(col, 0.0) for r in first)
        b = max(r.get(col, 0.0) for r in second)
        if b > a + bounds.fd_growth:
            bad.append(f"{col}: {a:.0f} -> {b:.0f} open descriptors (bound +{bounds.fd_growth})")
    for col in columns(rows, "series"):
        a = max(r.get(col, 0.0) for r in first)
        b = max(r.get(col, 0.0) for r in second)
        if b > a * (1 + bounds.series_growth) + bounds.series_slack:
            bad.append(f"{col}: {a:.0f} -> {b:.0f} metric series (grows with the load)")
    window = bounds.retention_s + 2 * bounds.interval_s
    for i, r in enumerate(rows):
        if "tables_in_memory" not in r or "live_tables" not in r:
            continue
        held = r["tables_in_memory"] - r["live_tables"]
        allowed = _finished_in_window(rows, i, window)
        if held > allowed:
            bad.append(
                f"t={r['t']:.0f}s: {held:.0f} finished tables held, only {allowed:.0f} "
                f"finished within the retention window ({window:.0f}s)"
            )
            break
    after = [r for r in rows if r.get("phase", 1) == 0]
    if not after:
        bad.append("no sample after the load stopped")
        return bad
    last = after[-1]
    if last.get("tables_in_memory", 0.0) > last.get("live_tables", 0.0):
        bad.append(
            f"after the load: {last.get('tables_in_memory')} tables in memory, "
            f"{last.get('live_tables')} live (finished tables stay in memory)"
        )
    for col in columns([last], "lag") + columns([last], "outbox_unsent"):
        if last[col] > 0:
            bad.append(f"after the load: {col} = {last[col]:.0f}, not back to 0")
    return bad


def settled(row: Row) -> bool:
    """The platform is idle: finished tables released, no lag, nothing unsent."""
    if row.get("tables_in_memory", 0.0) > row.get("live_tables", 0.0):
        return False
    return all(
        v == 0 for k, v in row.items() if k.startswith("lag.") or k.startswith("outbox_unsent.")
    )
