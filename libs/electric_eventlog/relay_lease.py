"""The outbox relay's leadership on PostgreSQL, as a lease that a paused holder loses.

Only one relay per store and topic may publish at a time: two relays sending the same rows at
once send duplicates in an order neither chose. The leadership is a session advisory lock.
A killed holder's lock dies with its connection, but a SIGSTOPped (or otherwise frozen)
holder keeps its TCP connection open, so its lock, and every other instance's relay waited
until it resumed or died (issue 17, docs/scaling.md; issue 18's SIGSTOP fault).

So the lock is held on a session that PostgreSQL ends after ``lease_seconds`` of silence
(``idle_session_timeout``, PostgreSQL 14+), and a heartbeat thread speaks on it every
``lease_seconds / 4``. A frozen process stops the heartbeat with everything else; the server
ends the session, the lock is released, and another instance's relay takes over after the
lease. The heartbeat is a thread of its own, not a task of the event loop, so a loop busy for
a few seconds does not lose the lease; only a process that does not run at all does.

When the frozen holder resumes, its next heartbeat fails and :attr:`RelayLease.held` turns
False; the relay also confirms the lease before each batch when the last heartbeat is older
than half the lease (:meth:`RelayLease.confirm`), so a resumed relay finds out before it
publishes. What is left is a holder frozen between that check and its send: it can publish
one batch after the new leader started. Those rows are duplicates of rows the new leader also
sends, and consumers drop duplicates by event id, as after any relay crash (docs/event-store.md).

The connection is closed, never returned to the pool, on release: it carries the timeout.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

from sqlalchemy import Connection, Engine, text

log = logging.getLogger(__name__)

#: Default lease: the time a frozen relay keeps the others waiting.
DEFAULT_LEASE_SECONDS = 10.0


class RelayLease:
    """A session advisory lock ``key`` on ``engine`` that ends ``lease_seconds`` after the
    holder went silent. Thread-safe: the heartbeat thread and the relay share it."""

    def __init__(self, engine: Engine, key: int, *, lease_seconds: float) -> None:
        if lease_seconds <= 0:
            raise ValueError(f"lease_seconds must be > 0, got {lease_seconds}")
        self.engine = engine
        self.key = key
        self.lease_seconds = lease_seconds
        self.lost = 0  # leases this holder lost while it believed it held them
        self._conn: Connection | None = None
        self._renewed_at = 0.0
        self._guard = threading.Lock()  # one user of the connection at a time
        self._stop_heartbeat = threading.Event()
        self._heartbeat: threading.Thread | None = None

    @property
    def held(self) -> bool:
        """True while this holder has the lock, as far as its last heartbeat knows."""
        return self._conn is not None

    def try_acquire(self) -> bool:
        """Take the lock without waiting; on success start the heartbeat. Blocking."""
        with self._guard:
            if self._conn is not None:
                return True
            conn = self.engine.connect()
            try:
                timeout_ms = max(1, int(self.lease_seconds * 1000))
                conn.execute(text(f"SET idle_session_timeout = {timeout_ms}"))
                got = conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": self.key})
                taken = bool(got.scalar())
                conn.commit()  # idle outside a transaction: that is what the timeout counts
            except Exception:
                _discard(conn)
                raise
            if not taken:
                _discard(conn)
                return False
            self._conn, self._renewed_at = conn, time.monotonic()
        self._stop_heartbeat.clear()
        self._heartbeat = threading.Thread(
            target=self._beat, name=f"relay-lease-{self.key}", daemon=True
        )
        self._heartbeat.start()
        return True

    @property
    def fresh(self) -> bool:
        """Held, with a heartbeat within half the lease: no need to ask the server."""
        return (
            self._conn is not None and time.monotonic() - self._renewed_at <= self.lease_seconds / 2
        )

    def confirm(self) -> bool:
        """:attr:`held`, checked with the server first when the last heartbeat is older than
        half the lease (the process may have been frozen since). Blocking."""
        if self._conn is None:
            return False
        if not self.fresh:
            self._renew()
        return self._conn is not None

    def release(self) -> None:
        """Stop the heartbeat and end the session (which releases the lock). Blocking."""
        self._stop_heartbeat.set()
        beat = self._heartbeat
        if beat is not None and beat is not threading.current_thread():
            beat.join(timeout=self.lease_seconds)
        self._heartbeat = None
        with self._guard:
            conn, self._conn = self._conn, None
            if conn is not None:
                # Unlock first: the server drops a closed session's locks only once its
                # backend has exited, a moment after the close, and a successor asking at
                # once (a final drain right after the relay stopped) would be refused.
                with contextlib.suppress(Exception):
                    conn.execute(text("SELECT pg_advisory_unlock_all()"))
                    conn.commit()
                _discard(conn)  # and end the session: it carries the timeout

    def _beat(self) -> None:
        interval = self.lease_seconds / 4
        while not self._stop_heartbeat.wait(interval):
            if not self._renew():
                return

    def _renew(self) -> bool:
        with self._guard:
            conn = self._conn
            if conn is None:
                return False
            try:
                # The lock is still ours if the session still is: a session the server ended
                # for idleness fails here, and its locks went with it.
                conn.execute(text("SELECT 1"))
                conn.commit()
            except Exception:
                self._conn = None
                self.lost += 1
                log.warning("relay.lease_lost", extra={"lock_key": self.key})
                _discard(conn)
                return False
            self._renewed_at = time.monotonic()
            return True


def _discard(conn: Connection) -> None:
    """Close ``conn``'s session for good (never back to the pool: it carries the timeout)."""
    with contextlib.suppress(Exception):
        conn.invalidate()
    with contextlib.suppress(Exception):
        conn.close()
