"""Wakes WatchMyTables streams when one of the player's tables changed.

Handlers call :meth:`Notifier.notify` with the players concerned after their transaction
committed (from the event loop or from a worker thread: it is thread-safe). Streams wait on
:meth:`Notifier.wait`; they also re-read periodically, so changes made by another instance
of the service still arrive (polling fallback). Each watched player has a generation, the
changes notified for them so far: watchers of one player woken by the same change share one
read (:class:`SharedReads`, issue 26).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class Notifier:
    """Per-player wake-ups for the streams of one event loop."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: dict[str, set[asyncio.Event]] = {}
        #: Changes notified per watched player (dropped with its last watcher).
        self._generations: dict[str, int] = {}
        self._lock = threading.Lock()

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The loop the streams run in (set when the first stream subscribes)."""
        self._loop = loop

    def subscribe(self, player_id: str) -> asyncio.Event:
        """An event set whenever ``player_id``'s tables change; :meth:`unsubscribe` after."""
        self._loop = asyncio.get_running_loop()
        event = asyncio.Event()
        with self._lock:
            self._waiters.setdefault(player_id, set()).add(event)
        return event

    def unsubscribe(self, player_id: str, event: asyncio.Event) -> None:
        with self._lock:
            events = self._waiters.get(player_id)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiters[player_id]
                    self._generations.pop(player_id, None)

    def generation(self, player_id: str) -> int:
        """How many changes were notified for ``player_id`` while it was watched."""
        with self._lock:
            return self._generations.get(player_id, 0)

    def notify(self, players: Iterable[str]) -> None:
        """Wake the streams of ``players`` (thread-safe)."""
        with self._lock:
            events: list[asyncio.Event] = []
            for p in players:
                waiting = self._waiters.get(p)
                if waiting:
                    self._generations[p] = self._generations.get(p, 0) + 1
                    events.extend(waiting)
        if not events or self._loop is None or self._loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            for e in events:
                e.set()
        else:
            for e in events:
                self._loop.call_soon_threadsafe(e.set)


class SharedReads(Generic[T]):
    """One read in flight per key: a caller whose key is being read since at least the
    generation it needs awaits that read instead of starting its own. A finished read is
    never reused (a periodic re-read must see what changed elsewhere)."""

    def __init__(self) -> None:
        self._inflight: dict[Hashable, tuple[int, asyncio.Future[T]]] = {}
        #: Reads started (tests, benchmarks).
        self.started = 0

    async def read(self, key: Hashable, generation: int, run: Callable[[], Awaitable[T]]) -> T:
        """``run()``'s result, shared with every caller of ``key`` whose ``generation`` is
        at most the one the read in flight started at (it started after their changes
        committed, so it sees them)."""
        current = self._inflight.get(key)
        if current is not None and current[0] >= generation and not current[1].done():
            return await asyncio.shield(current[1])
        future: asyncio.Future[T] = asyncio.ensure_future(run())
        self.started += 1
        self._inflight[key] = (generation, future)
        future.add_done_callback(functools.partial(self._finished, key))
        return await asyncio.shield(future)

    def _finished(self, key: Hashable, future: asyncio.Future[T]) -> None:
        current = self._inflight.get(key)
        if current is not None and current[1] is future:
            del self._inflight[key]
