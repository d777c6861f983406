"""Which table-service instance owns which table (issue 17; design in docs/scaling.md).

Two modes, chosen by ``ELECTRIC_TABLE_OWNERSHIP``:

* ``single`` (default, today's behaviour): this instance owns every table; no fencing.
* ``partitions``: a table belongs to the partition of ``electric.registration.events`` its
  starting events are on (key ``registration-table-<id>``, Kafka's default partitioner:
  murmur2), and this instance owns the tables of the partitions the consumer group
  ``table.tournaments`` assigns to it. Kafka's group protocol is the membership: no
  home-made election. On assignment the instance first takes each new partition's fence
  (the *scope*, ``partition-<topic>-<n>``, with the group generation), then the fencing
  epoch of each table under it (``electric_eventlog.fencing``), and rebuilds the table
  from its events; on revocation it stops
  the table's driver (timers, clocks, writes) and stops serving it, keeping it until the
  assignment that follows: a table given back is resumed without a rebuild when nobody
  took it meanwhile, any other is dropped (docs/scaling.md §3). Every write of a
  table checks the table's epoch and its partition's in the write's transaction, so an
  instance that lost a partition while paused cannot append to its tables any more
  (``FencedError`` → ABORTED) from the moment the new owner's assignment took the
  partition, and cannot take them back: only an assignment takes a partition, and a table
  is taken only under its partition's current epoch (issue 28).

This module knows partitions and fences, not games: the live tables of each game follow the
assignment as a :class:`PartitionFollower` (tournament tables: ``tournament_ownership``;
live UTH tables: ``casino.uth.ownership``), each suspending and resuming its tables through
the one protocol of ``host.tables.Suspensions``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

from aiokafka import ConsumerRebalanceListener, TopicPartition
from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from aiokafka.partitioner import murmur2
from electric_eventlog import fencing, partitions_for
from electric_eventlog.fencing import Fence, FencedError, StaleGenerationError
from electric_platform.eventpath import EventPath
from sqlalchemy import Connection, Engine

log = logging.getLogger(__name__)

OWNERSHIP_ENV = "ELECTRIC_TABLE_OWNERSHIP"
SINGLE = "single"
PARTITIONS = "partitions"


def ownership_mode(environ: Mapping[str, str] | None = None) -> str:
    """``ELECTRIC_TABLE_OWNERSHIP``: ``single`` (default) or ``partitions``."""
    env = os.environ if environ is None else environ
    mode = env.get(OWNERSHIP_ENV, "").strip().lower() or SINGLE
    if mode not in (SINGLE, PARTITIONS):
        raise ValueError(f"{OWNERSHIP_ENV} must be {SINGLE!r} or {PARTITIONS!r}, got {mode!r}")
    return mode


def start_key(table_id: str) -> bytes:
    """The Kafka key of the events that start and command ``table_id`` (registration's
    table stream, ``registration-table-<id>``)."""
    return f"registration-table-{table_id}".encode()


def partition_for(table_id: str, partitions: int) -> int:
    """The partition of ``table_id``'s starting events among ``partitions``: what Kafka's
    default partitioner (Java client and aiokafka alike) picks for :func:`start_key`."""
    return partition_of_key(start_key(table_id), partitions)


def partition_of_key(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for ``key`` among ``partitions``
    (murmur2, as the Java client and aiokafka do)."""
    if partitions <= 0:
        raise ValueError(f"partitions must be > 0, got {partitions}")
    return (int(murmur2(key)) & 0x7FFFFFFF) % partitions


class PartitionFollower(Protocol):
    """The live tables of one game, owned by the assignment (tournament tables:
    ``tournament_ownership``; live UTH tables: ``casino.uth.ownership``). Told of the
    partitions this instance gains (after their scopes were taken) and loses; a new game is
    one more follower, and this module does not change."""

    async def on_assigned(self, partitions: set[int]) -> int:
        """Own what lives on ``partitions`` (new to this instance); returns how many."""

    async def on_revoked(self, partitions: set[int]) -> int:
        """Stop owning what lives on ``partitions``; returns how many were dropped."""

    async def sweep(self) -> int:
        """Settle what a revocation left waiting for an assignment that never came, and
        load what an assignment could not; returns how many tables were loaded."""


