"""The seeded fault schedule and the injector that carries it out.

:func:`schedule` is a pure function of (seed, count, duration, kinds): the same seed gives
the same faults in the same order with the same victims and parameters, so a failing run is
replayed with its seed. The faults run one after another (the next waits for the previous
one to end and the services to answer again), each at its scheduled offset or later.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import grpc
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.table.v1 import casino_pb2, casino_pb2_grpc, table_pb2, table_pb2_grpc
from electric_platform.auth import Role, TokenSource
from electric_platform.context import outgoing_metadata
from electric_platform.keys import SigningKey
from grpc_health.v1 import health_pb2, health_pb2_grpc

from tests.chaos.infra import PrivateKafka, PrivatePostgres, alive
from tests.chaos.partition import Partitions
from tests.chaos.replicated import PrivateKafkaCluster, PrivatePostgresHA

SERVICES = ("registration", "table", "wallet", "payout")
KINDS = ("kill9", "pause", "kafka_restart", "pg_restart", "slow_disk", "disconnect")
#: Faults only the replicated infrastructure survives (``--replicated``, issue 28): a broker
#: lost with its disk, the PostgreSQL primary lost, a table instance cut off the network.
REPLICATED_KINDS = ("broker_loss", "pg_failover", "partition")
ALL_KINDS = KINDS + REPLICATED_KINDS


def instances(table_instances: int = 1) -> tuple[str, ...]:
    """The service processes of a run: the four services, then ``table-2`` … when the table
    service runs as several instances (scale-out, issue 17)."""
    return SERVICES + tuple(f"table-{k}" for k in range(2, table_instances + 1))


@dataclass(frozen=True)
class Fault:
    """One planned fault (all of it drawn from the seed)."""

    index: int
    kind: str
    #: Seconds after the load began, at the earliest.
    at: float
    #: A service (kill9, pause), "kafka", "postgres", or "tournament"/"casino" (disconnect).
    victim: str
    #: Pause / slow-disk length; restart delay (kill9, kafka); updates read (disconnect).
    seconds: float
    #: kafka_restart: kill -9 instead of SIGTERM; disconnect: close the channel instead of
    #: cancelling the call.
    hard: bool
    #: Which bot's identity a disconnect borrows (an index into the bots).
    pick: int


def schedule(
    seed: int,
    count: int,
    duration: float,
    kinds: Sequence[str] = KINDS,
    gap: float = 6.0,
    victims: Sequence[str] = SERVICES,
) -> list[Fault]:
    """``count`` faults, every kind in ``kinds`` equally often (±1), in a seeded order,
    spread with a mean gap of ``gap`` s (less when ``count`` gaps would not fit in 70% of
    ``duration``). Kills and pauses pick among ``victims``: the service processes
    (:func:`instances`)."""
    unknown = set(kinds) - set(ALL_KINDS)
    if unknown:
        raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {', '.join(ALL_KINDS)}")
    rng = random.Random(f"electric-chaos-{seed}")
    bag = [kinds[i % len(kinds)] for i in range(count)]
    rng.shuffle(bag)
    mean = min(gap, 0.7 * duration / max(1, count))
    at = rng.uniform(0.5, 1.5) * mean
    out = []
    for index, kind in enumerate(bag):
        if kind in ("kill9", "pause"):
            victim = rng.choice(victims)
        elif kind == "disconnect":
            victim = rng.choice(("tournament", "casino"))
        elif kind == "partition":  # a table instance: the owner of live tables
            victim = rng.choice([v for v in victims if v.split("-")[0] == "table"])
        elif kind == "broker_loss":
            victim = f"kafka-{rng.randint(1, 3)}"
        else:
            victim = "kafka" if kind == "kafka_restart" else "postgres"
        # Every old kind's draw is made for every fault (the order seeds have replayed by).
        seconds = {
            "kill9": rng.uniform(0.0, 3.0),
            "pause": rng.uniform(1.0, 8.0),
            "kafka_restart": rng.uniform(0.0, 3.0),
            "pg_restart": 0.0,
            "slow_disk": rng.uniform(1.0, 5.0),
            "disconnect": float(rng.randint(1, 3)),
        }.get(kind, 0.0)
        if kind in ("broker_loss", "pg_failover"):  # away this long before the node returns
            seconds = rng.uniform(5.0, 30.0)
        elif kind == "partition":  # beyond the Kafka session timeout: its partitions move
            seconds = rng.uniform(5.0, 25.0)
        hard, pick = rng.random() < 0.5, rng.randrange(1 << 16)
        out.append(Fault(index, kind, round(at, 2), victim, round(seconds, 2), hard, pick))
        at += rng.uniform(0.5, 1.5) * mean
    return out


@dataclass
class Outcome:
    """What happened when a fault was injected."""

    fault: Fault
    started: float = 0.0
    #: Seconds the fault itself took (the pause, the restart).
    took: float = 0.0
    #: Seconds after the fault until all four services answered their health check.
    recovered: float = 0.0
    ok: bool = True
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self.fault), **{k: v for k, v in asdict(self).items() if k != "fault"}}


@dataclass
class Injector:
    """Carries out a schedule against the cluster and the private infrastructure, and
    restarts any service that exits by itself (a supervisor would), counting it."""

    cluster: Any
    postgres: PrivatePostgres | PrivatePostgresHA
    kafka: PrivateKafka | PrivateKafkaCluster
    key: SigningKey
    #: Tournament bots' and UTH bots' player ids (disconnects borrow their identity).
    tournament_players: Callable[[], list[str]]
    casino_players: Callable[[], list[str]]
    log: Callable[[str], None] = print
    #: The cgroups and rules of ``partition`` faults (None: the run has none).
    partitions: Partitions | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    #: (service, exit code, seconds into the run) of every exit we did not cause.
    unexpected_exits: list[tuple[str, int, float]] = field(default_factory=list)
    _down: set[str] = field(default_factory=set)
    _began: float = field(default_factory=time.monotonic)

    # -- supervisor ------------------------------------------------------------------------

    async def supervise(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self._infra_alive()
            for name in list(self.cluster.procs):
                popen = self.cluster.procs[name].popen
                if name in self._down or popen is None or popen.poll() is None:
                    continue
                at = time.monotonic() - self._began
                self.unexpected_exits.append((name, int(popen.returncode), round(at, 1)))
                self.log(f"  !! {name} exited by itself (rc {popen.returncode}); restarting")
                self.cluster.start(name)
            await asyncio.sleep(1.0)

    async def _infra_alive(self) -> None:
        """The run's own broker and database died outside a fault: count it, start them."""
        at = round(time.monotonic() - self._began, 1)
        if isinstance(self.kafka, PrivateKafkaCluster) or isinstance(
            self.postgres, PrivatePostgresHA
        ):
            await self._replicated_alive(at)
        if isinstance(self.kafka, PrivateKafka):
            pid = self.kafka.pid()
            if not self.kafka.external and "kafka" not in self._down and not alive(pid):
                self.unexpected_exits.append(("kafka", -1, at))
                self.log("  !! the Kafka broker is gone; starting it")
                await asyncio.to_thread(self.kafka.up)
        if isinstance(self.postgres, PrivatePostgres) and (
            "postgres" not in self._down and not self.postgres.pids()
        ):
            self.unexpected_exits.append(("postgres", -1, at))
            self.log("  !! PostgreSQL is gone; starting it")
            await asyncio.to_thread(self.postgres.up)

    async def _replicated_alive(self, at: float) -> None:
        """A broker or a database node gone outside a fault: count it, start it again (a
        replaced machine, as an operator's automation would)."""
        parts: list[tuple[str, Any, int]] = []
        if isinstance(self.kafka, PrivateKafkaCluster) and "kafka" not in self._down:
            parts += [("kafka", self.kafka, n) for n in self.kafka.missing()]
        if isinstance(self.postgres, PrivatePostgresHA) and "postgres" not in self._down:
            parts += [("postgres", self.postgres, n) for n in self.postgres.missing()]
        for what, infra, n in parts:
            self.unexpected_exits.append((f"{what}-{n}", -1, at))
            self.log(f"  !! {what} node {n} is gone; starting it")
            await asyncio.to_thread(infra.revive, n)

    async def wait_serving(self, timeout: float = 180.0) -> float:
        """Seconds until every service process answers SERVING (raises after ``timeout``)."""
        began = time.monotonic()
        for name in list(self.cluster.procs):
            target = self.cluster.procs[name].target  # each instance, not one of them
            async with grpc.aio.insecure_channel(target) as channel:
                stub = health_pb2_grpc.HealthStub(channel)
                while True:
                    try:
                        got = await stub.Check(health_pb2.HealthCheckRequest(), timeout=2)
                        if got.status == health_pb2.HealthCheckResponse.SERVING:
                            break
                    except grpc.aio.AioRpcError:
                        pass
                    if time.monotonic() - began > timeout:
                        raise TimeoutError(f"{name} not SERVING {timeout:.0f}s after a fault")
                    await asyncio.sleep(0.3)
        return time.monotonic() - began

    # -- the schedule ----------------------------------------------------------------------

    async def run(self, faults: Sequence[Fault], load_began: float, stop: asyncio.Event) -> None:
        for fault in faults:
            delay = load_began + fault.at - time.monotonic()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=delay)
            if stop.is_set():
                return
            outcome = Outcome(fault, started=round(time.monotonic() - load_began, 1))
            began = time.monotonic()
            try:
                outcome.detail = await self.inject(fault)
            except Exception as exc:  # recorded: a fault that could not be injected
                outcome.ok, outcome.detail = False, f"{type(exc).__name__}: {exc}"
            outcome.took = round(time.monotonic() - began, 2)
            try:
                outcome.recovered = round(await self.wait_serving(), 2)
            except TimeoutError as exc:
                outcome.ok, outcome.detail = False, f"{outcome.detail}; {exc}"
            self.outcomes.append(outcome)
            self.log(
                f"  fault {fault.index + 1}/{len(faults)} {fault.kind:<13} {fault.victim:<12} "
                f"took {outcome.took:5.1f}s recovered {outcome.recovered:5.1f}s "
                f"{'ok' if outcome.ok else 'FAILED'} {outcome.detail}"
            )

    async def inject(self, fault: Fault) -> str:
        kind = fault.kind
        if kind == "kill9":
            return await self._kill9(fault.victim, fault.seconds)
        if kind == "pause":
            pid = self.cluster.procs[fault.victim].popen.pid
            os.kill(pid, signal.SIGSTOP)
            try:
                await asyncio.sleep(fault.seconds)
            finally:
                os.kill(pid, signal.SIGCONT)
            return f"SIGSTOP {fault.seconds:.1f}s"
        if kind == "kafka_restart":
            await asyncio.to_thread(self._kafka_restart, fault)
            return "kill -9 + up" if fault.hard else "SIGTERM + up"
        if kind == "pg_restart":
            self._down.add("postgres")
            self._settled("")
            try:
                await asyncio.to_thread(self.postgres.restart_fast)
            finally:
                self._down.discard("postgres")
            return (
                "pg_ctl restart -m fast"
                if isinstance(self.postgres, PrivatePostgres)
                else "pg_ctl stop -m fast on the primary, started again by its keeper"
            ) + self._settled("")
        if kind == "slow_disk":
            self._settled("")
            n = await asyncio.to_thread(self.postgres.pause, fault.seconds)
            return f"{n} database processes stopped {fault.seconds:.1f}s" + self._settled("")
        if kind == "disconnect":
            return await self._disconnect(fault)
        if kind in REPLICATED_KINDS:
            return await self._replicated(fault)
        raise ValueError(kind)

    async def _replicated(self, fault: Fault) -> str:
        if fault.kind == "partition":
            assert self.partitions is not None, "a partition fault needs the run's cgroups"
            self.partitions.cut(fault.victim)
            try:
                await asyncio.sleep(fault.seconds)
            finally:
                self.partitions.heal(fault.victim)
            return f"cut off the network {fault.seconds:.1f}s"
        what = "kafka" if fault.kind == "broker_loss" else "postgres"
        self._down.add(what)
        try:
            if fault.kind == "broker_loss":
                assert isinstance(self.kafka, PrivateKafkaCluster), "broker_loss: --replicated"
                n = int(fault.victim.rsplit("-", 1)[1])
                return await asyncio.to_thread(self.kafka.lose_broker, n, fault.seconds)
            assert isinstance(self.postgres, PrivatePostgresHA), "pg_failover: --replicated"
            return await asyncio.to_thread(self.postgres.fail_over, fault.seconds)
        finally:
            self._down.discard(what)

    def _settled(self, replace: str) -> str:
        """The replicated formation's last settle (``; formation whole after ...``), and set
        it to ``replace``; "" for a database without one."""
        was = str(getattr(self.postgres, "last_settle", ""))
        if hasattr(self.postgres, "last_settle"):
            self.postgres.last_settle = replace
        return f"; {was}" if was else ""

    def _kafka_restart(self, fault: Fault) -> None:
        self._down.add("kafka")
        try:
            if isinstance(self.kafka, PrivateKafkaCluster):  # one broker of three
                broker = fault.pick % 3 + 1
                self.kafka.stop(hard=fault.hard, broker=broker)
                time.sleep(fault.seconds)
                self.kafka.revive(broker)
            else:
                self.kafka.stop(hard=fault.hard)
                time.sleep(fault.seconds)
                self.kafka.up()
        finally:
            self._down.discard("kafka")

    async def _kill9(self, name: str, delay: float) -> str:
        popen = self.cluster.procs[name].popen
        self._down.add(name)
        try:
            popen.kill()
            await asyncio.to_thread(popen.wait, 30)
            await asyncio.sleep(delay)
            self.cluster.start(name)
        finally:
            self._down.discard(name)
        return f"rc {popen.returncode}, restarted after {delay:.1f}s"

    async def _disconnect(self, fault: Fault) -> str:
        """A client that drops its stream mid-way: as a bot (its own identity and table), a
        second stream reads ``seconds`` updates, then is cancelled or its channel closed."""
        table = None if fault.victim == "casino" else await self._running_table(fault.pick)
        # No tournament table running right now: the casino stream (the fault still happens).
        casino = table is None and bool(self.casino_players())
        if table is None and not casino:
            return "no stream to watch"
        channel = grpc.aio.insecure_channel(self.cluster.target("table"))
        stream: Any = None
        try:
            if casino:
                players = self.casino_players()
                player = players[fault.pick % len(players)]
                md = outgoing_metadata(TokenSource(self.key, player, Role.PLAYER).token())
                stream = casino_pb2_grpc.CasinoTableServiceStub(channel).WatchCasinoTable(
                    casino_pb2.WatchCasinoTableRequest(table_id="uth-1"), metadata=md
                )
                what = f"WatchCasinoTable uth-1 as {player}"
            else:
                assert table is not None
                player, table_id, md = table
                stream = table_pb2_grpc.TableServiceStub(channel).WatchTable(
                    table_pb2.WatchTableRequest(table_id=table_id), metadata=md
                )
                what = f"WatchTable {table_id} as {player}"
            read = 0
            try:
                for _ in range(int(fault.seconds)):
                    await asyncio.wait_for(stream.read(), timeout=10)
                    read += 1
            except (TimeoutError, grpc.aio.AioRpcError) as exc:
                what += f" ({type(exc).__name__} after {read})"
            if fault.hard:
                await channel.close(None)
                return f"{what}: read {read}, channel closed"
            stream.cancel()
            return f"{what}: read {read}, cancelled"
        finally:
            await channel.close(None)

    async def _running_table(self, pick: int) -> tuple[str, str, Any] | None:
        players = self.tournament_players()
        async with grpc.aio.insecure_channel(self.cluster.target("registration")) as ch:
            stub = registration_pb2_grpc.RegistrationServiceStub(ch)
            for i in range(len(players)):
                player = players[(pick + i) % len(players)]
                md = outgoing_metadata(TokenSource(self.key, player, Role.PLAYER).token())
                try:
                    got = await stub.ListMyTables(
                        registration_pb2.ListMyTablesRequest(
                            player_id=player,
                            status_filter=registration_pb2.MY_TABLES_FILTER_ACTIVE,
                        ),
                        metadata=md,
                        timeout=5,
                    )
                except grpc.aio.AioRpcError:
                    continue
                for table in got.tables:
                    if table.status == registration_pb2.TABLE_STATUS_RUNNING:
                        return player, table.table_id, md
        return None
