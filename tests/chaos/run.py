"""The chaos run (issue 18 item 1): load, seeded faults, drain, invariants, report.

1. Own infrastructure: a PostgreSQL cluster and a Kafka broker started by deploy/postgres.sh
   and deploy/kafka.sh on free loopback ports with their own data directories (the faults
   restart and pause them; the shared instances are never touched), stopped at the end.
2. The four services as separate processes (``run_cluster`` of the platform e2e tests), the
   table service as ``table_instances`` processes on one database (partition ownership).
3. Load: tournament bots (``BotRunner``) and casino bots (``CasinoRunner``: private THB tables
   and the live UTH table) until ``tournaments`` finished, ``rounds`` casino rounds were
   played and every fault was injected, or ``duration`` seconds passed; then they drain.
4. Faults from :func:`tests.chaos.faults.schedule` (seeded), one after another.
5. Wait until quiet, then every invariant from independent data (:mod:`.invariants`).
6. A table of faults and outcomes on stdout, the same in ``report.json``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import shutil
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from electric_bots.casino_runner import CasinoRunner, CasinoRunnerConfig
from electric_bots.runner import BotRunner, BotRunnerConfig, Targets

from tests.chaos import invariants as inv
from tests.chaos import pauses
from tests.chaos.faults import ALL_KINDS, KINDS, Injector, instances, schedule
from tests.chaos.infra import ROOT, PrivateKafka, PrivatePostgres
from tests.chaos.partition import Partitions
from tests.chaos.partition import ensure as ensure_partitions
from tests.chaos.replicated import PrivateKafkaCluster, PrivatePostgresHA
from tests.support.auth import ISSUER_KEY


@dataclass
class ChaosConfig:
    seed: int = 1
    tournaments: int = 20
    rounds: int = 100
    faults: int = 30
    #: Bound of the load phase in seconds (drain and checks come after it).
    duration: float = 900.0
    kinds: tuple[str, ...] = KINDS
    #: Mean seconds between faults (less when the faults would not fit the duration).
    gap: float = 6.0
    tournament_bots: int = 24
    thb_bots: int = 6
    uth_bots: int = 4
    #: Table-service processes on one table database (issue 17's partition ownership): the
    #: faults kill and pause each, and the bots reach them through one target.
    table_instances: int = 2
    #: Seconds the drain may take before the run fails as "not quiet".
    drain_budget: float = 300.0
    #: A broker to use instead of starting one (only without ``kafka_restart`` faults).
    shared_kafka: str | None = None
    #: A 3-broker Kafka cluster and PostgreSQL with failover instead of one of each
    #: (issue 28); needed by the ``broker_loss`` and ``pg_failover`` faults.
    replicated: bool = False
    #: The services' ELECTRIC_LOG_LEVEL (INFO: every ownership move and fence in the logs,
    #: to explain a long pause; about 1 GB an hour at this load).
    log_level: str = "WARNING"
    out: Path = ROOT / "var" / "chaos"


@dataclass
class Report:
    config: dict[str, Any]
    run_dir: str
    #: The run's Kafka namespace (its topics are ``<namespace>.electric.…``).
    namespace: str = ""
    passed: bool = False
    seconds: dict[str, float] = field(default_factory=dict)
    load: dict[str, Any] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    unexpected_exits: list[tuple[str, int, float]] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""


def _pg_dir() -> Path:
    """Under /var/tmp: the server runs as the `postgres` OS user when we are root, and
    that user must reach its directory (a private run directory may be 0700)."""
    base = Path("/var/tmp/electric-chaos")
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o755)
    return base / f"pg-{uuid.uuid4().hex[:10]}"


def run(cfg: ChaosConfig, log: Callable[[str], None] = print) -> Report:
    """The whole run, synchronously; always stops what it started."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    run_dir = cfg.out / f"seed{cfg.seed}-{stamp}-{uuid.uuid4().hex[:4]}"
    run_dir.mkdir(parents=True)
    report = Report({k: str(v) for k, v in asdict(cfg).items()}, str(run_dir))
    victims = instances(cfg.table_instances)
    faults = schedule(cfg.seed, cfg.faults, cfg.duration, cfg.kinds, cfg.gap, victims)
    log(f"chaos seed {cfg.seed}: {len(faults)} faults {dict(Counter(f.kind for f in faults))}")
    log(f"  run directory {run_dir}")
    if cfg.shared_kafka and ({"kafka_restart", "broker_loss"} & set(cfg.kinds)):
        raise ValueError("Kafka faults need the run's own broker (no shared_kafka)")
    if not cfg.replicated and ({"broker_loss", "pg_failover"} & set(cfg.kinds)):
        raise ValueError("broker_loss and pg_failover faults need --replicated")
    postgres: PrivatePostgres | PrivatePostgresHA
    kafka: PrivateKafka | PrivateKafkaCluster
    if cfg.replicated:
        postgres = PrivatePostgresHA(_pg_dir())
        kafka = PrivateKafkaCluster(run_dir / "kafka")
    else:
        postgres = PrivatePostgres(_pg_dir())
        kafka = PrivateKafka(run_dir / "kafka", external=cfg.shared_kafka)
    partitions = None
    if "partition" in cfg.kinds:
        ensure_partitions()
        partitions = Partitions()
    began = time.monotonic()
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for f in [pool.submit(postgres.up), pool.submit(kafka.up)]:
                f.result()
        report.seconds["infra_up"] = round(time.monotonic() - began, 1)
        up = report.seconds["infra_up"]
        whose = "shared" if kafka.external else "own"
        log(f"  own PostgreSQL {postgres.url}, {whose} Kafka {kafka.bootstrap} up ({up}s)")
        cluster_mod = inv.e2e()[0].platform_cluster()
        extra = {
            "ELECTRIC_TABLE_HAND_PAUSE_MS": "0",
            "ELECTRIC_LOG_LEVEL": cfg.log_level,
            **inv.e2e()[0].UTH_WINDOWS,
            **(kafka.service_env if isinstance(kafka, PrivateKafkaCluster) else {}),
        }

        def cgroup_for(name: str, ports: tuple[int, ...]) -> Path | None:
            table = name.split("-")[0] == "table"
            return partitions.cgroup(name, ports) if partitions and table else None

        t = time.monotonic()
        with cluster_mod.run_cluster(
            postgres.url,
            kafka.bootstrap,
            run_dir / "cluster",
            extra_env=extra,
            table_instances=cfg.table_instances,
            cgroup_for=cgroup_for,
        ) as cluster:
            report.seconds["services_up"] = round(time.monotonic() - t, 1)
            report.namespace = cluster.namespace
            log(f"  services up ({report.seconds['services_up']}s), namespace {cluster.namespace}")
            asyncio.run(
                _play_and_check(cfg, faults, cluster, postgres, kafka, partitions, report, log)
            )
    except Exception as exc:
        report.error = f"{type(exc).__name__}: {exc}"
        log(f"  ERROR {report.error}")
    finally:
        if partitions is not None:
            partitions.close()
        for stop in (kafka.down, postgres.down):
            try:
                stop()
            except Exception as exc:  # keep going: the other one must stop too
                log(f"  stopping infra: {exc}")
        for log_file in [postgres.dir / "postgres.log", *postgres.dir.glob("*/keeper.log")]:
            if log_file.exists():
                name = log_file.name if log_file.parent == postgres.dir else log_file.parent.name
                shutil.copy(log_file, run_dir / f"postgres-{name}.log")
    report.seconds["total"] = round(time.monotonic() - began, 1)
    report.passed = not report.error and all(c["ok"] for c in report.checks) and bool(report.checks)
    if report.passed:
        shutil.rmtree(postgres.dir, ignore_errors=True)
        for data in list((run_dir / "kafka").glob("**/data")):  # one broker or three
            shutil.rmtree(data, ignore_errors=True)
    else:  # the stores and topics of a failed run are kept (stopped) for inspection
        log(f"  kept: PostgreSQL data {postgres.dir}, Kafka data {run_dir / 'kafka'}")
    (run_dir / "report.json").write_text(json.dumps(asdict(report), indent=2, default=str))
    return report


