"""The event store: append with optimistic concurrency, read a stream, read the global log.

Every write takes the caller's :class:`sqlalchemy.Connection` (inside ``engine.begin()``) so a
service commits its own rows, the events and their outbox rows in ONE transaction.

Commit-ordered global log (why it is safe to follow ``global_position``): positions are
allocated by ``UPDATE eventlog_head SET last_position = last_position + n``. The row lock
that UPDATE takes is held until the writer commits or rolls back, so the next writer can
allocate only after the previous one is visible. Hence position N+1 can never be visible
before N, and positions have no gaps. Details and alternatives in docs/event-store.md.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn, TypeVar, cast

import psycopg
from electric.eventlog.v1.envelope_pb2 import Envelope
from google.protobuf import any_pb2
from google.protobuf.message import Message
from sqlalchemy import Connection, Engine, Integer, Select, bindparam, func, insert, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from . import causality, commit_hook, schema
from .codec import envelope_from_row, row_from_envelope, to_utc
from .errors import ConcurrencyError, DuplicateEventError, SchemaError, StreamNotFoundError
from .group import GroupCommit
from .hashing import HASH_TAG, canonical_tail, compute_hash, field
from .model import ANY, STREAM_EXISTS, Expected, NewEvent, Snapshot
from .pgbatch import PreparedAppend, assign, bulk_append_one_trip, insert_params
from .pgsql import _MODE_ANY, _MODE_EXACT, _MODE_EXISTS, _PG_ALLOCATE, _PG_INSERT, _PG_TIP
from .registry import PayloadRegistry, default_registry, pack, type_name_of
from .topics import topic_for

Clock = Callable[[], datetime]
R = TypeVar("R")

# Hot-path statements built once: building SQLAlchemy expressions per call costs more CPU
# than the database round trips they make.
_ALLOCATE = (
    update(schema.head)
    .where(schema.head.c.id == 1)
    .values(last_position=schema.head.c.last_position + bindparam("count"))
    .returning(schema.head.c.last_position)
)
_TIP = (
    select(schema.events.c.stream_version, schema.events.c.hash)
    .where(schema.events.c.stream_id == bindparam("stream_id"))
    .order_by(schema.events.c.stream_version.desc())
    .limit(1)
)
_INSERT_EVENTS = insert(schema.events)
_INSERT_OUTBOX = insert(schema.outbox)

# PostgreSQL fast path of a single append: the SQL lives in .pgsql (one round trip).


def utc_now() -> datetime:
    """The default clock of the store (used only when the caller gives no ``occurred_at``)."""
    return datetime.now(UTC)


class EventStore:
    """Append-only event store of one producer service, on PostgreSQL or SQLite.

    Thread-safe: it holds only the engine and immutable configuration; every method works
    on the connection it is given (or one it checks out for itself).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        producer: str,
        topic: str | None = None,
        registry: PayloadRegistry | None = None,
        clock: Clock = utc_now,
    ) -> None:
        """``producer`` is the service name (stored in every envelope); events go to the
        outbox for ``topic`` (default ``electric.<producer>.events``); ``topic=""`` writes no
        outbox rows."""
        self.engine = engine
        self.producer = producer
        self.topic = topic_for(producer) if topic is None else topic
        self.registry = registry or default_registry()
        self._clock = clock
        #: Group commit of :meth:`transact` / :meth:`append_in_new_tx` (one per store).
        pg = self._pg_engine()
        self.group = GroupCommit(engine, lock_first=self._lock_head if pg else None)
        if pg:
            self.group.register(PreparedAppend, self._bulk)
        self._commit_listeners: list[Callable[[], None]] = []
        commit_hook.install(engine)

    def on_commit(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` (in the committing thread) after each :meth:`transact` /
        :meth:`append_in_new_tx` commit, and at the commit of a caller's own transaction
        that appended (:mod:`.commit_hook`): the service's outbox relay wakes on it instead
        of waiting for its next poll (:meth:`OutboxRelay.notify
        <electric_eventlog.outbox_relay.OutboxRelay.notify>`)."""
        self._commit_listeners.append(listener)

    def _committed(self) -> None:
        for listener in self._commit_listeners:
            listener()

    # ------------------------------------------------------------------ writes

    def append(
        self,
        conn: Connection,
        stream_id: str,
        expected_version: Expected,
        events: Sequence[Message | NewEvent],
        *,
        correlation_id: str = "",
        causation_id: str = "",
        occurred_at: datetime | None = None,
    ) -> list[Envelope]:
        """Append ``events`` to ``stream_id`` inside the caller's transaction.

        ``expected_version`` is the stream's current version (0 = no events yet) or one of
        ``ANY`` / ``NO_STREAM`` / ``STREAM_EXISTS``. Raises :class:`ConcurrencyError` on a
        mismatch or a lost race (the caller's transaction must then roll back). Also writes
        one outbox row per event. Returns the stored envelopes (positions and hashes set).

        Positions are allocated under a lock held until ``conn`` commits: append as late as
        possible in the transaction, and keep the transaction short after it.

        Empty ids default to the bound causal context (:mod:`electric_eventlog.causality`).
        """
        correlation_id = correlation_id or causality.correlation_id()
        causation_id = causation_id or causality.causation_id()
        if not events:
            self._check_expected(stream_id, expected_version, self.current_version(conn, stream_id))
            return []
        if self._commit_listeners:
            commit_hook.on_this_commit(conn, self._committed)
        if self._pg_fast_path(conn):
            return self._pg_append(
                conn, stream_id, expected_version, events, correlation_id, causation_id, occurred_at
            )
        end = self._allocate_positions(conn, len(events))
        # Read the stream tip only now, under the allocation lock, so it cannot move under us.
        tip = conn.execute(_TIP, {"stream_id": stream_id}).first()
        version, prev_hash = (tip[0], tip[1]) if tip else (0, "")
        self._check_expected(stream_id, expected_version, version)
        envelopes = self._envelopes(stream_id, events, correlation_id, causation_id, occurred_at)
        for offset, envelope in enumerate(envelopes):
            envelope.stream_version = version + offset + 1
            envelope.global_position = end - len(events) + offset + 1
            envelope.prev_hash = prev_hash
            envelope.hash = compute_hash(envelope)
            prev_hash = envelope.hash
        self._insert(conn, stream_id, envelopes)
        return envelopes

    def _envelopes(
        self,
        stream_id: str,
        events: Sequence[Message | NewEvent],
        correlation_id: str,
        causation_id: str,
        occurred_at: datetime | None,
    ) -> list[Envelope]:
        """The envelopes of ``events`` without versions, positions and hashes."""
        default_at = to_utc(occurred_at or self._clock())
        envelopes: list[Envelope] = []
        for item in events:
            new = item if isinstance(item, NewEvent) else NewEvent(payload=item)
            payload = pack(new.payload)
            envelope = Envelope(
                event_id=new.event_id or str(uuid.uuid4()),
                stream_id=stream_id,
                event_type=type_name_of(payload),
                correlation_id=correlation_id,
                causation_id=causation_id if new.causation_id is None else new.causation_id,
                payload=payload,
                producer=self.producer,
            )
            at = to_utc(new.occurred_at) if new.occurred_at else default_at
            envelope.occurred_at.FromDatetime(at)
            envelopes.append(envelope)
        return envelopes

    def append_in_new_tx(
        self,
        stream_id: str,
        expected_version: Expected,
        events: Sequence[Message | NewEvent],
        *,
        correlation_id: str = "",
        causation_id: str = "",
        occurred_at: datetime | None = None,
    ) -> list[Envelope]:
        """:meth:`append` committed on return, through group commit (:meth:`transact`):
        concurrent calls share one transaction; a conflict fails only its own call. On
        PostgreSQL the events are encoded here, in the caller's thread, and a batch's plain
        appends are written by one insert (:mod:`.pgbatch`)."""
        bulk = None
        if self.group.has_executor(PreparedAppend) and events:
            bulk = self.prepare(
                stream_id,
                expected_version,
                events,
                correlation_id=correlation_id,
                causation_id=causation_id,
                occurred_at=occurred_at,
            )
        stored = self.group.run(
            lambda conn: self.append(
                conn,
                stream_id,
                expected_version,
                events,
                correlation_id=correlation_id,
                causation_id=causation_id,
                occurred_at=occurred_at,
            ),
            bulk=bulk,
            locks_rows=False,
        )
        self._committed()
        return stored

    def prepare(
        self,
        stream_id: str,
        expected_version: Expected,
        events: Sequence[Message | NewEvent],
        *,
        correlation_id: str = "",
        causation_id: str = "",
        occurred_at: datetime | None = None,
    ) -> PreparedAppend:
        """An append encoded ahead (in the caller's thread: causality ids resolved here),
        for a bulk executor of group commit (:mod:`.pgbatch`)."""
        correlation_id = correlation_id or causality.correlation_id()
        causation_id = causation_id or causality.causation_id()
        envelopes = self._envelopes(stream_id, events, correlation_id, causation_id, occurred_at)
        return PreparedAppend(stream_id, expected_version, envelopes)

    def bulk_params(
        self, items: list[PreparedAppend], position: int, tips: dict[str, tuple[int, str]]
    ) -> tuple[list[object], dict[str, Any]]:
        """For a caller holding the position lock (``position`` = the head read under it,
        ``tips`` = stream → (version, hash) read after it): pre-check and number
        ``items``; per item its envelopes or its error, and the parameters of
        ``pgbatch.INSERT`` (events, outbox rows, the head row)."""
        outcomes, cols, last = assign(items, position, tips, self._check_expected)
        params = insert_params(
            cols, last=last, recorded_at=self._clock(), producer=self.producer, topic=self.topic
        )
        return list(outcomes), params

    @staticmethod
    def _lock_head(conn: Connection) -> None:
        conn.exec_driver_sql("SELECT last_position FROM eventlog_head WHERE id = 1 FOR UPDATE")

    def _pg_engine(self) -> bool:
        dialect = self.engine.dialect
        return (
            dialect.driver == "psycopg"
            and dialect.name == "postgresql"
            and type(self)._allocate_positions is EventStore._allocate_positions
        )

    def _bulk(
        self, conn: Connection, items: list[PreparedAppend], commit: bool
    ) -> list[object] | None:
        return cast(
            "list[object] | None",
            bulk_append_one_trip(
                conn,
                items,
                producer=self.producer,
                topic=self.topic,
                recorded_at=self._clock(),
                check=self._check_expected,
                commit=commit,
            ),
        )

    def transact(self, work: Callable[[Connection], R], *, bulk: object = None) -> R:
        """Run ``work(conn)`` — the service's own row writes and its :meth:`append` calls —
        in a transaction shared with the other units queued meanwhile (group commit,
        :mod:`.group`), and return its result after the commit. If ``work`` raises, only
        its own writes are rolled back (a savepoint) and its caller gets the exception;
        the rest of the batch commits. ``work`` must not open transactions of its own.

        On PostgreSQL the batch takes the position lock BEFORE running the units, so row
        locks taken by ``work`` are always taken under it: grouped writers (even in other
        processes) never deadlock. A service should therefore write rows it locks only
        through ``transact`` (a plain ``engine.begin()`` writer that locks the same rows
        and then appends could deadlock with a batch; PostgreSQL would abort one)."""
        result = self.group.run(work, bulk=bulk)
        self._committed()
        return result

    def save_snapshot(
        self, conn: Connection, stream_id: str, stream_version: int, state: Message
    ) -> None:
        """Store ``state`` as the fold of ``stream_id`` after ``stream_version`` events.

        Saving the same version twice keeps the first (snapshots are caches, not facts).
        """
        exists = conn.execute(
            select(schema.snapshots.c.stream_version).where(
                schema.snapshots.c.stream_id == stream_id,
                schema.snapshots.c.stream_version == stream_version,
            )
        ).first()
        if exists:
            return
        packed = pack(state)
        conn.execute(
            insert(schema.snapshots).values(
                stream_id=stream_id,
                stream_version=stream_version,
                state_type_url=packed.type_url,
                state=packed.value,
                created_at=self._clock(),
            )
        )

    # ------------------------------------------------------------------ reads

    def current_version(self, conn: Connection, stream_id: str) -> int:
        """Version of the last event of ``stream_id`` (0 when the stream has no events)."""
        value = conn.execute(
            select(func.max(schema.events.c.stream_version)).where(
                schema.events.c.stream_id == stream_id
            )
        ).scalar()
        return int(value or 0)

    def last_position(self, conn: Connection) -> int:
        """The highest committed global position (0 for an empty store)."""
        value = conn.execute(
            select(schema.head.c.last_position).where(schema.head.c.id == 1)
        ).scalar()
        if value is None:
            raise SchemaError("eventlog_head row missing: run electric_eventlog.migrate()")
        return int(value)

    def read_stream(
        self,
        conn: Connection,
        stream_id: str,
        *,
        from_version: int = 1,
        to_version: int | None = None,
        limit: int | None = None,
    ) -> list[Envelope]:
        """Events of ``stream_id`` with ``from_version <= version <= to_version``, in order."""
        params: dict[str, Any] = {"stream_id": stream_id, "from_version": from_version}
        if to_version is not None:
            params["to_version"] = to_version
        if limit is not None:
            params["limit"] = limit
        query = _stream_query(to_version is not None, limit is not None)
        return [envelope_from_row(row) for row in conn.execute(query, params).mappings()]

    def read_all(self, conn: Connection, *, after: int = 0, limit: int = 1000) -> list[Envelope]:
        """Up to ``limit`` events with ``global_position > after``, in commit order.

        Safe to follow: call again with ``after`` = the last position seen; an event that
        commits later always gets a higher position than every event already visible.
        """
        query = (
            select(schema.events)
            .where(schema.events.c.global_position > after)
            .order_by(schema.events.c.global_position)
            .limit(limit)
        )
        return [envelope_from_row(row) for row in conn.execute(query).mappings()]

    def iter_all(
        self, conn: Connection, *, after: int = 0, batch_size: int = 1000
    ) -> Iterator[Envelope]:
        """Every event after ``after`` in commit order, fetched in batches."""
        while True:
            batch = self.read_all(conn, after=after, limit=batch_size)
            yield from batch
            if len(batch) < batch_size:
                return
            after = batch[-1].global_position

    def load_snapshot(
        self, conn: Connection, stream_id: str, *, max_version: int | None = None
    ) -> Snapshot | None:
        """The latest snapshot of ``stream_id`` (at or below ``max_version``), if any."""
        query = (
            select(schema.snapshots)
            .where(schema.snapshots.c.stream_id == stream_id)
            .order_by(schema.snapshots.c.stream_version.desc())
            .limit(1)
        )
        if max_version is not None:
            query = query.where(schema.snapshots.c.stream_version <= max_version)
        row = conn.execute(query).mappings().first()
        if row is None:
            return None
        packed = any_pb2.Any(type_url=row["state_type_url"], value=bytes(row["state"]))
        return Snapshot(
            stream_id=stream_id,
            stream_version=row["stream_version"],
            state_type=type_name_of(packed),
            state=self.registry.unpack(packed),
        )

    def decode(self, envelope: Envelope) -> Message:
        """The payload of ``envelope`` as its message class (an ``Any`` when unknown)."""
        return self.registry.unpack(envelope.payload)

    # ------------------------------------------------------------------ internals

    @staticmethod
    def _check_expected(stream_id: str, expected: Expected, actual: int) -> None:
        if expected is ANY:
            return
        if expected is STREAM_EXISTS:
            if actual == 0:
                raise StreamNotFoundError(f"stream {stream_id!r} does not exist")
            return
        wanted = expected if isinstance(expected, int) else 0  # NO_STREAM == version 0
        if wanted != actual:
            raise ConcurrencyError(stream_id, wanted, actual if actual else None)

    @staticmethod
    def _allocate_positions(conn: Connection, count: int) -> int:
        try:
            end = conn.execute(_ALLOCATE, {"count": count}).scalar()
        except OperationalError as exc:
            if _is_serialization_failure(exc):
                raise ConcurrencyError("<global>", "serialisable allocation", None) from exc
            raise
        if end is None:
            raise SchemaError("eventlog_head row missing: run electric_eventlog.migrate()")
        return int(end)

    def _pg_fast_path(self, conn: Connection) -> bool:
        """True for PostgreSQL through psycopg 3, unless a subclass replaced the allocator
        (then its ``_allocate_positions`` must be the one that runs)."""
        return (
            conn.dialect.driver == "psycopg"
            and conn.dialect.name == "postgresql"
            and type(self)._allocate_positions is EventStore._allocate_positions
        )

    def _pg_append(
        self,
        conn: Connection,
        stream_id: str,
        expected_version: Expected,
        events: Sequence[Message | NewEvent],
        correlation_id: str,
        causation_id: str,
        occurred_at: datetime | None,
    ) -> list[Envelope]:
        """:meth:`append` in one round trip (see ``_PG_INSERT``)."""
        envelopes = self._envelopes(stream_id, events, correlation_id, causation_id, occurred_at)
        if expected_version is ANY:
            mode, wanted = _MODE_ANY, 0
        elif expected_version is STREAM_EXISTS:
            mode, wanted = _MODE_EXISTS, 0
        else:
            wanted = expected_version if isinstance(expected_version, int) else 0
            mode = _MODE_EXACT
        params: dict[str, Any] = {
            "count": len(envelopes),
            "stream_id": stream_id,
            "recorded_at": self._clock(),
            "correlation_id": correlation_id,
            "producer": self.producer,
            "topic": self.topic,
            "mode": mode,
            "expected": wanted,
            "tag": HASH_TAG,
            "stream_field": field(stream_id.encode()),
            "eid": [e.event_id for e in envelopes],
            "et": [e.event_type for e in envelopes],
            "oa": [e.occurred_at.ToDatetime(tzinfo=UTC) for e in envelopes],
            "caus": [e.causation_id for e in envelopes],
            "tu": [e.payload.type_url for e in envelopes],
            "pl": [e.payload.value for e in envelopes],
            "tail": [canonical_tail(e) for e in envelopes],
        }
        raw = _driver_connection(conn)
        try:
            # Its own pipeline: the exit waits for all three results, so every error is
            # raised here, even when the caller has a pipeline open around the append.
            with raw.cursor() as alloc, raw.cursor() as tip_cur, raw.cursor() as ins:
                with raw.pipeline():
                    alloc.execute(_PG_ALLOCATE, params)
                    tip_cur.execute(_PG_TIP, params)
                    ins.execute(_PG_INSERT, params)
                end_row = alloc.fetchone()
                tip = tip_cur.fetchone()
                rows = ins.fetchall()
        except psycopg.Error as exc:
            raise self._pg_error(conn, exc, stream_id, wanted) from exc
        if end_row is None:
            raise SchemaError("eventlog_head row missing: run electric_eventlog.migrate()")
        self._check_expected(stream_id, expected_version, int(tip[0]) if tip else 0)
        if len(rows) != len(envelopes):  # pragma: no cover - the check above decides first
            raise ConcurrencyError(stream_id, wanted, int(tip[0]) if tip else None)
        for envelope, (position, version, prev_hash, digest) in zip(envelopes, rows, strict=True):
            envelope.global_position = position
            envelope.stream_version = version
            envelope.prev_hash = prev_hash
            envelope.hash = digest
        return envelopes

    @staticmethod
    def _pg_error(conn: Connection, exc: psycopg.Error, stream_id: str, wanted: int) -> Exception:
        """The exception the generic path raises for ``exc``. An error of a statement the
        caller queued in its own pipeline before the append surfaces here too: it keeps
        the SQLAlchemy type ``conn.execute`` would have given it."""
        if exc.sqlstate in ("40001", "40P01"):
            return ConcurrencyError("<global>", "serialisable allocation", None)
        wrapped = _wrap(conn, exc, _PG_INSERT)
        if isinstance(wrapped, IntegrityError) and exc.diag.table_name == "eventlog_events":
            if "event_id" in str(exc):
                return DuplicateEventError(f"event id already stored: {exc}")
            # Backstop, as in the generic path: a writer bypassing the library.
            return ConcurrencyError(stream_id, wanted, None)
        return wrapped

    @staticmethod
    def _raise_conflict(exc: IntegrityError, stream_id: str, envelopes: list[Envelope]) -> NoReturn:
        text = str(exc.orig)
        if "event_id" in text:
            raise DuplicateEventError(f"event id already stored: {text}") from exc
        # Backstop: the allocation lock makes this unreachable in practice, but a writer
        # bypassing the library (or a future change) must still get a typed conflict.
        raise ConcurrencyError(stream_id, envelopes[0].stream_version - 1, None) from exc

    def _insert(self, conn: Connection, stream_id: str, envelopes: list[Envelope]) -> None:
        now = self._clock()
        try:
            conn.execute(_INSERT_EVENTS, [row_from_envelope(e, now) for e in envelopes])
        except IntegrityError as exc:
            self._raise_conflict(exc, stream_id, envelopes)
        if self.topic:
            conn.execute(
                _INSERT_OUTBOX,
                [
                    {"global_position": e.global_position, "topic": self.topic, "created_at": now}
                    for e in envelopes
                ],
            )


def _driver_connection(conn: Connection) -> psycopg.Connection[Any]:
    """The psycopg connection under ``conn``, inside a begun SQLAlchemy transaction."""
    if not conn.in_transaction():
        conn.begin()  # what conn.execute() would do (autobegin)
    return cast("psycopg.Connection[Any]", conn.connection.dbapi_connection)


def _wrap(conn: Connection, exc: psycopg.Error, statement: str) -> DBAPIError:
    """A psycopg error as the SQLAlchemy exception ``conn.execute`` would have raised."""
    return cast(
        DBAPIError,
        DBAPIError.instance(statement, None, exc, psycopg.Error, dialect=conn.dialect),
    )


def _is_serialization_failure(exc: OperationalError) -> bool:
    return getattr(exc.orig, "sqlstate", None) in ("40001", "40P01")


@functools.cache
def _stream_query(bounded: bool, limited: bool) -> Select[Any]:
    """``read_stream``'s statement, built once per shape with bound parameters: building it
    (and its cache key) anew was most of a short stream's read cost (issue 16 profile)."""
    query = (
        select(schema.events)
        .where(
            schema.events.c.stream_id == bindparam("stream_id"),
            schema.events.c.stream_version >= bindparam("from_version"),
        )
        .order_by(schema.events.c.stream_version)
    )
    if bounded:
        query = query.where(schema.events.c.stream_version <= bindparam("to_version"))
    if limited:
        query = query.limit(bindparam("limit", type_=Integer))
    return query
