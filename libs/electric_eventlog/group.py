"""Group commit: concurrent units of work of one process share one transaction and one commit.

Why: every append holds the store's position lock (the ``eventlog_head`` row) from
allocation to commit, so appends of one store are serial however many threads call them,
and each pays its own commit (fsync). Gathering the units that queue up meanwhile into ONE
transaction pays the lock hand-over and the commit once per batch (docs/event-store.md,
"Group commit").

How (leader/follower, adaptive): a caller queues its unit. If no batch is running it
becomes the leader at once and runs whatever is queued (alone when idle: no added
latency). Units queued while a batch runs wait; when the batch has committed, the leader
hands leadership to the first waiting unit, whose batch is everything queued by then — the
busier the store, the bigger the batches.

Isolation of units: in a batch of more than one, each unit runs inside its own SAVEPOINT.
A unit that raises (an expected-version conflict, a unique violation, a domain error …) is
rolled back to its savepoint — its rows, events, outbox rows and position allocation
disappear, so positions stay gap-free — and its caller gets its exception; the other units
of the batch still commit. A failure of the batch itself (the commit, a lost connection)
is given to every unit that had run; units that had not run yet are queued again.

Global order: the batch's first append takes the position lock and keeps it until the one
commit, so the log stays commit-ordered and gap-free exactly as with one append per
transaction.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from sqlalchemy import Connection, Engine

R = TypeVar("R")

#: Default upper bound of units per batch (a batch holds the position lock until it commits).
#: Below PostgreSQL's 64 cached subtransactions per backend: a unit's savepoint is one, and
#: overflowing that cache slows every other session's snapshots.
DEFAULT_MAX_BATCH = 32


#: Runs the ``bulk`` parts of several units in one go (see :meth:`GroupCommit.run`): per
#: part its result or its exception, or None to run the units' ``work`` one by one. The
#: third argument is True when nothing else follows in the transaction: the executor may
#: then commit it itself (e.g. in the same round trip as its last write).
BulkExecutor = Callable[[Connection, list[Any], bool], "list[Any] | None"]


@dataclass(eq=False)
class _Unit(Generic[R]):
    work: Callable[[Connection], R]
    bulk: Any = None
    locks_rows: bool = True
    #: The submitter's context variables (request and causation ids …): the work runs in
    #: the leader's thread but sees its own caller's context.
    context: contextvars.Context = field(default_factory=contextvars.copy_context)
    wake: threading.Event = field(default_factory=threading.Event)
    done: bool = False
    started: bool = False
    result: R | None = None
    error: BaseException | None = None

    def outcome(self) -> R:
        if self.error is not None:
            raise self.error
        return cast(R, self.result)


@dataclass
class GroupStats:
    """Counters of a :class:`GroupCommit` (for benchmarks, tests and metrics)."""

    batches: int = 0
    units: int = 0
    failed_units: int = 0
    largest_batch: int = 0
    #: Units done by a registered bulk executor (not one by one).
    bulk_units: int = 0

    @property
    def mean_batch(self) -> float:
        return self.units / self.batches if self.batches else 0.0


class GroupCommit:
    """Runs units of work (``work(conn) -> result``) in shared transactions on ``engine``.

    Thread-safe; one instance per engine and process (:class:`~.store.EventStore` owns
    one: ``store.transact(work)``). A unit must not start transactions of its own on the
    same database (it would wait for the position lock its own batch holds) and must not
    call :meth:`run` again (refused with ``RuntimeError``).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
        lock_first: Callable[[Connection], None] | None = None,
    ) -> None:
        """``lock_first(conn)`` takes the store's position lock; a batch with a unit that
        may lock rows calls it before running any unit, so every row lock of a batch is
        taken under the position lock: two batches (two processes) can never each hold
        a row lock the other waits for (no deadlock between grouped writers)."""
        if max_batch < 1:
            raise ValueError("max_batch must be >= 1")
        self.engine = engine
        self.max_batch = max_batch
        self.lock_first = lock_first
        self._executors: dict[type, tuple[BulkExecutor, int]] = {}
        self.stats = GroupStats()
        self._mutex = threading.Lock()
        self._queue: deque[_Unit[object]] = deque()
        self._busy = False
        self._local = threading.local()
        self._conn: Connection | None = None
        self._finalizer: weakref.finalize[[Connection], GroupCommit] | None = None
        self._committing = False

    def run(
        self, work: Callable[[Connection], R], *, bulk: Any = None, locks_rows: bool = True
    ) -> R:
        """Run ``work`` in a transaction shared with the other units queued meanwhile;
        return its result once the transaction committed, or raise what it raised (then
        nothing it wrote was committed).

        ``bulk``: the same work as data, for the executor :meth:`register` ed for its type:
        when enough units of a batch have one, the executor does them all at once (e.g.
        one insert for many appends) and ``work`` runs only if it declines. ``locks_rows``:
        False when ``work`` takes no lock but the position lock (a plain append)."""
        if getattr(self._local, "leading", False):
            raise RuntimeError("GroupCommit.run called from inside a unit of work")
        unit: _Unit[R] = _Unit(work, bulk, locks_rows)
        with self._mutex:
            self._queue.append(cast("_Unit[object]", unit))
            lead = not self._busy
            self._busy = True
        while True:
            if not lead:
                unit.wake.wait()
                unit.wake.clear()
                if unit.done:
                    return unit.outcome()
            # Leader: our unit is at the head of the queue, so it is in this batch. If
            # the batch failed before reaching it, it was queued again: wait once more.
            self._lead()
            if unit.done:
                return unit.outcome()
            lead = False

    def register(self, kind: type, executor: BulkExecutor, *, min_units: int = 2) -> None:
        """Run the units whose ``bulk`` is a ``kind`` with ``executor`` when a batch has at
        least ``min_units`` of them (fewer: their ``work`` runs as usual)."""
        self._executors[kind] = (executor, min_units)

    def has_executor(self, kind: type) -> bool:
        return kind in self._executors

    def queued(self) -> int:
        """How many units wait for a batch (not counting the running batch)."""
        with self._mutex:
            return len(self._queue)

    # ------------------------------------------------------------------ internals

    def _lead(self) -> None:
        """Run one batch (it includes the leader's own unit: the leader is always at the
        head of the queue), then hand leadership on or go idle."""
        with self._mutex:
            count = min(self.max_batch, len(self._queue))
            batch = [self._queue.popleft() for _ in range(count)]
        try:
            self._execute(batch)
        except BaseException as exc:
            # Whatever still escapes the batch fails its units that are not done. Queued
            # again instead, the leader's own unit would head the queue with its thread
            # gone (it leaves with the exception): nobody would lead again and every later
            # unit would wait forever (found by the chaos run, issue 18).
            for unit in batch:
                if not unit.done:
                    unit.error, unit.result, unit.done = exc, None, True
            raise
        finally:
            requeue = [u for u in batch if not u.done]
            with self._mutex:
                self._queue.extendleft(reversed(requeue))
                if self._queue:
                    self._queue[0].wake.set()  # the successor leads the next batch
                else:
                    self._busy = False
            for unit in batch:
                if unit.done:
                    unit.wake.set()

    def _execute(self, batch: list[_Unit[object]]) -> None:
        self._local.leading = True
        try:
            for attempt in (1, 2):
                self._committing = False
                try:
                    conn = self._connection()
                except Exception as exc:  # no connection (e.g. the server restarts): none ran
                    self._fail(batch, exc)
                    return
                try:
                    self._run_batch(conn, batch)
                except BaseException as exc:  # the batch failed (commit, connection, interrupt)
                    died = self._release(conn, failed=True)
                    if died and attempt == 1 and not self._committing:
                        # The pinned connection had died while idle (what the pool's
                        # pre-ping catches): nothing was committed, run the batch again.
                        for unit in batch:
                            unit.started, unit.error, unit.result = False, None, None
                        continue
                    self._fail(batch, exc)
                    return
                self._release(conn, failed=False)
                for unit in batch:
                    unit.done = True
                return
        finally:
            self._local.leading = False
            self.stats.batches += 1
            self.stats.units += len(batch)
            self.stats.failed_units += sum(1 for u in batch if u.error is not None)
            self.stats.largest_batch = max(self.stats.largest_batch, len(batch))

    def _run_batch(self, conn: Connection, batch: list[_Unit[object]]) -> None:
        isolate = len(batch) > 1
        kinds: dict[type, list[_Unit[object]]] = {}
        for unit in batch:
            if unit.bulk is not None and type(unit.bulk) in self._executors:
                kinds.setdefault(type(unit.bulk), []).append(unit)
        with conn.begin() as tx:
            rest = batch
            for kind, units in kinds.items():
                executor, min_units = self._executors[kind]
                if len(units) < min_units:
                    continue
                for unit in units:
                    unit.started = True
                alone = len(units) == len(batch)
                self._committing = alone
                outcomes = executor(conn, [u.bulk for u in units], alone)
                self._committing = False
                if outcomes is None:
                    continue
                self.stats.bulk_units += len(units)
                for unit, outcome in zip(units, outcomes, strict=True):
                    if isinstance(outcome, BaseException):
                        unit.error = outcome
                    else:
                        unit.result = outcome
                rest = [u for u in rest if u not in units]
            if self.lock_first is not None and any(u.locks_rows for u in rest):
                self.lock_first(conn)
            for unit in rest:
                unit.started = True
                if not isolate:
                    unit.result = unit.context.run(unit.work, conn)
                    continue
                self._savepoint(conn, "SAVEPOINT electric_unit")
                try:
                    unit.result = unit.context.run(unit.work, conn)
                except Exception as exc:  # the unit fails alone
                    unit.error = exc
                    self._savepoint(conn, "ROLLBACK TO SAVEPOINT electric_unit")
                # Not released: a release costs a round trip and changes nothing before the
                # commit (a later unit's rollback goes to its own, newer savepoint).
            self._committing = True
            tx.commit()

    @staticmethod
    def _savepoint(conn: Connection, statement: str) -> None:
        """Run a savepoint statement on the driver connection: SQLAlchemy's own nested
        transaction objects are not needed (the batch owns the transaction)."""
        raw = conn.connection.dbapi_connection
        if raw is None:  # pragma: no cover - a begun connection always has one
            raise RuntimeError("connection closed")
        cursor = raw.cursor()
        try:
            cursor.execute(statement)
        finally:
            cursor.close()

    def _connection(self) -> Connection:
        """The connection of the next batch. PostgreSQL: one kept between batches (its
        liveness is checked by the retry in :meth:`_execute` instead of a pre-ping round
        trip per batch); elsewhere one from the pool per batch."""
        if self._conn is not None:
            return self._conn
        conn = self.engine.connect()
        if self.engine.dialect.name == "postgresql":
            self._conn = conn
            # Returned to the pool when this object goes away unclosed (no GC warning).
            self._finalizer = weakref.finalize(self, _close_quietly, conn)
        return conn

    def _release(self, conn: Connection, *, failed: bool) -> bool:
        """Give ``conn`` back after a batch; True when it had died (then it is dropped)."""
        died = conn.invalidated or conn.closed
        if conn is not self._conn or died:
            if conn is self._conn:
                self._drop_pinned()
            _close_quietly(conn)
        return died and failed

    def close(self) -> None:
        """Return the kept connection to the pool (the store is no longer used)."""
        conn = self._conn
        self._drop_pinned()
        if conn is not None:
            _close_quietly(conn)

    def _drop_pinned(self) -> None:
        self._conn = None
        if self._finalizer is not None:
            self._finalizer.detach()
            self._finalizer = None

    @staticmethod
    def _fail(batch: list[_Unit[object]], exc: BaseException) -> None:
        any_started = any(u.started for u in batch)
        for unit in batch:
            if unit.error is None and (unit.started or not any_started):
                unit.error = exc
                unit.result = None
                unit.done = True
            elif unit.error is not None:
                unit.done = True


def _close_quietly(conn: Connection) -> None:
    with contextlib.suppress(Exception):
        conn.close()
