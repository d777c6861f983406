"""One sample of the soak run: what each service process, store and consumer group holds.

Everything is read from outside the services, the way an operator would: ``/proc/<pid>``
for RSS (``VmRSS``) and open descriptors, SQL for the stores, the Kafka admin API for the
consumer groups' lag (the lag exporter's own poller, ``deploy/kafka/lag_exporter.py``), and
each service's ``/metrics`` page for the table service's gauges and the number of series.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ("registration", "table", "wallet", "payout")
#: Gauges and counters of the table service kept in every sample (name -> column).
TABLE_SERIES = {
    "electric_table_tables_in_memory": "tables_in_memory",
    "electric_table_live_tables": "live_tables",
    "electric_table_tournaments_finished_total": "tournaments_finished",
}


def _lag_exporter() -> ModuleType:
    """deploy/kafka/lag_exporter.py as a module (it is a script, not a package)."""
    name = "electric_lag_exporter"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, ROOT / "deploy/kafka/lag_exporter.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


def rss_mb(pid: int) -> float:
    """Resident set size of ``pid`` in MiB (``VmRSS`` of /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise ValueError(f"no VmRSS for pid {pid}")


def open_fds(pid: int) -> int:
    """Open file descriptors of ``pid`` (entries of /proc/<pid>/fd)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def _conninfo(url: str) -> str:
    u = make_url(url)
    return (
        f"host={u.host or '127.0.0.1'} port={u.port or 5432} dbname={u.database} "
        f"user={u.username or ''} password={u.password or ''}"
    )


def store_figures(url: str) -> dict[str, float]:
    """Size (MiB) of the store's database and its event, outbox and de-dup row counts."""
    with psycopg.connect(_conninfo(url), autocommit=True, connect_timeout=10) as conn:
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        counts = conn.execute(
            "SELECT (SELECT count(*) FROM eventlog_events),"
            " (SELECT count(*) FROM eventlog_outbox),"
            " (SELECT count(*) FROM eventlog_applied)"
        ).fetchone()
    assert size is not None and counts is not None
    return {
        "db_mb": int(size[0]) / 2**20,
        "events": float(counts[0]),
        "outbox_rows": float(counts[1]),
        "applied_rows": float(counts[2]),
    }


def scrape(port: int) -> list[tuple[str, dict[str, str], float]]:
    """Every sample of a service's ``/metrics`` page: (name, labels, value)."""
    url = f"http://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as resp:
        text = resp.read().decode()
    return [
        (s.name, dict(s.labels), float(s.value))
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    ]


@dataclass
class LagProbe:
    """The lag exporter's poller, kept open between samples; groups of one namespace."""

    bootstrap: str
    namespace: str
    _poller: Any = None

    async def lag(self) -> dict[str, int]:
        """Messages not yet committed, summed over partitions, per consumer group."""
        exporter = _lag_exporter()
        if self._poller is None:
            pattern = (
                re.compile("^" + re.escape(self.namespace)) if self.namespace else re.compile("")
            )
            self._poller = exporter.Poller(self.bootstrap, pattern, 10_000)
        try:
            ends, committed = await self._poller.poll()
        except Exception:
            await self.close()
            raise
        out: dict[str, int] = {}
        for (group, topic, partition), offset in committed.items():
            end = ends.get((topic, partition))
            if end is not None:
                out[group] = out.get(group, 0) + int(exporter.lag_of(offset, end))
        return out

    async def close(self) -> None:
        if self._poller is not None:
            poller, self._poller = self._poller, None
            await poller.close()


@dataclass
class Sample:
    """One row of the soak's output: seconds since the start and named figures."""

    t: float
    values: dict[str, float] = field(default_factory=dict)

    def row(self) -> dict[str, float]:
        return {"t": round(self.t, 1), **self.values}


async def take(
    t: float,
    pids: dict[str, int],
    stores: dict[str, str],
    metrics_ports: dict[str, int],
    lag: LagProbe,
) -> Sample:
    """One sample of every figure; a figure that cannot be read is left out (and logged by
    the caller through the missing column), never invented."""
    import asyncio

    sample = Sample(t)
    v = sample.values
    for name, pid in pids.items():
        v[f"rss_mb.{name}"] = rss_mb(pid)
        v[f"fds.{name}"] = float(open_fds(pid))
    for name, url in stores.items():
        figures = await asyncio.to_thread(store_figures, url)
        for key, value in figures.items():
            v[f"{key}.{name}"] = value
    for name, port in metrics_ports.items():
        samples = await asyncio.to_thread(scrape, port)
        v[f"series.{name}"] = float(len(samples))
        if name == "table":
            for metric, column in TABLE_SERIES.items():
                got = [val for n, labels, val in samples if n == metric and not labels]
                if got:
                    v[column] = got[0]
        for n, _, val in samples:
            if n == "electric_outbox_unsent_events":
                v[f"outbox_unsent.{name}"] = v.get(f"outbox_unsent.{name}", 0.0) + val
    for group, behind in (await lag.lag()).items():
        v[f"lag.{group}"] = float(behind)
    return sample
