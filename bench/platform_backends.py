"""Set-ups of ``python -m bench platform``: where the platform runs, and what its stores say.

* :func:`cluster` - the four services as separate processes on PostgreSQL and Kafka (fresh
  databases, a ``bench-<random>`` Kafka namespace), through the platform e2e tests' helper
  ``tests/e2e/platform/platform_cluster.py``;
* :func:`embedded` - ``python -m electric_runner`` (the embedded SQLite default: the four
  services in ONE process, no bots of its own);
* :func:`echo_server` - ``bench/platform_echo.py`` in its own process;
* :func:`read_facts` - the events of the registration, table and payout stores (SQLite or
  PostgreSQL) the figures are computed from: ``TableStarted``, ``TournamentFinished`` and
  ``PrizeCredited`` with their ``occurred_at`` (wall clock of the writing service).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ADDRESS = re.compile(r"^\s+(registration|table|wallet|payout)\s+grpc (127\.0\.0\.1:\d+)", re.M)
MINT = re.compile(r"python -m electric_platform\.token --key (\S+) --sub")


@dataclass
class Platform:
    """A running platform: gRPC targets, the issuer key file, the stores' database URLs."""

    kind: str
    targets: dict[str, str]
    issuer_key: Path
    stores: dict[str, str]
    logs: list[Path] = field(default_factory=list)
    #: Kafka bootstrap servers and namespace (empty: the in-process bus).
    kafka: str = ""
    namespace: str = ""
    #: The platform's own processes by name (CPU per Act, ``bench/platform_cpu.py``).
    pids: dict[str, int] = field(default_factory=dict)
    #: Where the services keep their keys (the checkpoint keys the audit verifies with).
    keys: Path | None = None

    def log_tail(self, chars: int = 3000) -> str:
        out = []
        for path in self.logs:
            with contextlib.suppress(OSError):
                out.append(f"--- {path.name}\n{path.read_text(errors='replace')[-chars:]}")
        return "\n".join(out)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clean_env() -> dict[str, str]:
    drop = ("DATABASE_URL", "KAFKA_BOOTSTRAP_SERVERS")
    return {k: v for k, v in os.environ.items() if not k.startswith("ELECTRIC_") and k not in drop}


def service_env(log_level: str) -> dict[str, str]:
    """Knobs of the services under load: no pause between hands; the log level."""
    return {"ELECTRIC_TABLE_HAND_PAUSE_MS": "0", "ELECTRIC_LOG_LEVEL": log_level}


