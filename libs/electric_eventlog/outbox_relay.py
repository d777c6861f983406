"""Outbox relay: publishes committed outbox rows to the bus, then marks them sent.

Crash safety: a row is marked sent only after the bus acknowledged it (acks=all). A crash
between the two re-publishes the batch on restart: duplicates on the wire, never a gap;
consumers deduplicate by event id. Batches go out in global-position order. On Kafka each
message is acknowledged on its own: a row is marked sent when it and every earlier row of
its stream in the batch were acknowledged, so only the rest is re-sent (each stream stays in
version order per key), and a publish has a deadline (``publish_timeout``). A failed publish
also replaces the producer (see :meth:`~electric_eventlog.kafka.KafkaBus.publish_each`,
docs/chaos.md: the relay stuck after a broker restart).

Bounded outbox: rows sent longer than ``sent_retention`` ago are deleted (every
``purge_interval`` seconds, by the active relay); unsent rows never are. The events stay.

Keeping up inside a busy service (issue 16, docs/event-store.md "Keeping up inside a busy
service"): the relay's database work (fetch, mark, purge) runs on a thread of its own, not
in the event loop's shared default executor, where it queued behind the service's blocking
calls for seconds (``python -m bench relay``); and a commit in the same process wakes it at
once (:meth:`OutboxRelay.notify`, registered with :meth:`EventStore.on_commit
<electric_eventlog.store.EventStore.on_commit>`) instead of at the next poll. The poll
stays, for rows other processes commit.

The process entry point is :mod:`electric_eventlog.relay`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Protocol, runtime_checkable

import tenacity
from electric.eventlog.v1.envelope_pb2 import Envelope
from sqlalchemy import Engine, text

from .bus import EventBus, OutgoingMessage, envelope_message
from .engine import read_only, reading
from .outbox import fetch_unsent, mark_sent, purge_sent
from .own_thread import OwnThread
from .relay_lease import DEFAULT_LEASE_SECONDS, RelayLease
from .store import utc_now

log = logging.getLogger(__name__)


#: Default time sent outbox rows are kept (the topics keep the events for good).
DEFAULT_SENT_RETENTION = timedelta(hours=24)


class _Stopped(Exception):
    """The relay was stopped while waiting to retry a failed batch."""


class PartlyPublishedError(Exception):
    """Some rows of a batch were not acknowledged (they stay unsent and are retried)."""


@runtime_checkable
class AckingBus(Protocol):
    """A bus that reports each message's acknowledgement (``KafkaBus``)."""

    async def publish_each(
        self, messages: Sequence[OutgoingMessage], *, timeout: float | None = None
    ) -> list[BaseException | None]:
        """One result per message: None = acknowledged, else the error."""
        ...


def deliverable(
    batch: Sequence[tuple[str, Envelope]], errors: Sequence[BaseException | None]
) -> list[tuple[str, int]]:
    """The ``(topic, position)`` rows of ``batch`` that may be marked sent: acknowledged, and
    no earlier row of the same stream (topic, key) in the batch failed -- so a stream's
    first occurrences on the wire stay in version order."""
    blocked: set[tuple[str, str]] = set()
    sent: list[tuple[str, int]] = []
    for (topic, env), error in zip(batch, errors, strict=True):
        key = (topic, env.stream_id)
        if error is not None or key in blocked:
            blocked.add(key)
        else:
            sent.append((topic, env.global_position))
    return sent


