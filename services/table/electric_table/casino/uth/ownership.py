"""Live UTH tables under partition ownership (issue 17; docs/scaling.md "Casino tables").

With ``ELECTRIC_TABLE_OWNERSHIP=partitions`` a live UTH table ``uth-<n>`` is hosted (its
in-memory round, its driver's clock, its group commit) by exactly one instance: the owner
of the partition of ``electric.registration.events`` that registration's events of the
table are keyed to — stream ``casino-table-<table_id>`` (CasinoTableOpened, CasinoSeatTaken,
CasinoSeatReleased), published keyed by stream id. The assignment is the one the consumer
group ``table.tournaments`` gives the tournament tables (:class:`PartitionOwnership`); this
module follows it:

* assigned → every UTH table of the new partitions with an open round or a seated player
  is hosted: its fence (resource ``casino-table-<id>``) is taken under this instance's
  advertised address and under the partition's fence (taken first, at the assignment),
  THEN its round is rebuilt from its stream and its driver started;
* revoked → every hosted table of those partitions is **suspended** (driver cancelled,
  commands answered UNAVAILABLE, watchers kept), not dropped: Kafka's eager protocol revokes
  every partition at each rebalance and most come back to the same member. The assignment
  that follows resumes it as the same object (its epoch taken again, its round re-read from
  the store, its driver restarted: the round goes on and its watchers see no error), or
  drops it when its partition went elsewhere (watchers ended UNAVAILABLE: they reconnect to
  the new owner). A revocation no assignment follows is settled by the sweep after
  ``ownership.SUSPEND_GRACE_S`` (issue 28 item 4). Until it is settled the suspended table
  is the only copy: no call loads another one (UNAVAILABLE, retry) — a copy loaded once the
  partition is held again took the table's epoch and the resume the next over it, leaving
  the copy hosted under a stale epoch, fenced at its next write and the table lost here —
  and one dropped while suspended (a write in flight fenced) is not resumed but loaded anew;
* every write of a table checks its fence in the write's transaction (``UthTables.tx``,
  the intents, the refusals, the void of an unreplayable round): an instance that lost the
  table while paused stores nothing (ABORTED) and drops the table.

THB needs no owner: a THB round has no in-memory state between commands (each reloads it
and appends at the expected version), so any instance serves it.
"""

from __future__ import annotations

import asyncio
import logging

from electric_eventlog.fencing import Fence

from electric_table.casino.uth.live import LiveTable
from electric_table.casino.uth.tables import UthTables
from electric_table.host import ownership as ownership_module
from electric_table.host.ownership import PartitionOwnership, partition_of_key
from electric_table.host.tables import Suspensions

log = logging.getLogger(__name__)


def uth_resource(table_id: str) -> str:
    """Registration's stream of the casino table (its Kafka key) and the table's fence."""
    return f"casino-table-{table_id}"


def uth_partition(table_id: str, partitions: int) -> int:
    """The partition registration's events of casino table ``table_id`` are on."""
    return partition_of_key(uth_resource(table_id).encode(), partitions)