#: Lock-timeout retries of a takeover (each waits ``fencing.LOCK_TIMEOUT_MS``).
TAKE_ATTEMPTS = 10
#: The fence of partition ``n`` of the registration topic is ``<prefix><n>`` (the prefix
#: names the broker's topic, namespace included: see :func:`own_by_partitions`).
DEFAULT_SCOPE_PREFIX = "partition-electric.registration.events-"
#: Seconds a table of a revoked partition is kept suspended when no assignment follows
#: (the member left the group): then its watchers are told and it is dropped.
SUSPEND_GRACE_S = 10.0


class PartitionOwnership:
    """The partitions this instance owns, fenced, whatever game's tables live on them.

    ``on_assigned`` / ``on_revoked`` are called by the consumer group's rebalance listener
    (with the partition numbers of the registration topic): the partitions' scopes are
    taken (or given up) here, then each game's tables follow (:attr:`followers`), each
    table fenced under its partition's scope (:meth:`take`)."""

    def __init__(
        self,
        engine: Engine,
        *,
        owner: str | Callable[[], str],
        partitions: int,
        scope_prefix: str = DEFAULT_SCOPE_PREFIX,
    ) -> None:
        self.engine = engine
        #: Who takes the fences: the instance's advertised gRPC address (a callable: the
        #: port is known once the server is bound), which other instances forward to
        #: (``electric_table.host.routing``); tests may use any name.
        self._owner = owner
        self.partitions = partitions
        self.scope_prefix = scope_prefix
        #: Partitions the group assigned to this instance (its latest assignment).
        self.assigned: set[int] = set()
        #: The fence taken on each assigned partition (the scope of its tables' fences):
        #: a partition is this instance's only while its scope is held.
        self.scopes: dict[int, Fence] = {}
        #: Assigned partitions whose scope another instance took since (this one was
        #: paused or cut off): never taken again before the group assigns them anew.
        self.lost: set[int] = set()
        #: Assigned partitions whose take was refused as of an older group generation than
        #: the stored one, by that generation: the sweep takes them only once the group
        #: coordinator confirms the generation is current (``verify_generation``).
        self.refused: dict[int, int] = {}
        self._taking: set[int] = set()  # partitions whose scope is being taken
        #: The generation of the latest assignment (None: not known, e.g. tests).
        self.generation: int | None = None
        #: Proves with the group coordinator that :attr:`generation` is the current one
        #: (a commit under it; set by the rebalance listener on Kafka).
        self.verify_generation: Callable[[], Awaitable[bool]] | None = None
        #: The games whose tables this assignment owns, told in order (tournament tables
        #: first, then the casino's).
        self.followers: list[PartitionFollower] = []

    @property
    def owner(self) -> str:
        """The name this instance takes fences under (its advertised address)."""
        return self._owner if isinstance(self._owner, str) else self._owner()

    def holds_partition(self, partition: int) -> bool:
        """Whether ``partition`` is this instance's: assigned, and its scope held."""
        return partition in self.assigned and partition in self.scopes

    def scope_resource(self, partition: int) -> str:
        """The fence of ``partition`` (the scope of its tables' fences)."""
        return f"{self.scope_prefix}{partition}"

    def take(self, resource: str, partition: int) -> Fence:
        """Take ``resource``'s fencing epoch under this instance's name and under the
        scope of ``partition`` (own transaction), ending a paused ex-owner's session that
        holds its row (``TAKE_ATTEMPTS``). ``PermissionError`` when the partition is not
        held here, or its scope was taken by another instance since (then the partition
        is lost here until the group assigns it again: a stale instance takes nothing)."""
        scope = self.scopes.get(partition)
        if partition not in self.assigned or scope is None:
            raise PermissionError(f"{resource} is not on a partition of this instance")
        try:
            epoch = self._with_retries(
                lambda conn: fencing.take(conn, resource, owner=self.owner, scope=scope),
                resource,
            )
        except FencedError as exc:
            self.lose(partition, str(exc))
            raise PermissionError(f"{resource}: partition {partition} moved") from exc
        log.info("table.fence_taken", extra={"table_id": resource, "epoch": epoch})
        return Fence(resource, epoch, scope)

    def _with_retries(
        self, take: Callable[[Connection], int], resource: str, attempts: int = TAKE_ATTEMPTS
    ) -> int:
        for attempt in range(1, attempts + 1):
            try:
                with self.engine.begin() as conn:
                    return take(conn)
            except Exception as exc:
                # A paused ex-owner may hold the fence row (or the head row) in a session
                # PostgreSQL does not time out (mid-pipeline): end it and take again.
                if not fencing.is_lock_timeout(exc):
                    raise
                stale = fencing.break_stale_writers(self.engine)
                log.warning(
                    "table.stale_writers_ended", extra={"pids": stale, "table_id": resource}
                )
                if attempt == attempts:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def lose(self, partition: int, why: str) -> None:
        """Another instance took ``partition``'s scope: nothing of it is this instance's
        until the group assigns it here again (its tables are fenced at their next write
        and cannot be taken back)."""
        if self.scopes.pop(partition, None) is not None or partition not in self.lost:
            log.warning("table.partition_lost", extra={"partition": partition, "error": why})
        self.lost.add(partition)

    def _take_scope(self, partition: int, *, force: bool = False) -> Fence:
        resource = self.scope_resource(partition)

        def take(conn: Connection) -> int:
            fence = fencing.take_scope(
                conn, resource, owner=self.owner, generation=self.generation, force=force
            )
            return fence.epoch

        # One attempt: this runs inside the group's rebalance callback, which must end
        # within the rebalance timeout (a member that overstays is thrown out, and the
        # group rebalances again); a partition whose row a paused ex-owner still locks is
        # left unscoped and taken by the next sweep, after its session was ended.
        epoch = self._with_retries(take, resource, attempts=1)
        log.info(
            "table.partition_taken",
            extra={"partition": partition, "epoch": epoch, "generation": self.generation},
        )
        return Fence(resource, epoch)

    async def _take_scopes(self, partitions: Iterable[int], *, force: bool = False) -> None:
        """Take the scope of each of ``partitions`` (assigned here, none held yet). One
        refused as of an older generation waits in :attr:`refused`; one the database
        failed stays unscoped, retried by the sweep."""
        for partition in sorted(partitions):
            if partition not in self.assigned or partition in self.scopes:
                continue
            if partition in self._taking:  # the assignment and the sweep: one take at once
                continue
            self._taking.add(partition)
            try:
                scope = await asyncio.to_thread(self._take_scope, partition, force=force)
                if partition in self.assigned:  # (not revoked while it was being taken)
                    self.scopes[partition] = scope
                self.refused.pop(partition, None)
            except StaleGenerationError as exc:
                self.refused[partition] = exc.generation
                log.error(
                    "table.partition_refused", extra={"partition": partition, "error": str(exc)}
                )
            except Exception as exc:
                log.warning(
                    "table.partition_take_failed",
                    extra={"partition": partition, "error": str(exc)},
                )
            finally:
                self._taking.discard(partition)

    async def on_assigned(self, partitions: Iterable[int]) -> int:
        """Own ``partitions``: take their scopes, then each game's tables on them follow.
        Returns how many tables were hosted. A follower that fails (the database is away)
        never fails the group's rebalance: its sweep finishes the work."""
        new = set(partitions) - self.assigned
        self.assigned |= new
        self.lost -= new  # assigned anew: this instance's again, under a new scope epoch
        # The partitions first: from here on, no write of a previous owner of their tables
        # is stored, whether or not this instance has loaded or written them yet.
        await self._take_scopes(new)
        hosted = 0
        for follower in self.followers:
            try:
                hosted += await follower.on_assigned(new)
            except Exception as exc:  # never into the group; the follower's sweep retries
                log.warning("table.assign_load_failed", extra={"error": str(exc), "tables": 0})
        return hosted

    async def on_revoked(self, partitions: Iterable[int]) -> int:
        """Stop owning ``partitions``: their scopes are given up and each game suspends its
        tables on them. Returns how many tables were suspended."""
        gone = set(partitions) & self.assigned
        self.assigned -= gone
        for partition in gone:
            self.scopes.pop(partition, None)
            self.refused.pop(partition, None)
            self.lost.discard(partition)
        suspended = 0
        for follower in self.followers:
            suspended += await follower.on_revoked(gone)
        return suspended

    async def sweep(self) -> int:
        """Take the scopes an assignment could not, then let each game settle and load what
        is still owed; returns how many tables were loaded. Why the games load here too: a
        TournamentStarted handled by a member whose partition was revoked in the middle of
        the batch (its load refused) is redelivered to the new owner AFTER that owner's
        ``on_assigned`` and skipped as already applied, so without a sweep nobody would
        drive the table."""
        if self.assigned:
            await self._retake_scopes()
        loaded = 0
        for follower in self.followers:
            loaded += await follower.sweep()
        return loaded

    async def _retake_scopes(self) -> None:
        """Take the scopes of assigned partitions still without one: those the database
        failed (again), and those refused as of an older generation once the group
        coordinator confirmed this instance's generation is the current one (then the
        stored generation is of a former incarnation of the group: taken with ``force``).
        Never a lost partition: only a new assignment gives it back."""
        pending = self.assigned - set(self.scopes) - self.lost
        failed = pending - set(self.refused)
        if failed:
            await self._take_scopes(failed)
        refused = pending & set(self.refused)
        if refused and self.verify_generation is not None and await self.verify_generation():
            log.warning(
                "table.generation_confirmed",
                extra={"partitions": sorted(refused), "generation": self.generation},
            )
            await self._take_scopes(refused, force=True)

    async def sweep_forever(self, stopping: asyncio.Event, interval_s: float = 1.0) -> None:
        """:meth:`sweep` every ``interval_s`` until ``stopping`` (a background task)."""
        while not stopping.is_set():
            try:
                await self.sweep()
            except Exception as exc:  # the database is away: the next sweep retries
                log.warning("table.sweep_failed", extra={"error": str(exc)})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=interval_s)