async def _play_and_check(
    cfg: ChaosConfig,
    faults: list[Any],
    cluster: Any,
    postgres: PrivatePostgres | PrivatePostgresHA,
    kafka: PrivateKafka | PrivateKafkaCluster,
    partitions: Partitions | None,
    report: Report,
    log: Callable[[str], None],
) -> None:
    targets = Targets(
        registration=cluster.target("registration"),
        table=cluster.target("table"),
        wallet=cluster.target("wallet"),
    )
    tag = f"ch{cfg.seed}{uuid.uuid4().hex[:4]}"
    bots = BotRunner(
        BotRunnerConfig(
            targets=targets,
            key=ISSUER_KEY,
            bots=cfg.tournament_bots,
            mix=(("random", 5), ("tag", 1)),  # loose bots end tournaments quickly
            deposit_cents=200_000,
            seed=cfg.seed,
            player_prefix=f"{tag}t",
        )
    )
    casino = CasinoRunner(
        CasinoRunnerConfig(
            targets=targets,
            key=ISSUER_KEY,
            thb_bots=cfg.thb_bots,
            uth_bots=cfg.uth_bots,
            never_every=10,
            player_prefix=f"{tag}c",
        )
    )
    injector = Injector(
        cluster,
        postgres,
        kafka,
        ISSUER_KEY,
        tournament_players=lambda: [a.player_id for a in bots.assignments],
        casino_players=lambda: [p for p, game, _ in casino.assignments if game == "uth"],
        log=log,
        partitions=partitions,
    )
    loop = asyncio.get_running_loop()
    # Faults run blocking steps in threads (restarts, pauses): never short of workers.
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(32))
    interrupted = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, interrupted.set)
    done = asyncio.Event()
    load_began = time.monotonic()
    tasks = {
        "bots": asyncio.create_task(bots.run()),
        "casino": asyncio.create_task(casino.run()),
        "faults": asyncio.create_task(injector.run(faults, load_began, done)),
    }
    supervisor = asyncio.create_task(injector.supervise(asyncio.Event()))

    def rounds() -> int:
        return int(casino.stats.claimed["thb"]) + len(casino.uth_rounds_seen)

    def progress() -> str:
        return (
            f"[{time.monotonic() - load_began:6.0f}s] tournaments "
            f"{len(bots.stats.tables_finished)}/{cfg.tournaments}, casino rounds "
            f"{rounds()}/{cfg.rounds}, faults {len(injector.outcomes)}/{len(faults)}, "
            f"bot errors {bots.stats.errors}+{casino.stats.errors}"
        )

    try:
        next_print = 0.0
        while True:
            enough = (
                len(bots.stats.tables_finished) >= cfg.tournaments
                and rounds() >= cfg.rounds
                and tasks["faults"].done()
            )
            late = time.monotonic() - load_began > cfg.duration
            if interrupted.is_set():  # Ctrl-C / SIGTERM: stop everything, keep no result
                bots.stop.set()
                casino.stop.set()
                done.set()
                raise KeyboardInterrupt
            if enough or late:
                break
            if time.monotonic() >= next_print:
                log(progress())
                next_print = time.monotonic() + 15
            await asyncio.sleep(0.5)
        log(progress() + (" (duration bound)" if late else "") + ": draining")
        done.set()  # the current fault finishes; no new one
        bots.draining.set()
        casino.config.duration = 0  # no new casino round; the ones dealt finish
        drain_began = time.monotonic()
        pending = [tasks["bots"], tasks["casino"], tasks["faults"]]
        still = set(pending)
        while still and time.monotonic() - drain_began < cfg.drain_budget:
            if interrupted.is_set():
                raise KeyboardInterrupt
            _, still = await asyncio.wait(still, timeout=15)
            if still:
                log(
                    progress()
                    + f": draining ({', '.join(n for n, t in tasks.items() if t in still)})"
                )
        if still:
            bots.stop.set()
            casino.stop.set()
            await asyncio.wait(still, timeout=60)
            report.checks.append(asdict(inv.Check("bots drained", False, f"{len(still)} stuck")))
        report.seconds["load"] = round(drain_began - load_began, 1)
        try:
            await inv.wait_quiet(cluster, cfg.drain_budget, log)
        except TimeoutError as exc:  # checked anyway: the invariants say what is missing
            report.checks.append(
                asdict(inv.Check("platform quiet after the drain", False, str(exc)))
            )
        report.seconds["drain"] = round(time.monotonic() - drain_began, 1)
        log(f"  drained in {report.seconds['drain']:.0f}s; checking the invariants")
    finally:
        supervisor.cancel()
        for task in tasks.values():
            if not task.done():
                task.cancel()
        await asyncio.gather(*tasks.values(), supervisor, return_exceptions=True)
    report.faults = [o.as_dict() for o in injector.outcomes]
    report.unexpected_exits = injector.unexpected_exits
    bstats, cstats = bots.stats, casino.stats
    report.load = {
        "tournaments_seen_by_bots": len(bstats.tables_finished),
        "casino_rounds_claimed": rounds(),
        "tournament_bot_errors": bstats.errors,
        "tournament_bot_last_errors": bstats.last_errors[-5:],
        "casino_bot_errors": cstats.errors,
        "casino_bot_last_errors": cstats.last_errors[-5:],
        "resubscribes": bstats.resubscribes,
        "casino_retries": cstats.retries,
        "casino_watches_reopened_at_token_expiry": cstats.reopened,
        "longest_call": {
            "tournament": asdict(bstats.longest_wait),
            **{game: asdict(w) for game, w in cstats.longest_wait.items()},
        },
    }
    with contextlib.suppress(Exception):  # a figure for the report, never a verdict
        topics = await inv.read_topics(kafka.bootstrap, cluster.namespace)
        events = topics["table"].events()
        report.load["longest_pause"] = pauses.longest_pauses(
            (e.stream_id, e.event_type, e.occurred_at.seconds + e.occurred_at.nanos / 1e9)
            for e in events
        )
    t = time.monotonic()
    report.checks += [asdict(c) for c in await _checks(cluster, kafka.bootstrap, bots, casino, log)]
    report.seconds["checks"] = round(time.monotonic() - t, 1)


