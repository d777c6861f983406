"""Wakes WatchMyTables streams when one of the player's tables changed.

Handlers call :meth:`Notifier.notify` with the players concerned after their transaction
committed (from the event loop or from a worker thread: it is thread-safe). Streams wait on
:meth:`Notifier.wait`; they also re-read periodically, so changes made by another instance
of the service still arrive (polling fallback). Each watched player has a generation, the
changes notified for them so far: watchers of one player woken by the same change share one
read (:class:`SharedReads`, issue 26).

A change that only moved a table on (its ``TableProgress``: hand number, stacks, whose turn)
is notified with the :class:`TableMoved` itself, and each watched player keeps a short log
of what each generation was: a player's My Tables rows are then moved on from the facts,
with no read (:mod:`.bars`); any other change (a None in the log) needs a read.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import threading
from collections.abc import Awaitable, Callable, Hashable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")

#: Changes remembered per watched player (a watcher further behind reads).
LOG_LENGTH = 64


@dataclass(frozen=True)
class TableMoved:
    """A table's ``TableProgress`` as registration applied it: what a My Tables row shows
    of the table's play (every seat's stack, whose turn until when, the hand number)."""

    table_id: str
    hand_number: int
    stacks: tuple[tuple[int, int], ...]
    turn_seat: int
    turn_deadline: datetime | None


class Notify(Protocol):
    """What the handlers call after a commit: wake the streams of ``players``; ``moved``
    when all the change did was move that table on."""

    def __call__(self, players: Iterable[str], moved: TableMoved | None = None) -> None: ...


class Notifier:
    """Per-player wake-ups for the streams of one event loop."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: dict[str, set[asyncio.Event]] = {}
        #: Changes notified per watched player (dropped with its last watcher).
        self._generations: dict[str, int] = {}
        #: The last changes per watched player: (generation, the move or None).
        self._logs: dict[str, collections.deque[tuple[int, TableMoved | None]]] = {}
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

    def unsubscribe(self, player_id: str, event: asyncio.Event) -> bool:
        """Stop waking ``event``; True when it was the player's last watcher."""
        with self._lock:
            events = self._waiters.get(player_id)
            if events is not None:
                events.discard(event)
                if not events:
                    del self._waiters[player_id]
                    self._generations.pop(player_id, None)
                    self._logs.pop(player_id, None)
                    return True
            return False

    def generation(self, player_id: str) -> int:
        """How many changes were notified for ``player_id`` while it was watched."""
        with self._lock:
            return self._generations.get(player_id, 0)

    def moves_between(self, player_id: str, since: int, until: int) -> list[TableMoved] | None:
        """The moves that were the player's changes ``since`` < generation <= ``until``, in
        order; None when one of them was another change or is no longer remembered."""
        with self._lock:
            log = self._logs.get(player_id)
            if log is None:
                return None if until > since else []
            changes = [(g, m) for g, m in log if since < g <= until]
        if len(changes) != until - since or any(m is None for _, m in changes):
            return None
        return [m for _, m in changes if m is not None]

    def notify(self, players: Iterable[str], moved: TableMoved | None = None) -> None:
        """Wake the streams of ``players`` (thread-safe); ``moved``: all the change did."""
        with self._lock:
            events: list[asyncio.Event] = []
            for p in players:
                waiting = self._waiters.get(p)
                if waiting:
                    generation = self._generations.get(p, 0) + 1
                    self._generations[p] = generation
                    log = self._logs.get(p)
                    if log is None:
                        log = self._logs[p] = collections.deque(maxlen=LOG_LENGTH)
                    log.append((generation, moved))
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