class OwnershipListener(ConsumerRebalanceListener):  # type: ignore[misc]
    """The consumer group's rebalance callbacks → :class:`PartitionOwnership`, for the
    partitions of ``topic`` (the broker's name of the registration topic). aiokafka awaits
    them inside the rebalance: revoked tables are stopped before another member is given
    them (their fence stops a write that is already in flight), assigned ones are rebuilt
    before this member fetches their partition's messages."""

    def __init__(
        self,
        ownership: PartitionOwnership,
        topic: str,
        assignor: type[StickyPartitionAssignor] | None = None,
    ) -> None:
        self.ownership = ownership
        self.topic = topic
        #: This instance's sticky assignor (:func:`sticky_assignor`), told each generation.
        self.assignor = assignor
        self._consumer: Any = None

    def bind(self, consumer: Any) -> None:
        """The consumer this listener's group runs on (``KafkaBus.consume_batches``): the
        generation of each assignment is read from it, and a commit under it proves the
        generation is current."""
        self._consumer = consumer
        self.ownership.verify_generation = self._verify_generation

    async def _verify_generation(self) -> bool:
        from electric_eventlog.kafka import commit_under_generation

        if self._consumer is None:
            return False
        return await commit_under_generation(self._consumer, self.topic)

    def _mine(self, partitions: Iterable[TopicPartition]) -> list[int]:
        return sorted(tp.partition for tp in partitions if tp.topic == self.topic)

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        """Stop driving the tables of the revoked partitions."""
        await self.ownership.on_revoked(self._mine(revoked))

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        """Own (fence, rebuild, drive) the tables of the assigned partitions."""
        if self._consumer is not None:
            from electric_eventlog.kafka import group_generation

            self.ownership.generation = group_generation(self._consumer)
            if self.assignor is not None and self.ownership.generation is not None:
                # aiokafka never tells the assignor; the generation in the member's
                # metadata settles two members claiming one partition (the newer wins).
                self.assignor.on_generation_assignment(self.ownership.generation)
        await self.ownership.on_assigned(self._mine(assigned))