async def _step(out: list[inv.Check], name: str, fn: Callable[[], Any]) -> Any:
    """Run one check; a failure is recorded (with its message), never raised."""
    try:
        got = fn()
        if asyncio.iscoroutine(got):
            got = await got
    except Exception as exc:  # AssertionError and any error of the check itself
        out.append(inv.Check(name, False, f"{type(exc).__name__}: {exc}"[:2000]))
        return None
    text, value = got if isinstance(got, tuple) else (got, got)
    out.append(inv.Check(name, True, str(text)))
    return value


async def _check_once(
    cluster: Any, bootstrap: str, tournament_players: set[str], casino_players: set[str]
) -> list[inv.Check]:
    casino_mod, _, platform = inv.e2e()
    out: list[inv.Check] = []
    topics = await inv.read_topics(bootstrap, cluster.namespace)
    wallet = inv.Wallet.fold(topics["wallet"])
    facts, cancelled = inv.tournament_facts(platform, topics)
    await _step(out, "no event duplicated beyond redelivery", lambda: inv.check_duplicates(topics))
    await _step(
        out,
        "tournaments finished or cancelled with refunds",
        lambda: inv.check_tournaments(platform, facts, cancelled, wallet),
    )
    prizes = await _step(
        out,
        "every prize credited exactly once",
        lambda: inv.check_prizes(platform, facts, wallet),
    )
    if prizes is not None:
        await _step(
            out,
            "tournament balances = independent computation",
            lambda: inv.check_tournament_balances(facts, wallet, tournament_players, prizes),
        )
    casino_facts = await casino_mod.read_casino_facts(bootstrap, cluster.namespace)
    await _step(
        out,
        "casino: every win credited once, balances, bankroll",
        lambda: casino_mod.check_money(casino_facts, casino_players),
    )
    await _step(out, "ledger sums to zero", lambda: inv.check_ledger(platform, cluster, wallet))
    await _step(
        out,
        "wallet balances = topic (all players)",
        lambda: inv.check_wallet_answers(cluster, facts, cancelled, wallet),
    )
    return out


