"""The real-time driver of a live table: feeds time to the aggregate.

One task per loaded, unfinished table: when the aggregate's next wake-up (turn deadline,
level change, 0:00) is due it sends ``Tick(now)``; when a hand should be dealt, after the
hand pause, ``DealHand`` with a fresh seed from the OS CSPRNG; a stale table (a write and
its reload failed: memory may be ahead of the stream) is first re-read from the store. Each
step runs under the table's lock through `TableHandlers.apply`, like any command, in the one
driver loop of every live table (`host.tables.drive`). A failing step is logged, counted and
retried.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

from electric_domain.tournament import DealHand, Tick
from electric_eventlog import causality

from electric_table.host.tables import drive
from electric_table.tournament.handlers import TableHandlers
from electric_table.tournament.runtime import TableManager, TableRuntime

log = logging.getLogger(__name__)

#: Seconds between a stale table's reloads while the database is away.
STALE_RETRY_S = 2.0


class TableDriver:
    """Starts and runs the driver task of each live table."""

    def __init__(
        self,
        manager: TableManager,
        handlers: TableHandlers,
        *,
        seed_source: Callable[[], bytes] = lambda: os.urandom(32),
    ) -> None:
        self.manager = manager
        self.handlers = handlers
        self.seed_source = seed_source

    def start(self, rt: TableRuntime) -> asyncio.Task[None]:
        """The driver task of ``rt`` (the manager keeps it on the runtime)."""
        return asyncio.create_task(self._drive(rt), name=f"table-driver-{rt.table_id}")

    async def _drive(self, rt: TableRuntime) -> None:
        """Feed time to one table until its tournament finishes or the service stops."""
        await drive(
            rt,
            lambda: self._step(rt),
            driven=lambda: self.driven(rt),
            # Log lines of the step carry the tournament's ids (persist records them).
            scope=lambda: causality.caused_by(rt.correlation_id, rt.last_event_id),
            on_error=lambda: self._failed(rt),
        )

    def driven(self, rt: TableRuntime) -> bool:
        """Whether ``rt`` is still driven here: held (not retired nor replaced meanwhile,
        ``TableManager.holds``), the service not stopping, and its tournament not over.
        Finished counts only when nothing holds the table's lock and it is not stale: a
        command holding the lock may have applied events in memory whose write then fails
        and whose reload restores the stored state (the last Act of a tournament shows it
        finished for the seconds of its write and reload), and a driver that ended on that
        sight never stepped again while its table stayed hosted (seed 38's hour of 7 Dec,
        night: a table stalled 450.8 s after a failover). Its next step, under the lock,
        returns at once for a finished table, and the question is asked again."""
        manager = self.manager
        over = rt.finished and not rt.stale and not rt.lock.locked()
        return not over and not manager.stopping.is_set() and manager.holds(rt)

    def _failed(self, rt: TableRuntime) -> None:
        """A step raised (called inside the ``except``: the traceback is logged)."""
        log.exception("table.driver_step_failed", extra={"table_id": rt.table_id})
        self.manager.metrics.driver_errors.inc()

    async def _step(self, rt: TableRuntime) -> float:
        """One driver step under the lock; returns seconds to sleep (0 = run again)."""
        if rt.stale:  # a write and its reload failed: the table re-read before anything else
            try:
                await self.manager.reload(rt, patient=False)
            except Exception:  # the database is still away
                log.warning("table.reload_retry", extra={"table_id": rt.table_id}, exc_info=True)
                self.manager.metrics.driver_errors.inc()  # (a table stuck stale shows there)
                return STALE_RETRY_S
            return 0
        t = rt.tournament
        if t.state.finished:
            return 0
        now = self.manager.now_for(rt)
        wake = t.next_wakeup_at()
        if wake is not None and wake <= now:
            await self.handlers.apply(rt, Tick(now))
            return 0
        if t.awaiting_deal():
            if rt.deal_at is None:
                rt.deal_at = now + self.handlers.hand_pause_ms
            if rt.deal_at <= now:
                rt.deal_at = None
                settings = await asyncio.to_thread(self.handlers.show_settings, rt)
                await self.handlers.apply(rt, DealHand(now, self.seed_source(), settings))
                return 0
        targets = [x for x in (wake, rt.deal_at if t.awaiting_deal() else None) if x is not None]
        if not targets:
            return 1.0
        return max(0.001, (min(targets) - now) / 1000)