class UthOwnership:
    """Hosts the UTH tables of this instance's partitions (module doc)."""

    def __init__(self, uth: UthTables, ownership: PartitionOwnership) -> None:
        self.uth = uth
        self.ownership = ownership
        #: Tables of revoked partitions, kept until the next assignment.
        self.suspensions: Suspensions[LiveTable] = Suspensions()
        self.suspended = self.suspensions.held
        uth.owns = self.hosts
        uth.fencer = self.fence_for
        ownership.followers.append(self)

    @property
    def kept(self) -> int:
        """Tables resumed as they were after a rebalance (tests, logs)."""
        return self.suspensions.kept

    def partition(self, table_id: str) -> int:
        return uth_partition(table_id, self.ownership.partitions)

    def owns(self, table_id: str) -> bool:
        """Whether ``table_id``'s partition is this instance's (assigned, scope held)."""
        return self.ownership.holds_partition(self.partition(table_id))

    def hosts(self, table_id: str) -> bool:
        """Whether ``table_id`` may be loaded here (``UthTables.mine``): its partition is this
        instance's and no suspended copy of it waits for the settle. A copy loaded meanwhile
        (a call that waited in the router for the partition to be held, the
        ``casino-uth-tables`` loop) would take the table's epoch, and the resume of the
        suspended one take the next over it: the copy, left hosting the table under a stale
        epoch, was fenced at its next write and the table marked lost here — driven
        nowhere, its open round never settled (chaos run, two table instances)."""
        return self.owns(table_id) and table_id not in self.suspended

    def serves(self, table_id: str) -> bool:
        """Whether calls on ``table_id`` are served here now (:meth:`hosts`)."""
        return self.hosts(table_id)

    def fence_for(self, table_id: str) -> Fence:
        """Take the table's epoch under its partition's (before its rebuild);
        ``PermissionError`` when the partition is not this instance's, or was taken by
        another instance since (a stale owner takes nothing back)."""
        return self.ownership.take(uth_resource(table_id), self.partition(table_id))

    async def on_assigned(self, partitions: set[int]) -> int:
        """Host the UTH tables of ``partitions``; returns how many. A table that fails to
        load (the database is away) is retried by ``casino-uth-tables`` every 2 s."""
        self.uth.lost = {t for t in self.uth.lost if self.partition(t) not in partitions}
        await self.settle()
        names = await asyncio.to_thread(self.uth.known_tables)
        hosted = 0
        for name in names:
            if self.partition(name) not in partitions or name in self.uth.tables:
                continue
            try:
                await self.uth.table(name)
                hosted += 1
            except Exception as exc:
                log.warning("uth.host_tables_failed", extra={"error": str(exc)})
        log.info(
            "uth.partitions_assigned", extra={"partitions": sorted(partitions), "tables": hosted}
        )
        return hosted

    async def on_revoked(self, partitions: set[int]) -> int:
        """Suspend the hosted UTH tables of ``partitions`` until the next assignment;
        returns how many."""
        held = 0
        for name in list(self.uth.tables):
            if self.partition(name) in partitions:
                t = await self._suspend(name)
                if t is not None:
                    self.suspensions.hold(t)
                    held += 1
        log.info("uth.partitions_revoked", extra={"partitions": sorted(partitions), "tables": held})
        return held

    async def _suspend(self, name: str) -> LiveTable | None:
        t = self.uth.tables.pop(name, None)
        if t is None:
            return None
        t.suspended = True
        await self.uth.stop_driver(t)
        return t

    async def settle(self, *, older_than: float = 0.0) -> int:
        """Resume each suspended table whose partition is this instance's again; drop the
        others (``older_than``: only those suspended at least that long, the sweep's grace
        for a revocation no assignment followed). Returns how many were resumed."""
        return await self.suspensions.settle(
            owns=self.owns, resume=self._resume, drop=self._drop, older_than=older_than
        )

    async def _resume(self, t: LiveTable) -> bool:
        """Host ``t`` again as the same object: its epoch taken again, its round re-read
        from the store (a write its cancelled driver left committed, or another owner's
        meanwhile, is then in memory too), its driver restarted. False when it cannot be
        (the partition moved on, the database is away, a copy was loaded meanwhile, or ``t``
        was dropped while suspended: a write of it in flight through the revocation was
        fenced, or its load was refused — resumed, it would be hosted but never driven, and
        every call answered "moved" until the partition left this instance)."""
        if t.disowned or self.uth.tables.get(t.table_id) not in (None, t):
            return False  # (a copy hosted here holds the newest epoch: take none over it)
        try:
            async with t.lock:
                if t.disowned:
                    return False
                fence = await asyncio.to_thread(self.fence_for, t.table_id)
                t.fence = fence
                await self.uth._reload(t)
                if self.uth.tables.get(t.table_id) not in (None, t) or t.disowned:
                    return False
                if self.ownership.scopes.get(self.partition(t.table_id)) is not fence.scope:
                    return False  # revoked (or taken anew) while it was being resumed
                t.suspended = False
                self.uth.tables[t.table_id] = t
                if self.uth.start_driver is not None:  # (broken: its driver repairs it)
                    t.task = self.uth.start_driver(t)
        except Exception as exc:
            log.warning("uth.resume_failed", extra={"table_id": t.table_id, "error": str(exc)})
            return False
        t.notify()
        log.info("uth.resumed", extra={"table_id": t.table_id, "version": t.version})
        return True

    def _drop(self, t: LiveTable) -> None:
        """``t`` stays another instance's (or was replaced here): its watchers end."""
        t.suspended = False
        t.disowned = True
        t.notify()
        log.info("uth.disowned", extra={"table_id": t.table_id, "version": t.version})

    async def sweep(self) -> int:
        """Drop the tables of a revocation that no assignment followed (the member left
        the group), after the grace. Loads nothing (``casino-uth-tables`` retries a table
        whose load failed): 0."""
        await self.settle(older_than=ownership_module.SUSPEND_GRACE_S)
        return 0


__all__ = ["UthOwnership", "uth_partition", "uth_resource"]
