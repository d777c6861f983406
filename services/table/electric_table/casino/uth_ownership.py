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
* revoked → every hosted table of those partitions is dropped (driver cancelled, watchers
  ended UNAVAILABLE, queued commands answered UNAVAILABLE);
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

from electric_table.casino.uth_tables import UthTables
from electric_table.ownership import PartitionOwnership, partition_of_key

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
        uth.owns = self.owns
        uth.fencer = self.fence_for
        ownership.followers.append(self)

    def partition(self, table_id: str) -> int:
        return uth_partition(table_id, self.ownership.partitions)

    def owns(self, table_id: str) -> bool:
        """Whether ``table_id``'s partition is this instance's (assigned, scope held)."""
        return self.ownership.holds_partition(self.partition(table_id))

    def fence_for(self, table_id: str) -> Fence:
        """Take the table's epoch under its partition's (before its rebuild);
        ``PermissionError`` when the partition is not this instance's, or was taken by
        another instance since (a stale owner takes nothing back)."""
        return self.ownership.take(uth_resource(table_id), self.partition(table_id))

    async def on_assigned(self, partitions: set[int]) -> int:
        """Host the UTH tables of ``partitions``; returns how many. A table that fails to
        load (the database is away) is retried by ``casino-uth-tables`` every 2 s."""
        self.uth.lost = {t for t in self.uth.lost if self.partition(t) not in partitions}
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
        """Drop the hosted UTH tables of ``partitions``; returns how many."""
        dropped = 0
        for name in list(self.uth.tables):
            if self.partition(name) in partitions and await self.uth.disown(name):
                dropped += 1
        log.info(
            "uth.partitions_revoked", extra={"partitions": sorted(partitions), "tables": dropped}
        )
        return dropped


__all__ = ["UthOwnership", "uth_partition", "uth_resource"]
