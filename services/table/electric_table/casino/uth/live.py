"""A live UTH table as one table-service instance holds it: its current (or last) round,
the lock every change takes, the driver's wake-up, the commands queued for the next pass
(``uth_batch``) and the fence of its owner (docs/casino-services.md, docs/scaling.md)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from electric_domain.casino.uth.round import UthRound
from electric_eventlog.fencing import Fence

from electric_table.casino import repo
from electric_table.casino.uth import records as uth_records
from electric_table.casino.uth.batch import Queued
from electric_table.refusals import TryAgain


@dataclass
class LiveTable:
    table_id: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    kick: asyncio.Event = field(default_factory=asyncio.Event)
    round: UthRound | None = None
    book: uth_records.UthBook | None = None
    row: repo.RoundRow | None = None
    version: int = 0
    next_open_at: int | None = None
    seated: int = 0
    broken: str = ""
    task: asyncio.Task[None] | None = None
    #: PlaceBets waiting for the lock; the next holder carries them (``uth_batch``).
    pending: list[Queued] = field(default_factory=list)
    #: The last event stored on the current round's stream: what the table's clock continues
    #: from (the causation of its next step; for an opening, the previous round's last).
    last_event_id: str = ""
    #: The epoch this instance holds on the table (``partitions`` ownership; None: single).
    fence: Fence | None = None
    #: Dropped here (its partition moved, or a write was fenced): nothing more is written
    #: through this object; its watchers end with UNAVAILABLE and reconnect.
    disowned: bool = False
    #: Its partition was revoked by a rebalance and the assignment that follows has not
    #: said yet whether it stays here (``uth.ownership``): not driven, commands answered
    #: UNAVAILABLE (retry), watchers kept; resumed as it is, or dropped.
    suspended: bool = False
    #: Why its round could not be replayed when it was loaded ("": it could); the host's
    #: load has it voided from its rows before the table is served (``uth.recovery``).
    unreplayable: str = ""
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def changed(self) -> asyncio.Event:
        """Set at the next change (wait on it, then read the new state)."""
        return self._changed

    def notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    @property
    def live(self) -> bool:
        return self.round is not None and not self.round.finished

    def check_owned(self) -> None:
        """UNAVAILABLE (retry: it reaches the new owner) once the table was dropped here, or
        while a rebalance decides where it goes."""
        if self.disowned:
            raise TryAgain(f"UTH table {self.table_id} moved to another instance; retry")
        if self.suspended:
            raise TryAgain(f"UTH table {self.table_id} is being reassigned; retry")

    def seat_of(self, player_id: str) -> int | None:
        if self.round is None:
            return None
        for i, s in enumerate(self.round.state.seats):
            if s.player == player_id:
                return i
        return None