def _lock_key(topic: str | None) -> int:
    digest = hashlib.sha256(f"electric_eventlog.relay/{topic or '*'}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class OutboxRelay:
    """Moves outbox rows of one store onto an :class:`EventBus` (Kafka or in-process)."""

    def __init__(
        self,
        engine: Engine,
        bus: EventBus,
        *,
        topic: str | None = None,
        batch_size: int = 500,
        poll_interval: float = 0.02,
        idle_poll_max: float = 0.25,
        clock: Callable[[], datetime] = utc_now,
        publish_timeout: float = 30.0,
        sent_retention: timedelta | None = DEFAULT_SENT_RETENTION,
        purge_interval: float = 300.0,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ) -> None:
        """``topic`` restricts the relay to that topic's rows (default: every topic).

        ``lease_seconds``: on PostgreSQL, how long a frozen relay keeps the leadership
        (:mod:`~electric_eventlog.relay_lease`).

        ``sent_retention`` None keeps sent rows (the embedded runner re-seeds its in-memory
        bus from them at start-up)."""
        self.engine = engine
        self.bus = bus
        self.topic = topic
        self.batch_size = batch_size
        self.poll_interval = poll_interval
        self.idle_poll_max = max(idle_poll_max, poll_interval)
        self.publish_timeout = publish_timeout
        self.sent_retention = sent_retention
        self.purge_interval = purge_interval
        self.lease_seconds = lease_seconds
        self._clock = clock
        self._next_purge = 0.0
        self.published = 0
        self.purged = 0
        # One thread of the relay's own: one database call at a time, never queued behind
        # the service's blocking calls in the loop's default executor (module doc).
        self._in_thread = OwnThread("outbox-relay").run
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake = asyncio.Event()
        self._wake_pending = False

    def notify(self) -> None:
        """Rows were just committed in this process: publish now rather than at the next
        poll. Thread-safe, cheap, and a no-op while :meth:`run` is not running."""
        loop = self._loop
        if loop is None or self._wake_pending:
            return
        self._wake_pending = True  # one scheduled wake-up at a time, however many commits
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._set_wake)

    def _set_wake(self) -> None:
        self._wake_pending = False
        self._wake.set()

    async def _idle(self, stop: asyncio.Event, seconds: float) -> bool:
        """Wait for a local commit (:meth:`notify`), ``stop``, or ``seconds``; True when a
        local commit woke us."""
        waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._wake.wait())]
        try:
            await asyncio.wait(waits, timeout=seconds, return_when="FIRST_COMPLETED")
        finally:
            for w in waits:
                w.cancel()
        return self._wake.is_set()

    def _fetch(self) -> list[tuple[str, Envelope]]:
        # One statement: autocommit on PostgreSQL (no BEGIN/ROLLBACK round trips per poll).
        with reading(self.engine) as conn:
            batch = fetch_unsent(conn, limit=self.batch_size, topic=self.topic)
        if batch and self.engine.dialect.name == "postgresql":
            self._durable_barrier()
        return batch

    def _durable_barrier(self) -> None:
        """Return once everything the fetch saw is on a synchronous standby.

        A commit normally becomes visible only after the standby acknowledged it, but not
        always: a backend whose wait for the standby ends early (it is terminated, e.g. by
        a fast shutdown of the primary or ``fencing.break_stale_writers``, or cancelled)
        leaves its commit visible locally, unreplicated ("committed locally, but might not
        have been replicated"). Published, such an event is on the topic, and a failover
        then loses it from the store: the next append takes its stream version with another
        event (the chaos run saw two events at one version). A transaction with a
        transaction id waits at its commit for the standby to hold the WAL up to its own
        commit record, which comes after every commit the fetch could see; WAL is streamed
        in order. Without synchronous replication configured it returns at once."""
        with self.engine.begin() as conn:
            conn.execute(text("SELECT txid_current()"))

    def _mark(self, sent: list[tuple[str, int]]) -> None:
        with self.engine.begin() as conn:
            mark_sent(conn, sent, at=self._clock())

    async def publish_once(self) -> int:
        """Publish one batch of unsent rows; returns how many were published.

        Raises :class:`PartlyPublishedError` (after marking what was acknowledged) when some
        rows were not acknowledged, or the bus error when none was.
        """
        self._wake.clear()  # a commit from now on is seen by this fetch or wakes the next
        batch = await self._in_thread(self._fetch)
        if not batch:
            return 0
        errors = await self._send([envelope_message(topic, env) for topic, env in batch])
        sent = deliverable(batch, errors)
        if sent:
            await self._in_thread(self._mark, sent)
            self.published += len(sent)
        if len(sent) < len(batch):
            first = next(e for e in errors if e is not None)
            if not sent:
                raise first
            raise PartlyPublishedError(
                f"{len(batch) - len(sent)} of {len(batch)} rows not acknowledged"
            ) from first
        return len(sent)

    async def _send(self, messages: list[OutgoingMessage]) -> list[BaseException | None]:
        if isinstance(self.bus, AckingBus):
            return await self.bus.publish_each(messages, timeout=self.publish_timeout)
        try:
            await asyncio.wait_for(self.bus.publish(messages), timeout=self.publish_timeout)
        except Exception as exc:
            return [exc] * len(messages)
        return [None] * len(messages)

    def purge(self, now: datetime | None = None) -> int:
        """Delete rows sent more than ``sent_retention`` ago (never unsent ones); the count."""
        if self.sent_retention is None:
            return 0
        before = (now or self._clock()) - self.sent_retention
        with self.engine.begin() as conn:
            deleted = purge_sent(conn, before=before, topic=self.topic)
        self.purged += deleted
        if deleted:
            log.info("relay.purged", extra={"topic": self.topic, "rows": deleted})
        return deleted

    async def _maybe_purge(self) -> None:
        if self.sent_retention is None or time.monotonic() < self._next_purge:
            return
        self._next_purge = time.monotonic() + self.purge_interval
        try:
            await self._in_thread(self.purge)
        except Exception:  # the database is away: the next round tries again
            log.exception("relay.purge_failed", extra={"topic": self.topic})

    async def republish_all(self) -> int:
        """Publish every outbox row again, sent or not, in position order; returns the count.

        For a bus that does not survive restarts (the embedded :class:`InProcessBus`): call
        it once at start-up, before the consumers, so an event that was marked sent but not
        yet consumed when the process stopped is delivered again (consumers skip the rest).
        """
        total, after = 0, 0
        while True:
            batch = await self._in_thread(self._fetch_all, after)
            if not batch:
                return total
            await self.bus.publish([envelope_message(topic, env) for topic, env in batch])
            await self._in_thread(self._mark, [(t, env.global_position) for t, env in batch])
            total += len(batch)
            after = batch[-1][1].global_position

    def _fetch_all(self, after: int) -> list[tuple[str, Envelope]]:
        with read_only(self.engine.connect()) as conn, conn.begin():
            return fetch_unsent(
                conn, limit=self.batch_size, topic=self.topic, after=after, include_sent=True
            )

    async def drain(self) -> int:
        """Publish until the outbox is empty; returns how many were published."""
        total = 0
        while count := await self.publish_once():
            total += count
        return total

    async def final_drain(self) -> int:
        """:meth:`drain` at shutdown, only if no other instance is the active relay.

        On PostgreSQL the drain takes the relay's advisory lock without waiting; when
        another instance of the service holds it, that relay publishes the remaining rows
        and this one publishes nothing (two relays publishing the same rows at once would
        send duplicates, in an order neither chose). SQLite: one process, plain drain."""
        if self.engine.dialect.name != "postgresql":
            return await self.drain()
        lease = self._lease()
        if not await asyncio.to_thread(lease.try_acquire):
            log.info("relay.final_drain_skipped", extra={"topic": self.topic})
            return 0
        try:
            return await self.drain()
        finally:
            await asyncio.to_thread(lease.release)

    def _lease(self) -> RelayLease:
        return RelayLease(self.engine, _lock_key(self.topic), lease_seconds=self.lease_seconds)

    async def run(self, stop: asyncio.Event) -> None:
        """Publish continuously until ``stop`` is set.

        On PostgreSQL a lease (:mod:`~electric_eventlog.relay_lease`) makes this the only
        active relay for its topic: a second one waits; the lock dies with a killed process's
        connection, and ``lease_seconds`` after a frozen one went silent. A relay that finds
        its lease lost (it was frozen) stops publishing and waits its turn again.
        """
        lease = await asyncio.to_thread(self._acquire_leadership, stop)
        self._wake = asyncio.Event()  # of this loop (run may be restarted, even in another)
        self._wake_pending = False
        self._loop = asyncio.get_running_loop()
        # The fallback poll backs off while nothing is found (poll_interval doubling up to
        # idle_poll_max): an idle service polled its outbox 50 times a second, the largest
        # item in the wallet's and payout's profiles under load (issue 16). Local commits
        # wake the relay at once (notify); only rows committed by another process of the
        # same store (several table instances) wait for the poll, at most idle_poll_max.
        wait = self.poll_interval
        try:
            while not stop.is_set():
                if lease is not None and not (lease.fresh or await self._in_thread(lease.confirm)):
                    lease = await asyncio.to_thread(self._acquire_leadership, stop)
                    continue
                try:
                    published = await self._publish_retrying(stop)
                except _Stopped:
                    break
                await self._maybe_purge()
                if published or await self._idle(stop, wait):
                    wait = self.poll_interval  # busy, or woken by a local commit
                else:
                    wait = min(wait * 2, self.idle_poll_max)
        finally:
            self._loop = None
            if lease is not None:
                await asyncio.to_thread(lease.release)

    async def _publish_retrying(self, stop: asyncio.Event) -> int:
        """:meth:`publish_once`, retried until it passes or ``stop`` is set.

        A failure means the broker or the database is away: nothing was marked, so retrying
        is safe (at worst the batch is sent twice). Backs off (tenacity, the platform's one
        retry library) from 2x the poll interval, doubling, at most 5 s, instead of dying.
        """

        async def sleep(seconds: float) -> None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=seconds)
            if stop.is_set():
                raise _Stopped

        def failed(state: tenacity.RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome is not None else None
            log.error(
                "relay.batch_failed",
                extra={"topic": self.topic, "failures_in_a_row": state.attempt_number},
                exc_info=error,
            )

        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception(
                lambda e: isinstance(e, Exception) and not isinstance(e, _Stopped)
            ),
            wait=tenacity.wait_exponential(
                multiplier=2 * self.poll_interval, max=min(self.poll_interval * 2**8, 5.0)
            ),
            sleep=sleep,
            before_sleep=failed,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self.publish_once()
        raise AssertionError("unreachable: tenacity returns or raises")  # pragma: no cover

    def _acquire_leadership(self, stop: asyncio.Event) -> RelayLease | None:
        if self.engine.dialect.name != "postgresql":
            return None  # SQLite: one embedded process owns the file.
        lease = self._lease()
        while not stop.is_set():
            if lease.try_acquire():
                return lease
            log.info("relay.lock_waiting", extra={"topic": self.topic})
            time.sleep(0.5)
        return lease