@contextlib.contextmanager
def cluster(
    pg_url: str, kafka: str, tmp: Path, log_level: str, table_instances: int = 1
) -> Iterator[Platform]:
    """Four service processes on fresh PostgreSQL databases and a fresh Kafka namespace;
    with ``table_instances`` > 1 the table service runs as that many processes on its one
    database, owning tables by partition (issue 17, docs/scaling.md); the clients' table
    target names them all (each forwards a call to the table's owner)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    platform_dir = str(ROOT / "tests/e2e/platform")
    if platform_dir not in sys.path:
        sys.path.insert(0, platform_dir)
    from platform_cluster import run_cluster

    from tests.support.auth import write_keys

    namespace = f"bench-{uuid.uuid4().hex[:12]}"
    env = service_env(log_level)
    if table_instances > 1:
        env["ELECTRIC_TABLE_OWNERSHIP"] = "partitions"
    with (
        run_cluster(pg_url, kafka, tmp, extra_env=env, namespace=namespace) as c,
        contextlib.ExitStack() as extra,
    ):
        procs = c.procs
        targets = {name: c.target(name) for name in procs}
        logs = [p.log_path for p in procs.values()]  # type: ignore[attr-defined]
        tables = [targets["table"]]
        pids = {name: p.popen.pid for name, p in procs.items()}  # type: ignore[attr-defined]
        for k in range(2, table_instances + 1):
            port = _free_port()
            address = f"127.0.0.1:{port}"
            table_env = {
                **c.envs["table"],
                "ELECTRIC_GRPC_PORT": str(port),
                "ELECTRIC_METRICS_PORT": "-1",
                "ELECTRIC_TABLE_ADVERTISED_ADDRESS": address,
            }
            logs.append(tmp / f"table-{k}.log")
            with logs[-1].open("ab") as log:
                proc = subprocess.Popen(
                    [sys.executable, "-m", "electric_table"],
                    env=table_env,
                    cwd=tmp,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            extra.callback(_stop, proc)
            pids[f"table-{k}"] = proc.pid
            tables.append(address)
            _wait_health(address, proc, logs[-1])
        if table_instances > 1:
            targets["table"] = "ipv4:" + ",".join(tables)
        yield Platform(
            kind="postgres" if table_instances == 1 else f"postgres-{table_instances}tables",
            targets=targets,
            issuer_key=write_keys(tmp / "keys").issuer,
            stores={name: str(p.db_url) for name, p in procs.items()},  # type: ignore[attr-defined]
            logs=logs,
            kafka=kafka,
            namespace=namespace,
            pids=pids,
            keys=procs["table"].log_path.parent / "keys",  # type: ignore[attr-defined]
        )


def _wait_health(address: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Until the gRPC health check at ``address`` answers SERVING (120 s at most)."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(
                f"table instance {address} did not start:\n{log.read_text()[-3000:]}"
            )
        with contextlib.suppress(grpc.RpcError), grpc.insecure_channel(address) as ch:
            got = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=1)
            if got.status == health_pb2.HealthCheckResponse.SERVING:
                return
        time.sleep(0.3)


@contextlib.contextmanager
def embedded(tmp: Path, log_level: str, timeout: float = 120.0) -> Iterator[Platform]:
    """``python -m electric_runner`` with its own var dir, SQLite stores, no bots."""
    var = tmp / "var"
    env = {**_clean_env(), "ELECTRIC_VAR_DIR": str(var), **service_env(log_level)}
    log_path = tmp / "runner.log"
    with log_path.open("wb") as log:
        # BENCH_PLATFORM_PROFILE=FILE: the runner under cProfile (stats written at its exit).
        profile = os.environ.get("BENCH_PLATFORM_PROFILE", "")
        prefix = ("-m", "cProfile", "-o", str(Path(profile).resolve())) if profile else ()
        proc = subprocess.Popen(
            [
                *(sys.executable, *prefix, "-m", "electric_runner", "--free-ports"),
                *("--refresh", "3600"),
                *("--bots", "0", "--thb-bots", "0", "--uth-bots", "0"),
                *("--log-file", str(tmp / "services.log")),
            ],
            cwd=tmp,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + timeout
        while True:
            text = log_path.read_text(errors="replace")
            targets = dict(ADDRESS.findall(text))
            mint = MINT.search(text)
            if len(targets) == 4 and mint is not None:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"electric_runner did not start:\n{text[-3000:]}")
            time.sleep(0.3)
        key = Path(mint.group(1))
        yield Platform(
            kind="sqlite",
            targets=targets,
            issuer_key=key if key.is_absolute() else tmp / key,
            stores={name: f"sqlite:///{var / f'{name}.db'}" for name in targets},
            logs=[log_path, tmp / "services.log"],
            pids={"runner (4 services)": proc.pid},
            keys=var / "keys",
        )
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@contextlib.contextmanager
def echo_server(tmp: Path) -> Iterator[str]:
    """``bench/platform_echo.py`` in its own process; yields its target."""
    port = _free_port()
    out = tmp / "echo.log"
    with out.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.platform_echo", str(port)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "serving" not in out.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"echo server did not start: {out.read_text()}")
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        _stop(proc)


# --------------------------------------------------------------------------- the stores


@dataclass
class Facts:
    """Wall-clock seconds of the events the figures need."""

    #: table id -> TableStarted (the table service has the table with its seats).
    started: dict[str, float] = field(default_factory=dict)
    #: tournament id -> TournamentFinished.
    finished: dict[str, float] = field(default_factory=dict)
    #: tournament id -> the LAST PrizeCredited of that tournament (all its prizes credited).
    credited: dict[str, float] = field(default_factory=dict)
    #: tournament id -> the first PrizeAwarded (payout consumed TournamentFinished).
    awarded: dict[str, float] = field(default_factory=dict)
    #: tournament id -> TournamentFinished's record on Kafka (producer timestamp).
    published: dict[str, float] = field(default_factory=dict)
    #: tournament id -> TournamentFinished's ``recorded_at`` (the table's commit clock).
    recorded: dict[str, float] = field(default_factory=dict)
    #: table id -> registration's TableFilled (the last seat taken: seating done).
    filled: dict[str, float] = field(default_factory=dict)
    #: table id -> registration's TournamentStarted (every buy-in posted and split).
    paid: dict[str, float] = field(default_factory=dict)


def _events(url: str, producer: str, types: set[str]) -> Iterator[object]:
    from electric_eventlog import EventStore, create_engine

    engine = create_engine(url)
    try:
        store = EventStore(engine, producer=producer, topic="")
        with engine.connect() as conn:
            for env in store.iter_all(conn):
                if env.event_type in types:
                    yield env
    finally:
        engine.dispose()


def _recorded(url: str, positions: dict[int, str]) -> list[tuple[int, float]]:
    """``recorded_at`` (wall-clock seconds) of the events at ``positions``."""
    from electric_eventlog import create_engine, schema
    from sqlalchemy import select

    if not positions:
        return []
    engine = create_engine(url)
    try:
        events = schema.events
        query = select(events.c.global_position, events.c.recorded_at).where(
            events.c.global_position.in_(list(positions))
        )
        with engine.connect() as conn:
            return [(int(p), r.timestamp()) for p, r in conn.execute(query)]
    finally:
        engine.dispose()


def read_facts(stores: dict[str, str]) -> Facts:
    """Fold the registration, table and payout stores into :class:`Facts`."""
    from electric.eventlog.v1.envelope_pb2 import Envelope
    from electric.payout.v1 import events_pb2 as payout_events
    from electric.registration.v1 import events_pb2 as registration_events
    from electric.table.v1 import events_pb2 as table_events

    facts = Facts()
    positions: dict[int, str] = {}
    started_t = table_events.TableStarted.DESCRIPTOR.full_name
    finished_t = table_events.TournamentFinished.DESCRIPTOR.full_name
    credited_t = payout_events.PrizeCredited.DESCRIPTOR.full_name
    awarded_t = payout_events.PrizeAwarded.DESCRIPTOR.full_name

    def at(env: Envelope) -> float:
        return env.occurred_at.seconds + env.occurred_at.nanos / 1e9

    for env in _events(stores["table"], "table", {started_t, finished_t}):
        assert isinstance(env, Envelope)
        if env.event_type == started_t:
            ts = table_events.TableStarted()
            env.payload.Unpack(ts)
            facts.started.setdefault(ts.table_id, at(env))
        else:
            fin = table_events.TournamentFinished()
            env.payload.Unpack(fin)
            facts.finished.setdefault(fin.tournament_id or fin.table_id, at(env))
            positions[env.global_position] = fin.tournament_id or fin.table_id
    filled_t = registration_events.TableFilled.DESCRIPTOR.full_name
    paid_t = registration_events.TournamentStarted.DESCRIPTOR.full_name
    for env in _events(stores["registration"], "registration", {filled_t, paid_t}):
        assert isinstance(env, Envelope)
        # Both events are on the table's stream: its id is the stream's.
        table_id = env.stream_id.removeprefix("registration-table-")
        (facts.filled if env.event_type == filled_t else facts.paid).setdefault(table_id, at(env))
    for position, recorded in _recorded(stores["table"], positions):
        facts.recorded.setdefault(positions[position], recorded)
    for env in _events(stores["payout"], "payout", {credited_t, awarded_t}):
        assert isinstance(env, Envelope)
        if env.event_type == awarded_t:
            pa = payout_events.PrizeAwarded()
            env.payload.Unpack(pa)
            facts.awarded.setdefault(pa.tournament_id, at(env))
            continue
        pc = payout_events.PrizeCredited()
        env.payload.Unpack(pc)
        facts.credited[pc.tournament_id] = max(facts.credited.get(pc.tournament_id, 0.0), at(env))
    return facts


@dataclass(frozen=True)
class Audit:
    """What ``electric-audit verify`` said of a run."""

    #: Items that failed, over every check (0: the run passed).
    failed: int
    #: ``check checked/failed`` of every check, and the first failure's location if any.
    summary: str


def audit(platform: Platform, budget: float) -> Audit:
    """``electric-audit verify`` over the run's stores with the services' checkpoint keys,
    retried until it passes or ``budget`` seconds pass.

    The stores only: the tables left by the bots play on (their players time out) and
    append faster than the relay publishes, so a store-to-topic comparison would count the
    relay's backlog. The e2e audit step (tests/e2e/platform/audit_step.py) compares stores
    and topics once play has ended."""
    args = [arg for url in platform.stores.values() for arg in ("--store", url)]
    if platform.keys is not None and platform.keys.is_dir():
        args += ["--checkpoint-keys", str(platform.keys)]
    deadline = time.monotonic() + budget
    while True:
        proc = subprocess.run(
            [sys.executable, "-m", "electric_audit.cli", "verify", *args, "--json"],
            capture_output=True,
            text=True,
            timeout=max(60.0, budget),
            check=False,
        )
        results = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
        failed = sum(int(r.get("failed", 0)) for r in results)
        if (proc.returncode == 0 and results and not failed) or time.monotonic() > deadline:
            break
        time.sleep(3)
    if not results:
        return Audit(1, f"electric-audit verify exit {proc.returncode}: {proc.stderr[-300:]}")
    parts = [f"{r['check']} {r['checked']}/{r['failed']}" for r in results]
    first = next((r for r in results if r.get("failed")), None)
    if first is not None:
        parts.append(f"first failure: {str(first.get('first_failure', ''))[:200]}")
    return Audit(failed, "checked/failed: " + ", ".join(parts))


def wait_credited(stores: dict[str, str], tables: set[str], timeout: float) -> Facts:
    """Read the stores until every finished tournament of ``tables`` is credited (bounded)."""
    deadline = time.monotonic() + timeout
    while True:
        facts = read_facts(stores)
        owed = {t for t in tables if t in facts.finished and t not in facts.credited}
        if not owed or time.monotonic() > deadline:
            return facts
        time.sleep(1.0)
