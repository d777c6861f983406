"""How a live table is hosted in this process, whatever its game (issue 25, item 1).

Tournament tables (`runtime.TableManager`) and live UTH tables
(`casino.uth_tables.UthTables`) are both a :class:`LiveTables`: the copies this
instance serves, one per table id; the one driver loop (:func:`drive`) that feeds each its
time; stopping a driver and waiting for it; the background tasks; shutdown. What differs is
the game's: how a table is rebuilt from its streams and what one step of its clock does
(`driver.TableDriver`, `casino.uth_driver.UthDriver`).

A driver step runs under the table's lock and returns how long to sleep (0: step again at
once); a kick (a command changed the table) wakes it early. The loop ends when the copy is
no longer the one hosted here (replaced after a rebalance, dropped after a fenced write) or
the service stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, Protocol, TypeVar

from electric_eventlog.fencing import Fence


class Hosted(Protocol):
    """What the host needs of a live table of any game."""

    table_id: str
    lock: asyncio.Lock
    kick: asyncio.Event
    task: asyncio.Task[None] | None
    #: The epoch this instance holds on the table (``partitions`` ownership; None: single).
    fence: Fence | None


T = TypeVar("T", bound=Hosted)


def epoch(t: Hosted) -> int:
    """The epoch ``t`` writes under (0: no fence, single-instance mode)."""
    return t.fence.epoch if t.fence is not None else 0


class LiveTables(Generic[T]):
    """The live tables of one game hosted by this instance (module doc)."""

    def __init__(self, stopping: asyncio.Event) -> None:
        self.stopping = stopping
        self.tables: dict[str, T] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._loading: dict[str, asyncio.Lock] = {}
        #: Starts the driver of a table served here (set by the wiring; None: not driven).
        self.start_driver: Callable[[T], asyncio.Task[None]] | None = None
        #: ``partitions`` ownership: takes a table's epoch before it is rebuilt (raises
        #: ``PermissionError`` when its partition is not this instance's). None: single mode.
        self.fencer: Callable[[str], Fence] | None = None

    # ---------------------------------------------------------- the game's part of a load

    def exists(self, table_id: str) -> bool:
        """Whether ``table_id`` is a table of the game that can be hosted now (synchronous,
        run in a worker thread). No epoch is taken for one that is not there yet: every
        poll of a table being started would bump it."""
        raise NotImplementedError

    def rebuild(self, table_id: str) -> T | None:
        """``table_id`` replayed from its streams (synchronous, in a worker thread); None
        when it cannot be played."""
        raise NotImplementedError

    def retire(self, t: T) -> None:
        """Stop the copy ``t`` now without waiting, for a copy under a newer epoch: out of
        :attr:`tables`, its driver cancelled, its watchers told."""
        raise NotImplementedError

    async def prepare(self, t: T) -> None:
        """What the game does with a rebuilt copy before it is served (a UTH round that
        could not be replayed is voided from its rows)."""

    def installed(self, t: T) -> None:
        """``t`` is served here now: start what the game starts (its driver...)."""
        if self.start_driver is not None:
            t.task = self.start_driver(t)

    # -------------------------------------------------------------------------- loading

    async def load(self, table_id: str) -> T | None:
        """The copy of ``table_id`` served here, rebuilt on first use: one load per table at
        a time; the table's epoch taken first (``partitions`` ownership), so the rebuild
        sees every write before it; ONE copy per table, the one under the newer epoch (a
        rebalance may resume a suspended copy while this rebuild runs). None when the table
        does not exist, cannot be played, or is another instance's."""
        t = self.tables.get(table_id)
        if t is not None:
            return t
        guard = self._loading.setdefault(table_id, asyncio.Lock())
        async with guard:
            try:
                t = self.tables.get(table_id)
                if t is not None:
                    return t  # loaded by the caller this one waited for
                if not await asyncio.to_thread(self.exists, table_id):
                    return None
                fence = None
                if self.fencer is not None:
                    try:  # the epoch first: the rebuild then sees every earlier write
                        fence = await asyncio.to_thread(self.fencer, table_id)
                    except PermissionError:
                        return None  # another instance's table (docs/scaling.md)
                loaded = await asyncio.to_thread(self.rebuild, table_id)
                if loaded is None:
                    return None
                loaded.fence = fence
                await self.prepare(loaded)
                existing = self.tables.get(table_id)
                if existing is not None:
                    # Resumed while this rebuild ran (a rebalance gave the table back and
                    # its resume took an epoch after ours, or before it): ONE copy per
                    # table, the one under the newer epoch. Installing ours over it without
                    # stopping it left its driver writing under a stale epoch forever,
                    # fenced at every step, and each fenced write disowned whichever copy
                    # was current (chaos run, seed 18, two table instances: a table stalled
                    # with epochs 2 → 8).
                    if epoch(existing) >= epoch(loaded):
                        return existing
                    self.retire(existing)
                self.tables[table_id] = loaded
                self.installed(loaded)
                return loaded
            finally:
                if self._loading.get(table_id) is guard:
                    del self._loading[table_id]

    def holds(self, t: T) -> bool:
        """``t`` is the copy of its table hosted here (not one dropped or replaced: its
        driver stops at its next step)."""
        return self.tables.get(t.table_id) is t

    def in_background(self, work: Coroutine[Any, Any, Any], name: str | None = None) -> None:
        """Run ``work`` as a task of its own (a load after a consumer committed, a disown
        asked for by the table's own driver, a settlement's owed calls), cancelled at
        :meth:`close`."""
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def cancel_driver(self, t: T) -> asyncio.Task[None] | None:
        """Cancel ``t``'s driver without waiting (unless the caller is that driver: it
        ends at its next check); the cancelled task, to await."""
        task, t.task = t.task, None
        if task is None or task is asyncio.current_task():
            return None
        task.cancel()
        return task

    async def stop_driver(self, t: T) -> None:
        """Cancel ``t``'s driver and wait until it ended (its step, if one was running,
        ended with it: a write cut off by the cancel is never resumed from memory)."""
        task = self.cancel_driver(t)
        if task is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def close(self) -> None:
        """Stop every driver and background task (shutdown)."""
        tasks = [t.task for t in self.tables.values() if t.task is not None]
        tasks.extend(self._background)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


