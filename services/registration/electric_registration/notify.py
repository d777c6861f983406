"""Wakes WatchMyTables streams when one of the player's tables changed.

Handlers call :meth:`Notifier.notify` with the players concerned after their transaction
committed (from the event loop or from a worker thread: it is thread-safe). Streams wait on
:meth:`Notifier.wait`; they also re-read periodically, so changes made by another instance
of the service still arrive (polling fallback).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable


class Notifier:
    """Per-player wake-ups for the streams of one event loop."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: dict[str, set[asyncio.Event]] = {}
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

    def notify(self, players: Iterable[str]) -> None:
        """Wake the streams of ``players`` (thread-safe)."""
        with self._lock:
            events = [e for p in players for e in self._waiters.get(p, ())]
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