#: Consumer-group timings of the table group (milliseconds), from the environment. Kafka's
#: defaults (10 s session, 3 s heartbeat) put failover past 10 s; 6 s is the broker's
#: default minimum session timeout (``group.min.session.timeout.ms``).
SESSION_TIMEOUT_ENV = "ELECTRIC_TABLE_SESSION_TIMEOUT_MS"
HEARTBEAT_ENV = "ELECTRIC_TABLE_HEARTBEAT_MS"
REBALANCE_TIMEOUT_ENV = "ELECTRIC_TABLE_REBALANCE_TIMEOUT_MS"
GROUP_TIMING_DEFAULTS = {
    SESSION_TIMEOUT_ENV: 6000,
    HEARTBEAT_ENV: 500,
    REBALANCE_TIMEOUT_ENV: 6000,
}


def group_timings(environ: Mapping[str, str] | None = None) -> dict[str, int]:
    """aiokafka consumer options of the table group: a member that stops heartbeating
    (kill -9, SIGSTOP) is out after ``session_timeout_ms``; the others learn of the
    rebalance at their next heartbeat and must rejoin within ``rebalance_timeout_ms``."""
    env = os.environ if environ is None else environ
    got = {}
    for name, default in GROUP_TIMING_DEFAULTS.items():
        text = env.get(name, "").strip()
        value = int(text) if text else default
        if value <= 0:
            raise ValueError(f"{name} must be > 0, got {value}")
        got[name] = value
    session, heartbeat = got[SESSION_TIMEOUT_ENV], got[HEARTBEAT_ENV]
    if heartbeat * 3 > session:
        raise ValueError(f"{HEARTBEAT_ENV} must be at most a third of {SESSION_TIMEOUT_ENV}")
    return {
        "session_timeout_ms": session,
        "heartbeat_interval_ms": heartbeat,
        "rebalance_timeout_ms": got[REBALANCE_TIMEOUT_ENV],
    }


