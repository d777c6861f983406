"""Platform load benchmark (issue 16 item 4): ``python -m bench platform``.

Set-up, once per backend:

* ``postgres``: the four services as separate processes on PostgreSQL and Kafka (fresh
  databases, their own Kafka namespace), ``bench/platform_backends.cluster``;
* ``sqlite``: the embedded default, ``python -m electric_runner`` (four services in one
  process, SQLite files), ``bench/platform_backends.embedded``.

At each concurrency level ``N`` (``BENCH_PLATFORM_LEVELS``, default 10,25,50 tables in
flight) a separate process (``bench/platform_load.py bots``) runs ``N × seats`` real bots
(``electric_bots``, random strategy, no thinking time, the cheapest tier) for
``BENCH_PLATFORM_SECONDS`` (default 20) and then drains (bounded). With no thinking time a
table is a closed loop - Act, wait for the view, next Act - so ``N`` tables are ``N`` Acts in
flight. Right after, the same client loop runs against a bare ``grpc.aio`` echo server in its
own process (``bench/platform_echo.py``), at the same ``N``, for half the time.

Figures (one table row each, peer = the echo server where there is one):

* Act throughput (timed Acts per second in the window) and Act latency p50/p99, from the Act
  sent to the bot's WatchTable view that reflects it;
* Register → seated p50/p99: the Register call that filled a table (the last of its seats)
  sent → the table service's ``TableStarted`` (its ``occurred_at``);
* TournamentFinished → PrizeCredited p50/p99: the table's ``TournamentFinished`` → the last
  ``PrizeCredited`` of that tournament (payout's store), waiting (bounded) for the backlog.

``BENCH_PLATFORM_BACKENDS`` (default ``postgres,postgres-3tables,sqlite``) picks the set-ups
(``postgres-3tables``: the same cluster with the table service as three processes owning
tables by partition, issue 17: the 1 vs 3 instances rows of one run); PostgreSQL and
Kafka come from ``DATABASE_URL`` / ``KAFKA_BOOTSTRAP_SERVERS`` (else 127.0.0.1 defaults);
the services log at ``BENCH_PLATFORM_LOG_LEVEL`` (default WARNING). With
``BENCH_PLATFORM_AUDIT=1`` each set-up ends with ``electric-audit verify`` over its stores (and
its topics on Kafka): one more row, the failures it found (0 when the run passed). Every
note carries the 1-minute load average (the machine is shared).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import Row
from bench.platform_backends import (
    ROOT,
    Facts,
    Platform,
    audit,
    cluster,
    echo_server,
    embedded,
    wait_credited,
)
from bench.platform_kafka import published_finishes

AREA = "platform"
DEFAULT_PG = "postgresql+psycopg://electric:electric@127.0.0.1:5432/electric"


@dataclass(frozen=True)
class Settings:
    seconds: float = 20.0
    levels: tuple[int, ...] = (10, 25, 50)
    backends: tuple[str, ...] = ("postgres", "postgres-3tables", "sqlite")
    drain: float = 20.0
    credit_wait: float = 30.0
    log_level: str = "WARNING"
    strategy: str = "random"
    #: Run ``electric-audit verify`` over each set-up's stores (and topics) at its end.
    audit: bool = False

    @classmethod
    def from_env(cls) -> Settings:
        env = os.environ
        seconds = float(env.get("BENCH_PLATFORM_SECONDS", "20"))
        return cls(
            seconds=seconds,
            levels=tuple(int(x) for x in env.get("BENCH_PLATFORM_LEVELS", "10,25,50").split(",")),
            backends=tuple(
                b.strip()
                for b in env.get(
                    "BENCH_PLATFORM_BACKENDS", "postgres,postgres-3tables,sqlite"
                ).split(",")
            ),
            drain=float(env.get("BENCH_PLATFORM_DRAIN_SECONDS", str(max(5.0, seconds)))),
            credit_wait=float(env.get("BENCH_PLATFORM_CREDIT_WAIT_SECONDS", "30")),
            log_level=env.get("BENCH_PLATFORM_LOG_LEVEL", "WARNING"),
            strategy=env.get("BENCH_PLATFORM_STRATEGY", "random"),
            audit=env.get("BENCH_PLATFORM_AUDIT", "") not in ("", "0"),
        )


@dataclass
class Step:
    """One concurrency level on one backend: what the bots and the echo loop measured."""

    level: int
    bots: dict[str, Any]
    echo: dict[str, Any]
    load: float
    registered: dict[str, dict[str, float]] = field(default_factory=dict)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..1); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _load_process(args: list[str], timeout: float) -> dict[str, Any]:
    """Run ``python -m bench.platform_load ARGS``; its JSON result."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.platform_load", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        tail = done.stderr[-3000:]
        raise RuntimeError(f"load process {args[0]} failed ({done.returncode}):\n{tail}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run_step(platform: Platform, echo_target: str, level: int, s: Settings) -> Step:
    """Bots at ``level`` tables in flight, then the echo loop at the same level."""
    t = platform.targets
    bots = _load_process(
        [
            "bots",
            *("--registration", t["registration"], "--table", t["table"]),
            *("--wallet", t["wallet"], "--key", str(platform.issuer_key)),
            *("--prefix", f"bench-{platform.kind}-{level}-{uuid.uuid4().hex[:6]}"),
            *("--tables", str(level), "--seconds", str(s.seconds), "--drain", str(s.drain)),
            *("--strategy", s.strategy),
            *("--cpu", ",".join(f"{n}={pid}" for n, pid in platform.pids.items())),
            *(("--infra-cpu",) if platform.kafka else ()),
        ],
        timeout=s.seconds * 4 + s.drain + 120,
    )
    load = os.getloadavg()[0]
    echo_for = max(1.0, s.seconds / 2)
    echo = _load_process(
        ["echo", "--target", echo_target, "--tables", str(level), "--seconds", str(echo_for)],
        timeout=s.seconds + 60,
    )
    return Step(level, bots, echo, load, bots.get("registered", {}))


def _rate(result: dict[str, Any]) -> float:
    window = float(result["window"])
    return float(result["acts"]) / window if window > 0 else 0.0


def _in_flight(result: dict[str, Any]) -> float:
    """Acts in flight on average (Little's law: throughput × mean latency)."""
    samples: list[float] = result["latency_ms"]
    return _rate(result) * (sum(samples) / len(samples) / 1000) if samples else 0.0


def seated_ms(step: Step, facts: Facts) -> list[float]:
    """Per full table of this step: TableStarted − the last of its Register calls sent."""
    seats = int(step.bots.get("seats", 0))
    out = []
    for table_id, sent in step.registered.items():
        if table_id in facts.started and len(sent) == seats:
            out.append((facts.started[table_id] - max(sent.values())) * 1000)
    return out


def seating_split(step: Step, facts: Facts) -> str:
    """Where Register -> seated goes, p50/p99 of each leg: the filling Register sent ->
    registration's TableFilled (reserve and seat), -> its TournamentStarted (the owed buy-in
    posts and splits), -> the table service's TableStarted (relay, Kafka, consumer)."""
    seats = int(step.bots.get("seats", 0))
    legs: dict[str, list[float]] = {"seat": [], "settle": [], "deliver": []}
    for table_id, sent in step.registered.items():
        if len(sent) != seats or table_id not in facts.started:
            continue
        if table_id not in facts.filled or table_id not in facts.paid:
            continue
        marks = (max(sent.values()), facts.filled[table_id], facts.paid[table_id])
        for name, start, end in zip(
            legs, marks, (*marks[1:], facts.started[table_id]), strict=True
        ):
            legs[name].append((end - start) * 1000)
    return ", ".join(
        f"{name} p50 {percentile(ms, 0.5):.0f} p99 {percentile(ms, 0.99):.0f} ms"
        for name, ms in legs.items()
    )


def credit_ms(step: Step, facts: Facts) -> tuple[list[float], int]:
    """Finish → last credit per finished tournament of this step; and how many finished."""
    finished = [t for t in step.registered if t in facts.finished]
    lags = [(facts.credited[t] - facts.finished[t]) * 1000 for t in finished if t in facts.credited]
    return lags, len(finished)


def step_rows(kind: str, step: Step, facts: Facts) -> list[Row]:
    """The rows of one step: Act throughput and latency (peer: echo), seating, crediting."""
    tag = f"{kind}, {step.level} in flight"
    load = f"load {step.load:.1f}"
    bot_ms: list[float] = step.bots["latency_ms"]
    echo_ms: list[float] = step.echo["latency_ms"]
    peer = "grpc.aio echo, same loop"
    strategy = step.bots.get("strategy", "random")
    acts = (
        f"{step.bots['acts']} Acts, {step.bots['bots']} {strategy} bots, "
        f"mean in flight {_in_flight(step.bots):.1f}; {load}"
    )
    if step.bots.get("errors"):
        acts += f"; {step.bots['errors']} bot errors, last: {step.bots['last_errors'][-1:]}"
    if not bot_ms:
        acts += f"; no Act answered within {step.bots.get('waited', 0):.0f} s of the start"
    rows = [
        Row(
            AREA,
            f"Act throughput ({tag})",
            _rate(step.bots),
            "acts/s",
            peer,
            _rate(step.echo),
            acts,
        )
    ]
    for q, note in ((50, "sent -> view pushed"), (99, f"target <= 50 ms; {load}")):
        bot, echo = percentile(bot_ms, q / 100), percentile(echo_ms, q / 100)
        rows.append(Row(AREA, f"Act latency p{q} ({tag})", bot, "ms", peer, echo, note))
    seated = seated_ms(step, facts)
    seated_note = f"{len(seated)} tables (filling Register -> TableStarted); " + seating_split(
        step, facts
    )
    lags, finished = credit_ms(step, facts)
    awarded = [
        (facts.awarded[t] - facts.finished[t]) * 1000
        for t in step.registered
        if t in facts.finished and t in facts.awarded
    ]
    credit_note = (
        f"{len(lags)}/{finished} finished credited; of which finished -> PrizeAwarded "
        f"p50 {percentile(awarded, 0.5):.0f} p99 {percentile(awarded, 0.99):.0f} ms"
    )
    relayed = [
        (facts.published[t] - facts.finished[t]) * 1000
        for t in step.registered
        if t in facts.finished and t in facts.published
    ]
    recorded = [
        (facts.recorded[t] - facts.finished[t]) * 1000
        for t in step.registered
        if t in facts.finished and t in facts.recorded
    ]
    if recorded:
        credit_note += (
            f" (finished -> recorded p50 {percentile(recorded, 0.5):.0f} "
            f"p99 {percentile(recorded, 0.99):.0f} ms)"
        )
    if relayed:
        credit_note += (
            f" (finished -> on Kafka p50 {percentile(relayed, 0.5):.0f} "
            f"p99 {percentile(relayed, 0.99):.0f} ms)"
        )
    cpu: dict[str, float] = step.bots.get("cpu_ms_per_act") or {}
    for name, ms in sorted(cpu.items(), key=lambda kv: (kv[0] == "platform", -kv[1])):
        note = "user + system CPU in the timed window / Acts timed (bench/platform_cpu.py)"
        if name == "platform":
            note = "the sum of the rows above; target <= 4 ms (PostgreSQL/Kafka), <= 3 ms embedded"
        rows.append(Row(AREA, f"CPU per Act: {name} ({tag})", ms, "ms", note=note))
    for q in (50, 99):
        value = percentile(seated, q / 100)
        rows.append(Row(AREA, f"Register -> seated p{q} ({tag})", value, "ms", note=seated_note))
    for q in (50, 99):
        value = percentile(lags, q / 100)
        rows.append(Row(AREA, f"Finished -> credited p{q} ({tag})", value, "ms", note=credit_note))
    return rows


def _backend(kind: str, tmp: Path, s: Settings) -> AbstractContextManager[Platform]:
    if kind in ("postgres", "postgres-3tables"):
        pg = os.environ.get("DATABASE_URL") or DEFAULT_PG
        kafka = os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or "127.0.0.1:9092"
        tables = 3 if kind == "postgres-3tables" else 1
        return cluster(pg, kafka, tmp, s.log_level, table_instances=tables)
    if kind == "sqlite":
        return embedded(tmp, s.log_level)
    raise ValueError(f"unknown backend {kind!r} (postgres, postgres-3tables, sqlite)")


def run_backend(kind: str, tmp: Path, s: Settings) -> Iterator[Row]:
    """Every level on one backend; the rows once the credits of its tournaments are in."""
    with echo_server(tmp) as echo_target, _backend(kind, tmp, s) as platform:
        try:
            steps = [run_step(platform, echo_target, level, s) for level in s.levels]
        except Exception as exc:
            raise RuntimeError(f"{exc}\n{platform.log_tail()}") from exc
        tables = {t for step in steps for t in step.registered}
        facts = wait_credited(platform.stores, tables, s.credit_wait)
        if platform.kafka:
            facts.published = published_finishes(platform.kafka, platform.namespace)
        checked = audit(platform, budget=120.0) if s.audit else None
    for step in steps:
        yield from step_rows(kind, step, facts)
    if checked is not None:
        yield Row(
            AREA,
            f"audit of the run ({kind})",
            checked.failed,
            "failures",
            note=f"electric-audit verify; {checked.summary}",
        )


def _unreachable(kind: str) -> str:
    """Why the ``postgres`` set-up cannot run here ("" when PostgreSQL and Kafka answer)."""
    if not kind.startswith("postgres"):
        return ""
    import socket

    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(os.environ.get("DATABASE_URL") or DEFAULT_PG)
    kafka = (os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or "127.0.0.1:9092").split(",")[0]
    try:
        dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        psycopg.connect(dsn, connect_timeout=5).close()
        host, _, port = kafka.rpartition(":")
        socket.create_connection((host, int(port)), timeout=5).close()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def run() -> list[Row]:
    s = Settings.from_env()
    rows: list[Row] = []
    for kind in s.backends:
        if why := _unreachable(kind):
            print(f"# platform {kind} skipped: {why} (deploy/infra.sh up)", file=sys.stderr)
            continue
        started = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix=f"bench-platform-{kind}-") as tmp:
            rows.extend(run_backend(kind, Path(tmp), s))
        print(f"# platform {kind} took {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return rows
