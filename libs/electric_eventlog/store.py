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

import uuid
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, NoReturn, cast

from electric.eventlog.v1.envelope_pb2 import Envelope
from google.protobuf import any_pb2
from google.protobuf.message import Message
from sqlalchemy import Connection, Engine, bindparam, func, insert, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError

from . import schema
from .codec import envelope_from_row, row_from_envelope, to_utc
from .errors import ConcurrencyError, DuplicateEventError, SchemaError, StreamNotFoundError
from .hashing import compute_hash
from .model import ANY, STREAM_EXISTS, Expected, NewEvent, Snapshot
from .registry import PayloadRegistry, default_registry, pack, type_name_of
from .topics import topic_for

Clock = Callable[[], datetime]

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

# PostgreSQL + psycopg fast path (see docs/event-store.md, "Performance"): the same two
# statements as _ALLOCATE and _TIP, sent together in ONE pipeline (one round trip; the
# server still runs them in order, each with a fresh READ COMMITTED snapshot, so the tip
# is read after the head-row lock was granted), then ONE statement that inserts every
# event of the batch and its outbox rows from arrays (one round trip, one cached plan for
# any batch size). Arrays go in binary format (%b): no per-element quoting on the client.
_PG_ALLOCATE = (
    "UPDATE eventlog_head SET last_position = last_position + %s WHERE id = 1 "
    "RETURNING last_position"
)
_PG_TIP = (
    "SELECT stream_version, hash FROM eventlog_events WHERE stream_id = %s "
    "ORDER BY stream_version DESC LIMIT 1"
)
_PG_INSERT_EVENTS = (
    "INSERT INTO eventlog_events (global_position, stream_id, stream_version, event_id, "
    "event_type, occurred_at, recorded_at, correlation_id, causation_id, producer, "
    "payload_type_url, payload, prev_hash, hash) "
    "SELECT u.gp, %(stream_id)s, u.sv, u.eid, u.et, u.oa, %(recorded_at)s, "
    "%(correlation_id)s, u.caus, %(producer)s, u.tu, u.pl, u.ph, u.h "
    "FROM unnest(%(gp)b::bigint[], %(sv)b::bigint[], %(eid)b::text[], %(et)b::text[], "
    "%(oa)b::timestamptz[], %(caus)b::text[], %(tu)b::text[], %(pl)b::bytea[], "
    "%(ph)b::text[], %(h)b::text[]) AS u(gp, sv, eid, et, oa, caus, tu, pl, ph, h)"
)
_PG_INSERT_EVENTS_AND_OUTBOX = (
    f"WITH ev AS ({_PG_INSERT_EVENTS} RETURNING global_position) "
    "INSERT INTO eventlog_outbox (global_position, topic, created_at) "
    "SELECT global_position, %(topic)s, %(recorded_at)s FROM ev"
)


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
        """
        if not events:
            self._check_expected(stream_id, expected_version, self.current_version(conn, stream_id))
            return []
        fast = self._pg_fast_path(conn)
        if fast:
            end, version, prev_hash = self._pg_allocate_and_read_tip(conn, len(events), stream_id)
        else:
            end = self._allocate_positions(conn, len(events))
            # Read the stream tip only now, under the allocation lock, so it cannot move
            # under us.
            tip = conn.execute(_TIP, {"stream_id": stream_id}).first()
            version, prev_hash = (tip[0], tip[1]) if tip else (0, "")
        self._check_expected(stream_id, expected_version, version)
        default_at = to_utc(occurred_at or self._clock())
        envelopes: list[Envelope] = []
        for offset, item in enumerate(events):
            new = item if isinstance(item, NewEvent) else NewEvent(payload=item)
            payload = pack(new.payload)
            envelope = Envelope(
                event_id=new.event_id or str(uuid.uuid4()),
                stream_id=stream_id,
                stream_version=version + offset + 1,
                global_position=end - len(events) + offset + 1,
                event_type=type_name_of(payload),
                correlation_id=correlation_id,
                causation_id=causation_id if new.causation_id is None else new.causation_id,
                payload=payload,
                prev_hash=prev_hash,
                producer=self.producer,
            )
            at = to_utc(new.occurred_at) if new.occurred_at else default_at
            envelope.occurred_at.FromDatetime(at)
            envelope.hash = compute_hash(envelope)
            prev_hash = envelope.hash
            envelopes.append(envelope)
        if fast:
            self._pg_insert(conn, stream_id, envelopes, correlation_id)
        else:
            self._insert(conn, stream_id, envelopes)
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
        """:meth:`append` in a transaction of its own (committed on return)."""
        with self.engine.begin() as conn:
            return self.append(
                conn,
                stream_id,
                expected_version,
                events,
                correlation_id=correlation_id,
                causation_id=causation_id,
                occurred_at=occurred_at,
            )

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
        query = (
            select(schema.events)
            .where(
                schema.events.c.stream_id == stream_id,
                schema.events.c.stream_version >= from_version,
            )
            .order_by(schema.events.c.stream_version)
        )
        if to_version is not None:
            query = query.where(schema.events.c.stream_version <= to_version)
        if limit is not None:
            query = query.limit(limit)
        return [envelope_from_row(row) for row in conn.execute(query).mappings()]

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

    @staticmethod
    def _pg_allocate_and_read_tip(
        conn: Connection, count: int, stream_id: str
    ) -> tuple[int, int, str]:
        """``_ALLOCATE`` then ``_TIP`` in one psycopg pipeline: (end position, tip version,
        tip hash). Same statements, same order, one network round trip."""
        import psycopg  # only on this path: SQLite-only installs need no driver

        if not conn.in_transaction():
            conn.begin()  # what conn.execute() would do (autobegin)
        raw = cast("psycopg.Connection[Any]", conn.connection.dbapi_connection)
        try:
            with raw.cursor() as alloc, raw.cursor() as tip_cur:
                with raw.pipeline():
                    alloc.execute(_PG_ALLOCATE, (count,))
                    tip_cur.execute(_PG_TIP, (stream_id,))
                end_row = alloc.fetchone()
                tip = tip_cur.fetchone()
        except psycopg.Error as exc:
            if getattr(exc, "sqlstate", None) in ("40001", "40P01"):
                raise ConcurrencyError("<global>", "serialisable allocation", None) from exc
            raise DBAPIError.instance(
                _PG_ALLOCATE, None, exc, psycopg.Error, dialect=conn.dialect
            ) from exc
        if end_row is None:
            raise SchemaError("eventlog_head row missing: run electric_eventlog.migrate()")
        version, prev_hash = (int(tip[0]), str(tip[1])) if tip else (0, "")
        return int(end_row[0]), version, prev_hash

    def _pg_insert(
        self, conn: Connection, stream_id: str, envelopes: list[Envelope], correlation_id: str
    ) -> None:
        """Every event row and its outbox row in one statement (``unnest`` of arrays)."""
        params: dict[str, Any] = {
            "stream_id": stream_id,
            "recorded_at": self._clock(),
            "correlation_id": correlation_id,
            "producer": self.producer,
            "topic": self.topic,
            "gp": [e.global_position for e in envelopes],
            "sv": [e.stream_version for e in envelopes],
            "eid": [e.event_id for e in envelopes],
            "et": [e.event_type for e in envelopes],
            "oa": [e.occurred_at.ToDatetime(tzinfo=UTC) for e in envelopes],
            "caus": [e.causation_id for e in envelopes],
            "tu": [e.payload.type_url for e in envelopes],
            "pl": [e.payload.value for e in envelopes],
            "ph": [e.prev_hash for e in envelopes],
            "h": [e.hash for e in envelopes],
        }
        sql = _PG_INSERT_EVENTS_AND_OUTBOX if self.topic else _PG_INSERT_EVENTS
        try:
            conn.exec_driver_sql(sql, params)
        except IntegrityError as exc:
            self._raise_conflict(exc, stream_id, envelopes)

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


def _is_serialization_failure(exc: OperationalError) -> bool:
    return getattr(exc.orig, "sqlstate", None) in ("40001", "40P01")