def sticky_assignor() -> type[StickyPartitionAssignor]:
    """The table group's assignment strategy, one per instance: Kafka's sticky assignor
    (KIP-54), so that a rebalance moves only the partitions it must. The client has only the
    eager protocol (no cooperative rebalancing), so every member is still revoked and
    assigned at each rebalance, but a partition it keeps is resumed as it is, with its
    tables, rounds and watchers (``host.tables.Suspensions``); the round-robin default
    reshuffled most partitions whenever a member came or went (two of three kept partitions
    moved when a third instance left, measured in test_table_ownership_kafka.py).

    Its memory (the member's last assignment, sent as its metadata at the next join) lives
    on the class, so each instance gets a class of its own: hosts sharing a process (the
    tests, the embedded runner) would otherwise send each other's assignments."""
    return type(
        "TableGroupStickyAssignor",
        (StickyPartitionAssignor,),
        {"member_assignment": None, "generation": StickyPartitionAssignor.DEFAULT_GENERATION_ID},
    )


def group_options(assignor: type[StickyPartitionAssignor]) -> dict[str, Any]:
    """Every consumer option of the table group: :func:`group_timings`, and the sticky
    ``assignor`` alone. aiokafka 0.14 sends one JoinGroup per listed strategy (inside its
    loop over them), so listing round robin as well made every join two rounds. A rolling
    upgrade from instances that list round robin alone cannot join them (the group refuses
    a member with no strategy in common): stop the old instances before starting new ones."""
    return {**group_timings(), "partition_assignment_strategy": (assignor,)}


async def own_by_partitions(
    path: EventPath,
    group_id: str,
    topic: str,
    *,
    owner: str | Callable[[], str] | None = None,
) -> PartitionOwnership:
    """Wire ``partitions`` ownership: follow the assignment of ``topic`` (the registration
    topic) to consumer group ``group_id`` with the timings of :func:`group_timings`, taking
    fences under ``owner`` (the instance's advertised address; default its id). Each game's
    tables then follow it (``TournamentOwnership``, ``UthOwnership``). Needs Kafka (the
    in-process bus has no consumer group)."""
    from electric_eventlog.kafka import KafkaBus, topic_partitions

    bus = path.bus
    if not isinstance(bus, KafkaBus):
        raise ValueError(f"{OWNERSHIP_ENV}={PARTITIONS} needs Kafka (KAFKA_BOOTSTRAP_SERVERS)")
    physical = bus.kafka_name(topic)
    count = len(await topic_partitions(bus.bootstrap_servers, physical)) or partitions_for(topic)
    ownership = PartitionOwnership(
        path.engine,
        owner=owner or path.instance_id,
        partitions=count,
        scope_prefix=f"partition-{physical}-",
    )
    assignor = sticky_assignor()
    bus.set_rebalance_listener(
        group_id, OwnershipListener(ownership, physical, assignor), options=group_options(assignor)
    )
    return ownership