async def _checks(
    cluster: Any,
    bootstrap: str,
    bots: BotRunner,
    casino: CasinoRunner,
    log: Callable[[str], None],
) -> list[inv.Check]:
    """Every invariant; the topic checks are retried for up to 60 s (consumers and relays
    may deliver the last events a moment after the metrics went quiet)."""
    tournament_players = {a.player_id for a in bots.assignments}
    casino_players = {p for p, _, _ in casino.assignments}
    deadline = time.monotonic() + 60
    while True:
        out = await _check_once(cluster, bootstrap, tournament_players, casino_players)
        if all(c.ok for c in out) or time.monotonic() > deadline:
            break
        log(f"  not yet: {[c.name for c in out if not c.ok]}; again in 5s")
        await asyncio.sleep(5)
    log("  electric-audit verify ...")
    audit = inv.e2e()[1]
    await _step(
        out,
        "electric-audit verify (stores + topics)",
        lambda: asyncio.to_thread(inv.audit_verify, audit, cluster, bootstrap, 120.0),
    )
    return out


def table(report: Report) -> str:
    """The faults by kind and their outcomes, then the checks."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for f in report.faults:
        by_kind.setdefault(f["kind"], []).append(f)
    lines = [
        f"{'fault':<14} {'injected':>8} {'ok':>4} {'failed':>6} {'max took s':>10} "
        f"{'max recovery s':>14}",
        "-" * 62,
    ]
    for kind in ALL_KINDS:
        rows = by_kind.get(kind, [])
        if not rows:
            continue
        ok = sum(1 for r in rows if r["ok"])
        lines.append(
            f"{kind:<14} {len(rows):>8} {ok:>4} {len(rows) - ok:>6} "
            f"{max(r['took'] for r in rows):>10.1f} {max(r['recovered'] for r in rows):>14.1f}"
        )
    lines.append(f"{'total':<14} {len(report.faults):>8}")
    lines.append("")
    exits = report.unexpected_exits
    lines.append(f"unexpected service exits (restarted): {len(exits)} {exits}")
    lines.append(f"load: {report.load}")
    lines += pauses.describe(report.load.get("longest_pause", {}))
    for bots, wait in report.load.get("longest_call", {}).items():
        lines.append(
            f"longest call a {bots} bot waited for, retries included: {wait['seconds']}s, "
            f"{wait['call']} by {wait['player']} from {wait['began']}"
        )
    lines.append("")
    for c in report.checks:
        lines.append(f"{'PASS' if c['ok'] else 'FAIL'}  {c['name']}: {c['detail']}")
    if report.error:
        lines.append(f"ERROR {report.error}")
    lines.append(f"seconds: {report.seconds}")
    return "\n".join(lines)
