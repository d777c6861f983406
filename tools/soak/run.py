"""Load and sampling of one soak run on a running cluster (``platform_cluster.Cluster``).

Tournament bots (``electric_bots.runner``) and casino bots (THB and UTH,
``electric_bots.casino_runner``) play for ``duration_s``; the tournament bots then finish
the tables they sit at (bounded by ``drain_s``). A sample is taken every ``interval_s``
under load (phase 1) and after it (phase 0) until the platform settled (finished tables
released, lag and unsent rows 0) or ``settle_s`` passed. Then the bound is checked.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from electric_bots.casino_runner import CasinoRunner, CasinoRunnerConfig
from electric_bots.runner import BotRunner, BotRunnerConfig, Targets

from tools.soak import bounds as bounds_mod
from tools.soak.labels import label_problems, scrape_all
from tools.soak.plot import plot, write_csv, write_json
from tools.soak.probe import SERVICES, LagProbe, take

#: Table-service settings of a soak run: no pause between hands (more hands per minute),
#: short UTH windows (the casino e2e's), quiet logs.
SOAK_ENV = {
    "ELECTRIC_TABLE_HAND_PAUSE_MS": "0",
    "ELECTRIC_TABLE_UTH_GREEN_MS": "1200",
    "ELECTRIC_TABLE_UTH_YELLOW_MS": "300",
    "ELECTRIC_TABLE_UTH_DECISION_MS": "1500",
    "ELECTRIC_TABLE_UTH_PAUSE_MS": "100",
    "ELECTRIC_LOG_LEVEL": "WARNING",
}


@dataclass
class SoakConfig:
    duration_s: float
    interval_s: float
    out_dir: Path
    bounds: bounds_mod.Bounds
    tournament_bots: int = 15
    thb_bots: int = 3
    uth_bots: int = 3
    seed: int = 1
    drain_s: float = 300.0
    settle_s: float = 180.0


@dataclass
class SoakResult:
    rows: list[dict[str, float]]
    violations: list[str]
    summary: dict[str, Any]
    png: Path
    csv: Path
    players: set[str] = field(default_factory=set)
    tables: set[str] = field(default_factory=set)
    rounds: set[str] = field(default_factory=set)


def _handles(cluster: Any) -> tuple[dict[str, int], dict[str, str], dict[str, int]]:
    procs = cluster.procs
    pids = {n: int(procs[n].popen.pid) for n in SERVICES}
    stores = {n: str(procs[n].db_url) for n in SERVICES}
    ports = {n: int(procs[n].metrics_port) for n in SERVICES}
    return pids, stores, ports


async def soak(
    cluster: Any,
    kafka_bootstrap: str,
    key: Any,
    cfg: SoakConfig,
    say: Callable[[str], None] = print,
    midway: Callable[[], Awaitable[None]] | None = None,
) -> SoakResult:
    """Play, sample, settle, check; writes ``soak.csv``, ``soak.json``, ``soak.png``.
    ``midway`` (e.g. a backup) runs once, half-way through the play, beside the load."""
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    t = cluster.target
    targets = Targets(registration=t("registration"), table=t("table"), wallet=t("wallet"))
    tag = f"soak{uuid.uuid4().hex[:6]}"
    bots = BotRunner(
        BotRunnerConfig(
            targets=targets,
            key=key,
            bots=cfg.tournament_bots,
            mix=(("random", 5), ("tag", 1)),  # loose bots: short tournaments, many of them
            duration=cfg.duration_s,
            deposit_cents=10_000_000,
            seed=cfg.seed,
            player_prefix=tag,
        )
    )
    casino = CasinoRunner(
        CasinoRunnerConfig(
            targets=targets,
            key=key,
            thb_bots=cfg.thb_bots,
            uth_bots=cfg.uth_bots,
            duration=cfg.duration_s,
            deposit_cents=100_000_000,
            player_prefix=f"{tag}c",
        )
    )
    pids, stores, ports = _handles(cluster)
    lag = LagProbe(kafka_bootstrap, cluster.namespace)
    rows: list[dict[str, float]] = []
    errors: list[str] = []
    began = time.monotonic()
    tasks = [asyncio.create_task(bots.run()), asyncio.create_task(casino.run())]
    hard_stop = began + cfg.duration_s + cfg.drain_s
    mid_task: asyncio.Task[None] | None = None

    async def at_midway() -> None:
        await asyncio.sleep(cfg.duration_s / 2)
        assert midway is not None
        await midway()

    if midway is not None:
        mid_task = asyncio.create_task(at_midway())

    missed: list[str] = []

    async def sample(phase: int) -> dict[str, float]:
        # A probe can time out on a starved machine (the broker's admin API first): one
        # retry, then the sample is missed - reported, never invented.
        for attempt in (1, 2):
            try:
                s = await take(time.monotonic() - began, pids, stores, ports, lag)
                break
            except Exception as exc:
                if attempt == 2:
                    missed.append(f"t={time.monotonic() - began:.0f}s: {exc!r}")
                    say(f"[soak] sample missed: {exc!r}")
                    return {}
        row = {**s.row(), "phase": float(phase)}
        rows.append(row)
        return row

    def progress(row: dict[str, float], phase: str) -> None:
        if not row:
            return
        rss = " ".join(f"{n[:3]}={row.get(f'rss_mb.{n}', 0):.0f}" for n in SERVICES)
        lag_total = sum(v for k, v in row.items() if k.startswith("lag."))
        say(
            f"[soak {row['t'] / 60:5.1f}/{cfg.duration_s / 60:.1f} min {phase}] RSS MiB {rss} | "
            f"tables held {row.get('tables_in_memory', 0):.0f} live "
            f"{row.get('live_tables', 0):.0f} finished {row.get('tournaments_finished', 0):.0f}"
            f" | THB {casino.stats.games['thb'].rounds} UTH {casino.stats.games['uth'].rounds}"
            f" | lag {lag_total:.0f}"
        )

    try:
        progress(await sample(1), "load")
        while not all(task.done() for task in tasks):
            await asyncio.wait(tasks, timeout=cfg.interval_s)
            if time.monotonic() > hard_stop:
                errors.append(f"the bots did not drain within {cfg.drain_s:.0f}s; stopped")
                bots.stop.set()
                casino.stop.set()
                await asyncio.wait(tasks, timeout=60)
                break
            if not all(task.done() for task in tasks):
                progress(await sample(1), "load")
        for task in tasks:
            if task.done() and task.exception() is not None:
                errors.append(f"bots failed: {task.exception()!r}")
        if mid_task is not None:
            await asyncio.wait({mid_task}, timeout=cfg.drain_s)
            if not mid_task.done() or mid_task.exception() is not None:
                errors.append(f"the midway step failed: {mid_task!r}")
        settle_until = time.monotonic() + cfg.settle_s
        while True:
            row = await sample(0)
            progress(row, "settle")
            if (row and bounds_mod.settled(row)) or time.monotonic() > settle_until:
                break
            await asyncio.sleep(min(cfg.interval_s, 10.0))
    finally:
        for task in [*tasks, *([mid_task] if mid_task else [])]:
            if not task.done():
                bots.stop.set()
                casino.stop.set()
                task.cancel()
        await lag.close()

    players = {a.player_id for a in bots.assignments} | {p for p, _, _ in casino.assignments}
    tables = set(bots.stats.tables_played) | set(bots.stats.tables_finished)
    rounds = set(casino.uth_rounds_seen)
    try:  # metrics series do not grow with tables: no label names an id of this run
        labels = label_problems(
            await asyncio.to_thread(scrape_all, ports), players | tables | rounds
        )
    except Exception as exc:
        labels = [f"scrape of /metrics failed: {exc!r}"]
    violations = errors + bounds_mod.check(rows, cfg.bounds) + labels
    if len(missed) * 4 > len(rows) + len(missed):  # too few samples left to judge
        violations.append(f"{len(missed)} samples missed: {missed[:3]}")
    if bots.stats.errors or casino.stats.errors:
        violations.append(
            f"bot errors: tournament {bots.stats.errors} {bots.stats.last_errors[-2:]}, "
            f"casino {casino.stats.errors} {casino.stats.last_errors[-2:]}"
        )
    trends = bounds_mod.rss_trends(rows)
    summary: dict[str, Any] = {
        "namespace": cluster.namespace,
        "duration_s": cfg.duration_s,
        "interval_s": cfg.interval_s,
        "wall_s": round(time.monotonic() - began, 1),
        "tournaments_finished": len(bots.stats.tables_finished),
        "thb_rounds": casino.stats.games["thb"].rounds,
        "uth_rounds": casino.stats.games["uth"].rounds,
        "hands_actions": bots.stats.actions,
        "rss_slope_mb_per_h": {s: round(v[0], 2) for s, v in trends.items()},
        "rss_growth_second_half_mb": {s: round(v[1], 2) for s, v in trends.items()},
        "bounds": cfg.bounds.__dict__,
        "missed_samples": missed,
        "violations": violations,
    }
    if rows:
        last = rows[-1]
        summary["final"] = {k: v for k, v in last.items() if not k.startswith("lag.")}
        summary["final_lag"] = {k: v for k, v in last.items() if k.startswith("lag.")}
    png, csv_path = cfg.out_dir / "soak.png", cfg.out_dir / "soak.csv"
    write_csv(rows, csv_path)
    write_json(summary, rows, cfg.out_dir / "soak.json")
    title = (
        f"soak {cfg.duration_s / 60:.0f} min, sample every {cfg.interval_s:.0f}s: "
        f"{summary['tournaments_finished']} tournaments, THB {summary['thb_rounds']}, "
        f"UTH {summary['uth_rounds']} rounds — {'PASS' if not violations else 'FAIL'}"
    )
    plot(rows, png, title, cluster.namespace)
    return SoakResult(
        rows,
        violations,
        summary,
        png,
        csv_path,
        players=players,
        tables=tables,
        rounds=rounds,
    )