class Suspensions(Generic[T]):
    """Tables of revoked partitions, kept with their drivers stopped until the assignment
    that follows says whether they stay here. Kafka's eager protocol revokes every
    partition of every member at each rebalance, and most come back to the same member,
    which then resumes them as they are instead of rebuilding them (and their players see
    no interruption). The same for every game: what "resume" means is the game's."""

    def __init__(self) -> None:
        #: Table id → (the suspended copy, when it was suspended: ``time.monotonic()``).
        self.held: dict[str, tuple[T, float]] = {}
        #: Tables resumed as they were after a rebalance (tests, logs).
        self.kept = 0
        #: One settle at a time (an assignment's and the sweep's): a table resumed once.
        self._settling = asyncio.Lock()

    def hold(self, t: T) -> None:
        self.held[t.table_id] = (t, time.monotonic())

    def _still(self, table_id: str, t: T, since: float) -> bool:
        entry = self.held.get(table_id)
        return entry is not None and entry[0] is t and entry[1] == since

    async def settle(
        self,
        *,
        owns: Callable[[str], bool],
        resume: Callable[[T], Awaitable[bool]],
        drop: Callable[[T], None],
        older_than: float = 0.0,
    ) -> int:
        """Resume each held table this instance ``owns`` again (``resume``: False when it
        cannot be resumed as it is); ``drop`` the others (their watchers end and reconnect).
        ``older_than``: only those held at least that long (the sweep's grace for a
        revocation no assignment followed: the member left the group). Returns how many
        were resumed."""
        async with self._settling:
            kept = 0
            for table_id, (t, since) in list(self.held.items()):
                if time.monotonic() - since < older_than:
                    continue
                if not self._still(table_id, t, since):
                    continue  # settled meanwhile
                # Still held while it resumes: nothing loads a second copy meanwhile.
                resumed = owns(table_id) and await resume(t)
                if self._still(table_id, t, since):
                    del self.held[table_id]
                if resumed:
                    kept += 1
                else:
                    drop(t)
            self.kept += kept
            return kept


async def drive(
    t: Hosted,
    step: Callable[[], Awaitable[float]],
    *,
    driven: Callable[[], bool],
    scope: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
    stop_on: tuple[type[BaseException], ...] = (),
    on_error: Callable[[], None] = lambda: None,
    max_sleep_s: float | None = None,
) -> None:
    """Feed time to ``t`` while ``driven()``: ``step()`` under its lock (inside ``scope()``,
    e.g. the log context of its ids), then sleep what it returned (at most ``max_sleep_s``),
    or until kicked. A step that raises one of ``stop_on`` ends the loop (the table moved);
    on any other error ``on_error()`` is called inside the ``except`` (it logs the error
    under the game's own event name, docs/logging.md) and the step retried after a
    second."""
    while driven():
        t.kick.clear()
        delay = 1.0
        try:
            with scope():
                async with t.lock:
                    delay = await step()
        except asyncio.CancelledError:
            raise
        except stop_on:
            return
        except Exception:
            on_error()
            delay = 1.0
        if delay <= 0:
            continue
        if max_sleep_s is not None:
            delay = min(delay, max_sleep_s)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(t.kick.wait(), timeout=delay)
