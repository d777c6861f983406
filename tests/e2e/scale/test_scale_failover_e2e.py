"""Issue 17 end to end: the table service as THREE processes (``ELECTRIC_TABLE_OWNERSHIP=
partitions``) on one table database, with TWO processes each of registration, wallet and
payout (each pair on one database, one consumer group), on PostgreSQL and Kafka; bots play
Electric Poker over gRPC through one channel naming the three table instances (any instance
forwards a call to the table's owner) and round-robin channels naming both registration and
both wallet instances; registration and payout call both wallet instances the same way.

* mid-play, the instance owning the most running tables is killed with SIGKILL; the time
  from the kill to the next event appended to each of its tables is measured and must stay
  under ``ELECTRIC_E2E_SCALE_FAILOVER_S`` (the issue's 10 s in ``make e2e-scale``; 20 s by
  default, for a loaded CI machine);
* later a fourth instance joins; the group rebalances and gives it partitions;
* every tournament finishes (one TournamentFinished), every stream is intact (contiguous
  versions, action numbers 1..n per hand, no request applied twice), the Acts the bots got
  an OK for are exactly the stored player actions (none lost, none repeated), and payout
  credits each winner of each tournament exactly once, the prizes adding up to the pool;
* both instances of registration and wallet served calls; the wallet's ledger balances
  (the posted amounts of all accounts sum to zero) and its projections are the fold of
  its events.

Size: ``ELECTRIC_E2E_SCALE_TOURNAMENTS`` (default 4) and ``ELECTRIC_E2E_SCALE_BOTS``
(default 12); ``make e2e-scale`` runs the issue's 50 tournaments.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import events_pb2 as payout_events
from electric.registration.v1 import events_pb2 as reg_events
from electric.table.v1 import events_pb2 as tev
from electric_bots.runner import BotRunner, BotRunnerConfig, Targets
from electric_eventlog import EventStore
from electric_eventlog.kafka import KafkaBus
from scale_casino import (
    UTH_BOTS,
    casino_env,
    casino_runner,
    check_uth_rounds,
    play_on,
    uth_owner,
    uth_rounds_played,
)
from scale_fleet import Member, StoreProbe, TableFleet, base_env

from tests.e2e.platform.platform_cluster import Proc, free_port, wait_serving
from tests.support.auth import ISSUER_KEY, checkpoint_keys_env, write_keys
from tests.support.infra import fresh_database
from tests.support.table_kit import check_stream, decode_stream

TOURNAMENTS = int(os.environ.get("ELECTRIC_E2E_SCALE_TOURNAMENTS", "4"))
BOTS = int(os.environ.get("ELECTRIC_E2E_SCALE_BOTS", "12"))
#: The issue's bound is 10 s (``make e2e-scale`` asserts it); the default suite runs on a
#: shared, loaded CI machine where CPU starvation alone has cost seconds
#: (11.2 s once at load average 34), so it only asserts that failover stays within 20 s.
FAILOVER_LIMIT_S = float(os.environ.get("ELECTRIC_E2E_SCALE_FAILOVER_S", "20"))
#: Wall-clock budget of the bots (a 2-core machine shared with other work).
PLAY_BUDGET_S = 120.0 + 20.0 * TOURNAMENTS

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(int(PLAY_BUDGET_S) + 300)]

OTHERS = ("registration", "wallet", "payout")
#: Instances of each of OTHERS (issue 17, item 5): ``<service>-1`` … on one database.
TWINS = int(os.environ.get("ELECTRIC_E2E_SCALE_TWINS", "2"))


class Platform:
    """Registration, wallet and payout processes plus the table fleet."""

    def __init__(self, procs: dict[str, Proc], fleet: TableFleet, namespace: str) -> None:
        self.procs = procs  # "<service>-<k>" -> its k-th instance
        self.fleet = fleet
        self.namespace = namespace

    def instances(self, service: str) -> list[Proc]:
        return [p for k, p in self.procs.items() if k.rsplit("-", 1)[0] == service]

    def target(self, service: str) -> str:
        """One gRPC target naming every instance of ``service`` (callers spread round-robin)."""
        return "ipv4:" + ",".join(p.target for p in self.instances(service))

    def logs(self) -> str:
        others = "\n".join(f"--- {n}\n{p.log()[-3000:]}" for n, p in self.procs.items())
        return f"{others}\n{self.fleet.logs()}"


@pytest.fixture
def platform(postgres_url: str, kafka_bootstrap: str, tmp_path: Path) -> Iterator[Platform]:
    import subprocess
    import sys
    from contextlib import ExitStack

    ns = f"e2e-scale-{uuid.uuid4().hex[:10]}"
    with ExitStack() as stack:
        dbs = {
            n: stack.enter_context(fresh_database(postgres_url, prefix=f"e2e_scale_{n}"))
            for n in OTHERS
        }
        procs = {
            f"{n}-{k}": Proc(n, dbs[n], free_port(), free_port(), tmp_path / f"{n}-{k}.log")
            for n in OTHERS
            for k in range(1, TWINS + 1)
        }
        table_db = stack.enter_context(fresh_database(postgres_url, prefix="e2e_scale_table"))
        env = {
            **base_env(),
            **write_keys(tmp_path / "keys").env(),
            **checkpoint_keys_env(tmp_path / "keys"),
            "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
            "ELECTRIC_KAFKA_NAMESPACE": ns,
            "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "5",
            "ELECTRIC_VAR_DIR": str(tmp_path / "var"),
            "ELECTRIC_TABLE_HAND_PAUSE_MS": "0",
            **casino_env(),  # UTH windows when ELECTRIC_E2E_SCALE_UTH_BOTS > 0
            **{
                f"ELECTRIC_{n.upper()}_TARGET": "ipv4:"
                + ",".join(p.target for p in procs.values() if p.name == n)
                for n in OTHERS
            },
        }
        fleet = TableFleet(table_db, env, tmp_path)
        try:
            for p in procs.values():
                with p.log_path.open("ab") as log:
                    p.popen = subprocess.Popen(
                        [sys.executable, "-m", f"electric_{p.name}"],
                        env={
                            **env,
                            "DATABASE_URL": p.db_url,
                            "ELECTRIC_GRPC_PORT": str(p.grpc_port),
                            "ELECTRIC_METRICS_PORT": str(p.metrics_port),
                        },
                        cwd=tmp_path,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
            # All started together: migrations and start-up seeding race (advisory locks).
            for _ in range(3):
                fleet.add()
            deadline = time.monotonic() + 120
            for p in procs.values():
                wait_serving(p, deadline)
            fleet.wait_serving()
            yield Platform(procs, fleet, ns)
        finally:
            fleet.stop_all()
            for p in procs.values():
                if p.popen is not None and p.popen.poll() is None:
                    p.popen.terminate()
            for p in procs.values():
                if p.popen is not None:
                    try:
                        p.popen.wait(15)
                    except subprocess.TimeoutExpired:
                        p.popen.kill()
                        p.popen.wait(10)


async def _poll(check: object, what: str, timeout: float, plat: Platform) -> None:
    began = time.monotonic()
    while not await asyncio.to_thread(check):  # type: ignore[arg-type]
        if time.monotonic() - began > timeout:
            raise AssertionError(f"{what}: not within {timeout}s\n{plat.logs()}")
        await asyncio.sleep(0.2)


async def _kill_the_busiest(
    plat: Platform, probe: StoreProbe, prefer: str = ""
) -> tuple[Member, dict[str, float]]:
    """SIGKILL the instance owning the most running tables (``prefer``, an address, when it
    owns running tables too: the UTH table's owner); per moved table, seconds from the kill
    to the next event appended to it."""
    fleet = plat.fleet
    alive = {m.address for m in fleet.members if m.alive}

    def running_by_owner() -> dict[str, list[str]]:
        owners, live = probe.owners(), probe.live()
        heads = probe.heads(live)
        out: dict[str, list[str]] = defaultdict(list)
        for t in live:  # a table past its first hand, held by a live instance
            if t in owners and owners[t][1] in alive and heads[t] > 3:
                out[owners[t][1]].append(t)
        return out

    await _poll(lambda: len(running_by_owner()) >= 2, "tables running on two instances", 180, plat)
    by_owner = running_by_owner()
    busiest = max(by_owner, key=lambda a: len(by_owner[a]))
    victim = fleet.by_address(prefer if prefer in by_owner else busiest)
    fleet.signal(victim, signal.SIGKILL)
    killed_at = time.monotonic()
    moved = set(by_owner[victim.address])
    before = probe.heads(moved)  # read after the kill: nothing of the victim comes later
    latency: dict[str, float] = {}
    while len(latency) < len(moved) and time.monotonic() - killed_at < 120:
        heads = await asyncio.to_thread(probe.heads, moved - set(latency))
        for t, h in heads.items():
            if h > before[t]:
                latency[t] = time.monotonic() - killed_at
        await asyncio.sleep(0.05)
    assert set(latency) == moved, f"tables never continued: {moved - set(latency)}"
    owners = probe.owners()
    assert all(owners[t][1] != victim.address for t in moved)
    return victim, latency


def _calls_started(proc: Proc) -> int:
    """gRPC calls the instance started (``grpc_server_started_total``, health checks
    excluded), read from its metrics endpoint."""
    import urllib.request

    url = f"http://127.0.0.1:{proc.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as resp:  # loopback only
        text = resp.read().decode()
    return int(
        sum(
            float(line.rsplit(" ", 1)[1])
            for line in text.splitlines()
            if line.startswith("grpc_server_started_total{") and "grpc.health" not in line
        )
    )


def _check_ledger(wallet_db: str) -> None:
    """The wallet's books after two instances wrote them: double entry (the posted amounts of
    all accounts sum to zero) and projections equal to the fold of its events."""
    import sqlalchemy as sa
    from electric_eventlog import create_engine
    from electric_wallet.store import tables as wt
    from electric_wallet.store.projections import rebuild_and_compare

    engine = create_engine(wallet_db)
    try:
        with engine.connect() as conn:
            total = conn.execute(sa.select(sa.func.sum(wt.accounts.c.posted))).scalar()
        assert total == 0, f"the ledger does not balance: {total}"
        assert rebuild_and_compare(engine, EventStore(engine, producer="wallet")) == []
    finally:
        engine.dispose()


async def _topic(bootstrap: str, namespace: str, topic: str) -> list[Envelope]:
    bus = KafkaBus(bootstrap, client_id=f"e2e-scale-{uuid.uuid4().hex[:6]}", namespace=namespace)
    out = []
    async for message in bus.read_topic(topic):
        env = Envelope()
        env.ParseFromString(message.value)
        out.append(env)
    return out


async def _check_paid_once(bootstrap: str, namespace: str, finished: set[str]) -> None:
    """Payout credits each finished tournament's winners exactly once, prizes = pool
    (waits up to 90 s for the last credits to reach the topic)."""
    deadline = time.monotonic() + 90
    while True:
        try:
            await _paid_once(bootstrap, namespace, finished)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(2)


async def _paid_once(bootstrap: str, namespace: str, finished: set[str]) -> None:
    pools: dict[str, int] = {}
    for env in await _topic(bootstrap, namespace, "electric.registration.events"):
        if env.event_type == reg_events.TournamentStarted.DESCRIPTOR.full_name:
            started = reg_events.TournamentStarted()
            env.payload.Unpack(started)
            pools[started.tournament_id] = started.prize_pool.cents
    credited: Counter[tuple[str, str]] = Counter()
    paid: Counter[str] = Counter()
    for env in await _topic(bootstrap, namespace, "electric.payout.events"):
        if env.event_type == payout_events.PrizeCredited.DESCRIPTOR.full_name:
            pc = payout_events.PrizeCredited()
            env.payload.Unpack(pc)
            credited[(pc.tournament_id, pc.player_id)] += 1
            paid[pc.tournament_id] += pc.amount.cents
    assert all(n == 1 for n in credited.values()), [k for k, n in credited.items() if n > 1]
    assert {t: paid[t] for t in finished} == {t: pools[t] for t in finished}


async def test_three_instances_survive_a_kill_and_a_join(
    platform: Platform, kafka_bootstrap: str
) -> None:
    plat, fleet = platform, platform.fleet
    probe = StoreProbe(fleet.db_url)
    runner = BotRunner(
        BotRunnerConfig(
            targets=Targets(
                registration=plat.target("registration"),  # both, round-robin
                table=fleet.target(),  # the three instances; the client picks one
                wallet=plat.target("wallet"),
            ),
            key=ISSUER_KEY,
            bots=BOTS,
            mix=(("random", 5), ("tag", 1)),
            until_finished=TOURNAMENTS,
            deposit_cents=200_000,
            seed=17,
            player_prefix=f"sc{uuid.uuid4().hex[:6]}",
        )
    )
    runner.stats.acked_acts = set()
    began = time.monotonic()
    play = asyncio.create_task(runner.run())
    # Opt-in (ELECTRIC_E2E_SCALE_UTH_BOTS): casino bots through the same fleet (scale_casino).
    casino = casino_runner(plat.target("registration"), fleet.target(), plat.target("wallet"))
    casino_play = asyncio.create_task(casino.run()) if casino is not None else None
    try:
        if casino is not None:
            await _poll(lambda: uth_rounds_played(casino) >= 2, "UTH rounds", 180, plat)
        uth_at_kill = uth_rounds_played(casino) if casino is not None else 0
        uth_held_by = uth_owner(fleet.db_url) if casino is not None else ""
        victim, latency = await _kill_the_busiest(plat, probe, prefer=uth_held_by)
        worst = max(latency.values())
        print(
            f"\nkill -9 table-{victim.no}: {len(latency)} tables continued elsewhere; "
            f"kill -> next event: worst {worst:.1f}s, median "
            f"{sorted(latency.values())[len(latency) // 2]:.1f}s"
        )
        assert worst <= FAILOVER_LIMIT_S, f"failover {worst:.1f}s > {FAILOVER_LIMIT_S}s"

        # A fourth instance joins while the others play on; the group gives it partitions.
        await _poll(
            lambda: len(runner.stats.tables_finished) >= TOURNAMENTS // 2 or play.done(),
            "half of the tournaments finished",
            PLAY_BUDGET_S,
            plat,
        )
        joined = fleet.add()
        await asyncio.to_thread(fleet.wait_serving, [joined])
        await _poll(
            lambda: joined.count(r'"table\.partitions_assigned".*"partitions": \[\d') >= 1,
            "the fourth instance got partitions",
            60,
            plat,
        )
        done, _ = await asyncio.wait(
            {play}, timeout=max(30.0, PLAY_BUDGET_S - (time.monotonic() - began))
        )
        if not done:
            runner.stop.set()
            await asyncio.wait({play}, timeout=30)
            pytest.fail(f"bots did not finish: {runner.stats}\n{plat.logs()}")
        stats = play.result()
        if casino is not None and casino_play is not None:
            after = await play_on(casino, uth_at_kill, 3 * UTH_BOTS, 180)
            casino.stop.set()
            await asyncio.wait({casino_play}, timeout=60)
            assert casino.stats.errors == 0, casino.stats.last_errors
            uth = check_uth_rounds(fleet.db_url)
            print(
                f"\nUTH: the killed instance owned uth-1: {uth_held_by == victim.address}; "
                f"rounds seen by the bots after the kill (summed over bots) {after}; "
                f"table rounds {uth}"
            )
    finally:
        if not play.done():
            runner.stop.set()
            await asyncio.wait({play}, timeout=30)
        if casino is not None and casino_play is not None and not casino_play.done():
            casino.stop.set()
            await asyncio.wait({casino_play}, timeout=30)
    played = time.monotonic() - began
    assert stats.errors == 0, stats.last_errors
    assert len(stats.tables_finished) >= TOURNAMENTS
    taken_by_joiner = sum(1 for _, o in probe.owners().values() if o == joined.address)

    # Every table of the run: finished once, stream intact, acknowledged Acts = stored ones.
    store = EventStore(probe.engine, producer="table")
    stored_requests: Counter[str] = Counter()
    finished: set[str] = set()
    with probe.engine.connect() as conn:
        for table_id in sorted(probe.all_tables()):
            envelopes = store.read_stream(conn, f"table-{table_id}")
            events = decode_stream(envelopes)
            stored_requests.update(check_stream(events, envelopes))
            kinds = Counter(type(m).__name__ for _, m in events)
            assert kinds["TableStarted"] == 1 and kinds["TournamentFinished"] == 1, table_id
            assert isinstance(events[-1][1], tev.TournamentFinished), table_id
            finished.add(table_id)
    probe.close()
    assert finished >= stats.tables_finished
    assert stats.acked_acts is not None
    assert set(stored_requests) == stats.acked_acts, (
        f"lost {len(stats.acked_acts - set(stored_requests))}, "
        f"unacknowledged {len(set(stored_requests) - stats.acked_acts)}"
    )
    await _check_paid_once(kafka_bootstrap, plat.namespace, finished)
    served = {k: _calls_started(p) for k, p in plat.procs.items()}
    for service in ("registration", "wallet"):
        assert all(served[f"{service}-{k}"] > 0 for k in range(1, TWINS + 1)), served
    _check_ledger(plat.instances("wallet")[0].db_url)
    owed = {
        k: p.log_path.read_text(errors="replace").count('"owed_work.done"')
        for k, p in plat.procs.items()
        if not k.startswith("wallet")
    }
    print(f"gRPC calls served per instance: {served}; owed wallet calls done: {owed}")
    print(
        f"{len(finished)} tournaments in {played:.0f}s on 3 (+1) table instances; "
        f"actions {stats.actions}, stale {stats.stale_commands}, resubscribes "
        f"{stats.resubscribes}; tables taken by the joiner {taken_by_joiner}"
    )
