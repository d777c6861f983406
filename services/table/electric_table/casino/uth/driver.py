"""The clock of a live UTH table: one task per table (``uth-driver-<table>``).

Each step runs under the table's lock: when the round's next wake-up (yellow light, close of
betting and the deal, a decision deadline) is due it commits ``Tick(now)``; when the round is
over it waits the pause between rounds, then opens the next round with the players seated at
the table (none seated: it waits, polling every second or until kicked). A broken table
(a change neither stored nor reloaded) is first re-read from the store (``UthTables.repair``).
The loop is every live table's (`host.tables.drive`); a failing step is logged and retried
after a second.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging

from electric_table.casino import repo
from electric_table.casino.uth.tables import LiveTable, UthTables
from electric_table.host.tables import drive
from electric_table.refusals import TableMoved

log = logging.getLogger(__name__)

#: Longest sleep of a driver (seconds): seat changes and stops are noticed within it.
MAX_SLEEP_S = 1.0


class UthDriver:
    """Starts and runs the driver task of each live UTH table."""

    def __init__(self, tables: UthTables) -> None:
        self.tables = tables
        tables.start_driver = self.start

    def start(self, t: LiveTable) -> asyncio.Task[None]:
        # A context of its own: the task must not inherit (and stamp on every clock event)
        # the ids of whatever call happened to start it.
        return asyncio.create_task(
            self._drive(t), name=f"uth-driver-{t.table_id}", context=contextvars.Context()
        )

    async def _drive(self, t: LiveTable) -> None:
        tables = self.tables
        await drive(
            t,
            lambda: self.step(t),
            # A copy dropped or replaced meanwhile (``UthTables.holds``) stops driving.
            driven=lambda: not tables.stopping.is_set() and not t.disowned and tables.holds(t),
            stop_on=(TableMoved,),  # fenced: another instance owns the table; being dropped
            max_sleep_s=MAX_SLEEP_S,
            on_error=lambda: log.exception(
                "uth.driver_step_failed", extra={"table_id": t.table_id}
            ),
        )

    async def step(self, t: LiveTable) -> float:
        """One step under the lock; seconds to sleep (0 = step again)."""
        tables = self.tables
        if t.broken:  # a change not stored and not reloaded: the round re-read first
            await tables.repair(t)
            return 0 if not t.broken else MAX_SLEEP_S
        now = tables.now_ms()
        if t.round is not None and t.live:
            wake = t.round.next_wakeup_at()
            if wake is not None and wake <= now:
                await tables._tick(t, now)
                return 0
            return MAX_SLEEP_S if wake is None else (wake - now) / 1000
        if t.next_open_at is None:
            t.next_open_at = now + (tables.pause_ms if t.round is not None else 0)
        if now < t.next_open_at:
            return (t.next_open_at - now) / 1000
        players = await asyncio.to_thread(self._seated, t.table_id)
        if len(players) != t.seated:
            t.seated = len(players)
            t.notify()
        if not players:
            return MAX_SLEEP_S
        await tables.open_next(t, players, now)
        t.next_open_at = None
        return 0

    def _seated(self, table_id: str) -> list[str]:
        with self.tables.engine.connect() as conn:
            return repo.seated_players(conn, table_id)
