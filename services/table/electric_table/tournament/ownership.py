"""The tournament tables of this instance's partitions (``partitions`` ownership; design in
docs/scaling.md): a follower of :class:`~electric_table.host.ownership.PartitionOwnership`, as
the casino's live UTH tables are (``casino.uth.ownership``).

On assignment each unfinished table of a new partition is fenced (its epoch taken under the
partition's scope) and rebuilt from its events, and its driver started; on revocation its
driver stops and it is kept suspended until the assignment that follows: given back and
unchanged, it is resumed as it is; anything else is dropped (its watchers reconnect to the
new owner) and, if owned again, rebuilt (`host.tables.Suspensions`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from electric_eventlog.fencing import Fence

from electric_table.host import ownership as ownership_module
from electric_table.host.ownership import PartitionOwnership, partition_for
from electric_table.host.tables import Suspensions
from electric_table.journal import table_stream
from electric_table.store import repo
from electric_table.tournament.runtime import TableManager, TableRuntime

log = logging.getLogger(__name__)


class TournamentOwnership:
    """Hosts the tournament tables of the partitions ``ownership`` holds (module doc). The
    manager's fencer: every table it loads is fenced first (:meth:`fence_for`)."""

    def __init__(
        self,
        manager: TableManager,
        ownership: PartitionOwnership,
        *,
        live_ids: Callable[[], Awaitable[list[str]]] | None = None,
    ) -> None:
        self.manager = manager
        self.ownership = ownership
        self.engine = ownership.engine
        #: Assigned partitions whose tables are not all loaded yet (the database failed
        #: during the assignment): the sweep retries them until they are.
        self.unloaded: set[int] = set()
        self._live_ids = live_ids
        #: Tables of revoked partitions, kept with their driver stopped until the
        #: assignment that follows says whether they stay here (:meth:`_settle_suspended`).
        self.suspensions: Suspensions[TableRuntime] = Suspensions()
        self.suspended = self.suspensions.held
        manager.fencer = self.fence_for
        ownership.followers.insert(0, self)  # the tournament tables first

    @property
    def kept(self) -> int:
        """Tables resumed without a rebuild after a rebalance (tests, logs)."""
        return self.suspensions.kept

    def partition(self, table_id: str) -> int:
        return partition_for(table_id, self.ownership.partitions)

    def owns(self, table_id: str) -> bool:
        """Whether ``table_id`` is on a partition this instance holds."""
        return self.ownership.holds_partition(self.partition(table_id))

    def serves(self, table_id: str) -> bool:
        """Whether calls on ``table_id`` are served here now: its partition is held and no
        suspended runtime of it waits for the settle (until then: UNAVAILABLE, retry). A
        copy loaded in that window took the table's epoch and the resume the next one over
        it: the copy, left hosted under a stale epoch, was fenced at its next write."""
        return self.owns(table_id) and table_id not in self.suspended

    def fence_for(self, table_id: str) -> Fence:
        """Take ``table_id``'s fencing epoch for this instance (own transaction, committed
        before the rebuild reads the stream, so the rebuild sees every write of the
        previous owner and none can follow). Raises ``PermissionError`` for a table of a
        partition this instance does not hold, or for a suspended table (only its resume
        takes its epoch: :meth:`serves`)."""
        if table_id in self.suspended:
            raise PermissionError(f"table {table_id} is being resumed here")
        return self.ownership.take(table_stream(table_id), self.partition(table_id))

    # ------------------------------------------------------------------ the assignment

    async def on_assigned(self, partitions: set[int]) -> int:
        """Own the tables of ``partitions``: resume the suspended ones given back, rebuild
        every other unfinished one (taking its epoch) and start its driver. Returns how
        many were loaded. When the database fails meanwhile, the partitions stay in
        :attr:`unloaded` and the sweep finishes them."""
        self.unloaded |= partitions
        kept = await self._settle_suspended()
        loaded = await self._load_unloaded()
        log.info(
            "table.partitions_assigned",
            extra={"partitions": sorted(partitions), "tables": loaded, "kept": kept},
        )
        return loaded

    async def on_revoked(self, partitions: set[int]) -> int:
        """Stop owning the tables of ``partitions``: stop their drivers and stop serving
        them. Kept in :attr:`suspended` until the next assignment: Kafka's eager protocol
        revokes every partition of every member at each rebalance, and most come back to
        the same member, which then resumes them without a rebuild (:meth:`_resume`)."""
        self.unloaded -= partitions
        dropped = 0
        for table_id in list(self.manager.tables):
            if self.partition(table_id) in partitions:
                rt = await self.manager.suspend(table_id)
                if rt is not None:
                    self.suspensions.hold(rt)
                dropped += 1
        log.info(
            "table.partitions_revoked", extra={"partitions": sorted(partitions), "tables": dropped}
        )
        return dropped

    async def sweep(self) -> int:
        """Drop the tables of a revocation no assignment followed (after the grace); load
        the unfinished tables of this instance's partitions still owed (an assignment the
        database failed) or that nobody ever took (no fence row). Returns how many were
        loaded. Tables someone took are left alone: they move only with an assignment, so
        a resumed stale instance never takes a table back by sweeping."""
        await self._settle_suspended(older_than=ownership_module.SUSPEND_GRACE_S)
        if not self.ownership.assigned:
            return 0
        loaded = await self._load_unloaded()
        ids = await asyncio.to_thread(self._untaken_live_ids)
        for table_id in ids:
            if not self.owns(table_id) or table_id in self.manager.tables:
                continue
            if await self.manager.load(table_id) is not None:
                loaded += 1
        if loaded:
            log.info("table.swept", extra={"tables": loaded})
        return loaded

    # ------------------------------------------------------------------ internals

    async def _load_unloaded(self) -> int:
        """Load every unfinished table of the ``unloaded`` partitions; the partitions of a
        table that failed to load stay for the next sweep."""
        if not self.unloaded:
            return 0
        todo = {p for p in self.unloaded if self.ownership.holds_partition(p)}
        if not todo:
            return 0
        loaded, failed = 0, set()
        try:
            ids = await (self._live_ids() if self._live_ids else self._stored_live_ids())
        except Exception as exc:
            log.warning("table.assign_load_failed", extra={"error": str(exc), "tables": 0})
            return 0
        for table_id in ids:
            part = self.partition(table_id)
            if part not in todo or table_id in self.manager.tables:
                continue
            try:
                if await self.manager.load(table_id) is not None:
                    loaded += 1
            except Exception as exc:
                failed.add(part)
                log.warning(
                    "table.assign_load_failed", extra={"error": str(exc), "table_id": table_id}
                )
        self.unloaded -= todo - failed
        return loaded

    async def _settle_suspended(self, *, older_than: float = 0.0) -> int:
        """Resume the suspended tables this instance owns again, when nothing happened to
        them meanwhile; end the others (their watchers reconnect; a table owned again but
        changed is rebuilt by the load that follows). ``older_than``: only those suspended
        at least that long (the sweep: a revocation no assignment followed). Returns how
        many were resumed."""
        return await self.suspensions.settle(
            owns=self.owns,
            resume=lambda rt: self._resume(rt.table_id, rt),
            drop=self.manager.end_suspended,
            older_than=older_than,
        )

    async def _resume(self, table_id: str, rt: TableRuntime) -> bool:
        """Take ``table_id``'s epoch again and serve ``rt`` as it is, if no other instance
        took the table meanwhile (the new epoch is the next after ours) and the stream holds
        exactly what ``rt`` applied (a write cut off by the driver's cancellation may have
        committed unseen). Otherwise False: the caller rebuilds it from its events."""
        previous = rt.fence
        try:
            async with rt.lock:  # a command in flight finishes first
                take = self.ownership.take
                part = self.partition(table_id)
                fence = await asyncio.to_thread(take, table_stream(table_id), part)
                stored = await asyncio.to_thread(self._stream_version, table_id)
                moved = previous is None or fence.epoch != previous.epoch + 1
                if moved or rt.fenced or rt.stale or stored != rt.version:
                    return False
                return self.manager.resume(rt, fence)
        except Exception as exc:  # the database is away: the load that follows retries
            log.warning("table.resume_failed", extra={"table_id": table_id, "error": str(exc)})
            return False

    def _stream_version(self, table_id: str) -> int:
        with self.engine.connect() as conn:
            return self.manager.store.current_version(conn, table_stream(table_id))

    def _untaken_live_ids(self) -> list[str]:
        with self.engine.connect() as conn:
            return repo.untaken_live_table_ids(conn)

    async def _stored_live_ids(self) -> list[str]:
        def read() -> list[str]:
            with self.engine.connect() as conn:
                return repo.live_table_ids(conn)

        return await asyncio.to_thread(read)


__all__ = ["TournamentOwnership"]
