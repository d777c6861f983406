"""Where a service process's memory goes, over time (a diagnosis switch, off by default).

``ELECTRIC_<SERVICE>_TRACEMALLOC=<dir>`` (e.g. ``ELECTRIC_WALLET_TRACEMALLOC``,
``ELECTRIC_REGISTRATION_TRACEMALLOC``) makes ``python -m electric_<service>`` start
:mod:`tracemalloc` (``ELECTRIC_<SERVICE>_TRACEMALLOC_FRAMES`` frames per allocation, 8) and,
every ``ELECTRIC_<SERVICE>_TRACEMALLOC_SECONDS`` (60), write ``<dir>/NNNN.txt``: the process's
RSS, the traced total, the object counts by type that grew most since the first report, and
the allocation sites (grouped by traceback) that grew most since the first report and since
the previous one. A daemon thread does it; the service is unchanged otherwise, only slower
(tracemalloc costs CPU on every allocation). Used by ``tools/soak/wallet_mem.py``,
``python -m tools.soak --env ELECTRIC_REGISTRATION_TRACEMALLOC=<dir>`` and docs/chaos.md
("The wallet's memory under sustained load", "Registration's memory under sustained load").
"""

from __future__ import annotations

import gc
import os
import threading
import time
import tracemalloc
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

#: Allocation sites listed per comparison.
TOP = 25
#: tracemalloc's own bookkeeping is not the service's memory.
_IGNORE = (
    tracemalloc.Filter(False, tracemalloc.__file__),
    tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
    tracemalloc.Filter(False, "<frozen importlib._bootstrap_external>"),
)


def rss_mib() -> float:
    """Resident set size of this process (``VmRSS``), MiB; 0 where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def object_counts() -> Counter[str]:
    """Live gc-tracked objects by type name."""
    return Counter(type(o).__qualname__ for o in gc.get_objects())


def _sites(stats: list[tracemalloc.StatisticDiff], limit: int) -> list[str]:
    lines: list[str] = []
    for stat in stats[:limit]:
        lines.append(
            f"{stat.size_diff / 1024:+10.1f} KiB {stat.count_diff:+8d} blocks"
            f" (now {stat.size / 1024:.1f} KiB in {stat.count})"
        )
        lines.extend(f"      {line.strip()}" for line in stat.traceback.format()[-16:])
    return lines


class Reporter:
    """Takes a snapshot per :meth:`report` and writes the growth report (module doc)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.first: tracemalloc.Snapshot | None = None
        self.previous: tracemalloc.Snapshot | None = None
        self.first_counts: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.reports = 0
        self.started = time.monotonic()

    def report(self) -> Path:
        tracing = tracemalloc.is_tracing()
        snap = tracemalloc.take_snapshot().filter_traces(_IGNORE) if tracing else None
        counts = object_counts()
        traced, peak = tracemalloc.get_traced_memory()
        out = [
            f"t={time.monotonic() - self.started:.0f}s rss={rss_mib():.1f}MiB"
            f" traced={traced / 2**20:.1f}MiB peak={peak / 2**20:.1f}MiB"
            f" tracemalloc_own={tracemalloc.get_tracemalloc_memory() / 2**20:.1f}MiB"
            f" objects={sum(counts.values())}"
        ]
        if self.reports == 0:
            self.first, self.first_counts = snap, counts
        else:
            for since, before in (("first", self.first_counts), ("previous", self.counts)):
                grown = Counter(counts)
                grown.subtract(before)
                out.append(f"--- object counts grown since the {since} report")
                out += [f"{n:+9d} {name}" for name, n in grown.most_common(20) if n > 0]
        if snap is not None and self.first is not None and self.reports > 0:
            out.append("--- allocation sites grown since the first report")
            out += _sites(snap.compare_to(self.first, "traceback"), TOP)
            if self.previous is not None and self.previous is not self.first:
                out.append("--- allocation sites grown since the previous report")
                out += _sites(snap.compare_to(self.previous, "traceback"), 10)
        self.previous, self.counts = snap, counts
        path = self.directory / f"{self.reports:04d}.txt"
        path.write_text("\n".join(out) + "\n", encoding="utf-8")
        self.reports += 1
        return path


def env_names(service: str) -> tuple[str, str, str, str]:
    """The switch's variables for ``service``: directory, seconds, frames, delay."""
    base = f"ELECTRIC_{service.upper()}_TRACEMALLOC"
    return base, f"{base}_SECONDS", f"{base}_FRAMES", f"{base}_DELAY"


def start_from_env(service: str, environ: Mapping[str, str] = os.environ) -> Reporter | None:
    """Start tracing and the reporting thread when ``ELECTRIC_<SERVICE>_TRACEMALLOC`` is set.

    ``…_FRAMES=0``: no tracemalloc, only RSS and object counts (cheap). ``…_DELAY`` seconds
    (0): start tracing and reporting that much later (tracing the imports of a starting
    service slows them many times: it would miss its start-up deadline)."""
    env_dir, env_seconds, env_frames, env_delay = env_names(service)
    directory = environ.get(env_dir, "")
    if not directory:
        return None
    interval = float(environ.get(env_seconds, "60"))
    frames = int(environ.get(env_frames, "8"))
    delay = float(environ.get(env_delay, "0"))
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    reporter = Reporter(path)

    def begin() -> None:
        if frames > 0:
            tracemalloc.start(frames)
        reporter.started = time.monotonic()

    def loop() -> None:
        if delay > 0:
            time.sleep(delay)
            begin()
            reporter.report()
        while True:
            time.sleep(interval)
            reporter.report()

    if delay <= 0:
        begin()
    threading.Thread(target=loop, name=f"{service}-memtrace", daemon=True).start()
    return reporter
