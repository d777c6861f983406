"""Idempotent consumers: record "applied" in the same transaction as the effect.

Two levels:

* :class:`IdempotentConsumer` -- ``apply(conn, envelope)`` inside the caller's transaction;
  ``False`` means "already applied, skip the effect". Redelivery therefore never has a
  second effect (no double prize credit).
* :class:`ConsumerWorker` -- runs a consumer over an :class:`EventBus` (Kafka or
  in-process): decodes, applies in a new transaction, lets the bus commit the offset after
  the effect, retries transient failures, and sends poison events to ``<topic>.dlq`` with
  the reason in the headers, then carries on. Effects are either one ``effect`` for every
  event, or handlers registered by payload type with :meth:`ConsumerWorker.on` (events of
  other types are then passed over by their ``event-type`` header, without a transaction
  and without a ledger entry); a typed handler may return a callable that runs after its
  transaction committed (e.g. to wake a stream or a worker).

  With ``batch_size`` > 1 the worker takes a partition's polled messages at once
  (``EventBus.consume_batches``): events of unhandled types are dropped by header, the rest
  are applied up to ``batch_size`` per transaction (one multi-row applied-record insert,
  then each effect in offset order, one commit), and the offsets are committed after that
  transaction. If anything in a batch fails, the transaction rolls back and its messages
  are applied one by one as above (retries, dead letters), so a poison event never takes
  its neighbours down and nothing is applied twice.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, TypeVar

import tenacity
from electric.eventlog.v1.envelope_pb2 import Envelope
from google.protobuf.message import DecodeError, Message
from sqlalchemy import Connection, Engine, delete, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.sql.expression import Insert

from . import causality, schema
from .bus import EventBus, OutgoingMessage, ReceivedMessage, decode_envelope
from .errors import ConcurrencyError
from .own_thread import OwnThread
from .store import utc_now
from .topics import dlq_topic_for

log = logging.getLogger(__name__)

APPLIED = "applied"
DEAD_LETTERED = "dead_lettered"

#: An effect runs in the consumer's transaction; it must do its writes through ``conn``.
Effect = Callable[[Connection, Envelope], None]
#: Runs after the transaction of a typed handler committed (in the consuming task).
AfterCommit = Callable[[], None]
M = TypeVar("M", bound=Message)
#: A handler registered for one payload type: the unpacked payload in, optionally an
#: :data:`AfterCommit` out.
TypedEffect = Callable[[Connection, Envelope, M], "AfterCommit | None"]


class IdempotentConsumer:
    """A named consumer's ledger of applied events (table ``eventlog_applied``)."""

    def __init__(self, name: str, *, clock: Callable[[], datetime] = utc_now) -> None:
        self.name = name
        self._clock = clock

    def apply(self, conn: Connection, envelope: Envelope) -> bool:
        """Record ``envelope`` as applied in ``conn``'s transaction.

        Returns ``True`` the first time (do the effect now, in the same transaction) and
        ``False`` when this consumer already applied or dead-lettered the event. A
        concurrent duplicate blocks on the primary key until the first one commits or rolls
        back, so at most one effect ever commits.
        """
        return self._record(conn, envelope, APPLIED)

    def apply_many(self, conn: Connection, envelopes: Sequence[Envelope]) -> list[bool]:
        """:meth:`apply` for several envelopes with one INSERT: one flag per envelope, in
        order (a second copy of an event within ``envelopes`` is ``False``)."""
        if not envelopes:
            return []
        now = self._clock()
        rows = [
            {
                "consumer": self.name,
                "event_id": e.event_id,
                "stream_id": e.stream_id,
                "stream_version": e.stream_version,
                "outcome": APPLIED,
                "applied_at": now,
            }
            for e in envelopes
        ]
        # executemany with RETURNING: SQLAlchemy sends it as multi-row INSERTs (one round
        # trip per ~1000 rows) and returns the ids actually inserted.
        inserted = {
            row[0]
            for row in conn.execute(
                self._insert(conn).returning(schema.applied.c.event_id), rows
            ).all()
        }
        flags: list[bool] = []
        for e in envelopes:
            flags.append(e.event_id in inserted)
            inserted.discard(e.event_id)  # a later copy in the same batch is a redelivery
        return flags

    def is_applied(self, conn: Connection, event_id: str) -> bool:
        """Whether this consumer has recorded ``event_id`` (applied or dead-lettered)."""
        row = conn.execute(
            select(schema.applied.c.outcome).where(
                schema.applied.c.consumer == self.name, schema.applied.c.event_id == event_id
            )
        ).first()
        return row is not None

    def purge(self, conn: Connection, *, before: datetime) -> int:
        """Forget this consumer's records of events applied (or dead-lettered) before
        ``before``; returns how many. Only safe once no copy of those events can be delivered
        again (docs/event-store.md, "Bounded de-duplication records")."""
        result = conn.execute(
            delete(schema.applied).where(
                schema.applied.c.consumer == self.name, schema.applied.c.applied_at < before
            )
        )
        return int(result.rowcount)

    def record_dead_letter(
        self, conn: Connection, message: ReceivedMessage, envelope: Envelope | None, reason: str
    ) -> None:
        """Remember a poison message (details row + ledger entry so it is skipped later)."""
        where = f"{message.topic}/{message.partition}/{message.offset}"
        event_id = envelope.event_id if envelope else where
        conn.execute(
            insert(schema.dead_letters).values(
                consumer=self.name,
                topic=message.topic,
                partition=message.partition,
                offset=message.offset,
                event_id=event_id,
                reason=reason,
                message=message.value,
                created_at=self._clock(),
            )
        )
        stub = envelope or Envelope(
            event_id=event_id, stream_id=message.key.decode(errors="replace")
        )
        self._record(conn, stub, DEAD_LETTERED)

    def _record(self, conn: Connection, envelope: Envelope, outcome: str) -> bool:
        values = {
            "consumer": self.name,
            "event_id": envelope.event_id,
            "stream_id": envelope.stream_id,
            "stream_version": envelope.stream_version,
            "outcome": outcome,
            "applied_at": self._clock(),
        }
        # RETURNING, not rowcount: drivers may report -1 for INSERT ... ON CONFLICT.
        inserted = conn.execute(self._insert(conn).returning(schema.applied.c.event_id), values)
        return inserted.first() is not None

    @staticmethod
    def _insert(conn: Connection) -> Insert:
        # ON CONFLICT DO NOTHING: one round trip, and a concurrent duplicate waits for the
        # first transaction, then inserts nothing (or inserts, if the first rolled back).
        dialect = conn.dialect.name
        if dialect == "postgresql":
            return pg_insert(schema.applied).on_conflict_do_nothing()
        if dialect == "sqlite":
            return sqlite_insert(schema.applied).on_conflict_do_nothing()
        raise NotImplementedError(dialect)  # pragma: no cover - only PostgreSQL and SQLite


class _Stopped(Exception):
    """Raised out of a handler to leave a message uncommitted when the worker stops."""


def is_transient(error: BaseException) -> bool:
    """Errors worth retrying forever (the database is away, a version race) -- not poison."""
    return isinstance(error, OperationalError | InterfaceError | ConcurrencyError)


class ConsumerWorker:
    """Runs an :class:`IdempotentConsumer` with an effect over an :class:`EventBus`."""

    def __init__(
        self,
        *,
        engine: Engine,
        bus: EventBus,
        consumer: IdempotentConsumer,
        topics: Sequence[str],
        effect: Effect | None = None,
        group_id: str | None = None,
        max_attempts: int = 3,
        retry_delay: float = 0.05,
        transient: Callable[[BaseException], bool] = is_transient,
        dedup_retention: timedelta | Literal["topic"] | None = "topic",
        purge_interval: float = 3600.0,
        batch_size: int = 1,
        before_commit: Callable[[Connection], None] | None = None,
    ) -> None:
        """``effect`` runs in a worker thread inside the transaction that records the event
        (or register typed handlers with :meth:`on` instead).

        A non-transient failure is retried ``max_attempts`` times, then dead-lettered.
        ``group_id`` defaults to the consumer name. ``dedup_retention``: while running,
        every ``purge_interval`` seconds forget records older than that (None: keep all;
        the bound is in docs/event-store.md, "Bounded de-duplication records"). The default
        ``"topic"`` derives it from the consumed topics' retention at start
        (:mod:`.dedup_retention`): none on a bus or topic that keeps messages forever.
        ``batch_size``: events applied per transaction (1: one transaction per event; more:
        see the module docstring; effects must then tolerate running together in one
        transaction, and a failing batch is re-applied event by event).
        ``before_commit(conn)`` runs last in every transaction that applied something: a
        consumer may hold back writes its handlers coalesce (several updates of one row in a
        batch) and write them there, in the same transaction.
        """
        self.engine = engine
        self.bus = bus
        self.consumer = consumer
        self.topics = list(topics)
        self.effect = effect
        self.group_id = group_id or consumer.name
        self.max_attempts = max_attempts
        self.retry_delay = retry_delay
        self.transient = transient
        self.dedup_retention = dedup_retention
        self.purge_interval = purge_interval
        self.batch_size = batch_size
        self.before_commit = before_commit
        self.purged = 0
        self.applied = 0
        self.skipped = 0
        self.dead_lettered = 0
        #: Messages passed over because no typed handler takes their event type.
        self.ignored = 0
        #: Envelopes decoded, by event type: what this worker really read (a consumer that
        #: needs a few types decodes only those; tests and benchmarks check it).
        self.decoded: collections.Counter[str] = collections.Counter()
        #: The latest ``occurred_at`` among the events this worker has committed or skipped
        #: (None before the first): how far into the producer's time it has read. A consumer
        #: that lags is behind it (registration's casino idle expiry waits for it).
        self.progress_at: datetime | None = None
        self._stop = asyncio.Event()
        self._typed: dict[str, tuple[type[Message], Callable[..., AfterCommit | None]]] = {}
        self._wanted: frozenset[bytes] = frozenset()
        # Applies on a thread of its own: one transaction at a time, never queued behind
        # the service's RPC work (in the shared default executor, the one-process runner's
        # payout fell tens of seconds behind the table topic at 50 tables, issue 16).
        self._in_thread = OwnThread(f"consumer-{self.group_id}").run

    def on(self, payload_type: type[M], handler: TypedEffect[M]) -> None:
        """Apply ``handler`` to events whose payload is a ``payload_type`` (one handler per
        type). Once a handler is registered, events of unregistered types are ignored."""
        if self.effect is not None:
            raise ValueError("a ConsumerWorker has either one effect or typed handlers")
        name = payload_type.DESCRIPTOR.full_name
        if name in self._typed:
            raise ValueError(f"a handler for {name} is already registered")
        self._typed[name] = (payload_type, handler)
        self._wanted = frozenset(n.encode() for n in self._typed)

    @property
    def handled_types(self) -> frozenset[str]:
        """Full names of the payload types with a registered handler."""
        return frozenset(self._typed)

    async def run(self, stop: asyncio.Event) -> None:
        """Consume until ``stop`` is set."""
        self._stop = stop
        purging = None
        retention = await self.resolve_dedup_retention()
        if retention is not None:
            purging = asyncio.create_task(self._purge_loop(stop, retention))
        try:
            # _Stopped: stopped while retrying a transient failure; that message stays
            # uncommitted.
            with contextlib.suppress(_Stopped):
                if self.batch_size > 1:
                    await self.bus.consume_batches(
                        self.topics, group_id=self.group_id, handler=self.handle_batch, stop=stop
                    )
                else:
                    await self.bus.consume(
                        self.topics, group_id=self.group_id, handler=self.handle, stop=stop
                    )
        finally:
            if purging is not None:
                purging.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await purging

    async def resolve_dedup_retention(self) -> timedelta | None:
        """``dedup_retention``, with ``"topic"`` resolved from the topics' retention on a
        Kafka bus (an in-process bus keeps every message: None). A broker that cannot say
        keeps every record (None): forgetting too early would apply an event twice."""
        if self.dedup_retention != "topic":
            return self.dedup_retention
        bootstrap = getattr(self.bus, "bootstrap_servers", None)
        if not isinstance(bootstrap, str):
            return None
        from .dedup_retention import topic_dedup_retention
        from .topics import namespaced

        namespace = str(getattr(self.bus, "namespace", "") or "")
        names = [namespaced(namespace, t) for t in self.topics]
        try:
            retention = await asyncio.wait_for(topic_dedup_retention(bootstrap, names), 10)
        except Exception:  # the broker is away: keep the records, decide at the next start
            log.warning("consumer.dedup_retention_unknown", extra={"consumer": self.consumer.name})
            return None
        log.info(
            "consumer.dedup_retention",
            extra={"consumer": self.consumer.name, "retention": str(retention)},
        )
        return retention

    def purge(self, retention: timedelta) -> int:
        """Forget de-duplication records older than ``retention`` (one transaction)."""
        with self.engine.begin() as conn:
            deleted = self.consumer.purge(conn, before=utc_now() - retention)
        self.purged += deleted
        return deleted

    async def _purge_loop(self, stop: asyncio.Event, retention: timedelta) -> None:
        while not stop.is_set():
            try:
                deleted = await asyncio.to_thread(self.purge, retention)
                if deleted:
                    log.info(
                        "consumer.purged", extra={"consumer": self.consumer.name, "rows": deleted}
                    )
            except Exception:  # the database is away: try again next round
                log.exception("consumer.purge_failed", extra={"consumer": self.consumer.name})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.purge_interval)

    async def handle(self, message: ReceivedMessage) -> None:
        """Apply one delivered message exactly once (or dead-letter it)."""
        if self._typed and message.header("event-type") not in self._wanted:
            self.ignored += 1
            return
        try:
            envelope = decode_envelope(message)
        except DecodeError as exc:
            await self._dead_letter(message, None, f"undecodable envelope: {exc}", attempts=1)
            return
        self.decoded[envelope.event_type] += 1

        # tenacity (the platform's one retry library): transient failures are retried until
        # they pass (or the worker stops), others at most ``max_attempts`` times in all.
        def give_up(state: tenacity.RetryCallState) -> bool:
            error = state.outcome.exception() if state.outcome is not None else None
            if error is None or self.transient(error):
                return False
            return state.attempt_number >= self.max_attempts

        retrying = tenacity.AsyncRetrying(
            # Never a cancellation (BaseException) or a stop: only failures of the apply.
            retry=tenacity.retry_if_exception(
                lambda e: isinstance(e, Exception) and not isinstance(e, _Stopped)
            ),
            stop=give_up,
            # 2x, 4x, ... 64x retry_delay after the 1st, 2nd, ... failure; at most 5 s.
            wait=tenacity.wait_exponential(
                multiplier=2 * self.retry_delay, max=min(self.retry_delay * 2**6, 5.0)
            ),
            reraise=True,
        )
        try:
            with causality.caused_by(envelope.correlation_id, envelope.event_id):
                async for attempt in retrying:
                    with attempt:
                        applied, after = await self._apply_once(envelope)
        except _Stopped:
            raise  # raising keeps the offset uncommitted
        except Exception as exc:
            reason = f"{type(exc).__name__}: {exc}"
            attempts = retrying.statistics.get("attempt_number", self.max_attempts)
            await self._dead_letter(message, envelope, reason, attempts=int(attempts))
            return
        self._applied_one(envelope, applied, after)

    async def handle_batch(self, messages: Sequence[ReceivedMessage]) -> None:
        """Apply consecutive messages of one partition, ``batch_size`` per transaction."""
        wanted: list[ReceivedMessage] = []
        for message in messages:
            if self._typed and message.header("event-type") not in self._wanted:
                self.ignored += 1  # dropped by header: no decode, no transaction
            else:
                wanted.append(message)
        for start in range(0, len(wanted), self.batch_size):
            await self._handle_chunk(wanted[start : start + self.batch_size])

    async def _handle_chunk(self, chunk: Sequence[ReceivedMessage]) -> None:
        if len(chunk) == 1:
            await self.handle(chunk[0])
            return
        try:
            envelopes = [decode_envelope(m) for m in chunk]
            self.decoded.update(e.event_type for e in envelopes)
            results = await self._in_thread(self._apply_batch_in_tx, envelopes)
        except Exception as exc:
            # Rolled back: apply one by one, with the retries and dead letters of handle().
            log.warning(
                "consumer.batch_failed",
                extra={
                    "consumer": self.consumer.name,
                    "messages": len(chunk),
                    "error": f"{type(exc).__name__}: {exc}",
                },
            )
            for message in chunk:
                await self.handle(message)
            return
        for envelope, (applied, after) in zip(envelopes, results, strict=True):
            self._applied_one(envelope, applied, after)

    def _apply_batch_in_tx(
        self, envelopes: Sequence[Envelope]
    ) -> list[tuple[bool, AfterCommit | None]]:
        results: list[tuple[bool, AfterCommit | None]] = []
        with self.engine.begin() as conn:
            for envelope, fresh in zip(
                envelopes, self.consumer.apply_many(conn, envelopes), strict=True
            ):
                if not fresh:
                    results.append((False, None))
                    continue
                # Each effect sees the effects of the events before it (same transaction).
                with causality.caused_by(envelope.correlation_id, envelope.event_id):
                    if self.effect is not None:
                        self.effect(conn, envelope)
                        results.append((True, None))
                    else:
                        results.append((True, self._dispatch(conn, envelope)))
            if self.before_commit is not None:
                self.before_commit(conn)
        return results

    def _applied_one(self, envelope: Envelope, applied: bool, after: AfterCommit | None) -> None:
        """Count, log and follow up one committed (or skipped) event."""
        if envelope.HasField("occurred_at"):
            at = envelope.occurred_at.ToDatetime(tzinfo=UTC)
            if self.progress_at is None or at > self.progress_at:
                self.progress_at = at
        if applied:
            self.applied += 1
        else:
            self.skipped += 1
        log.info(
            "consumer.applied" if applied else "consumer.skipped",
            extra=self._fields(envelope),
        )
        if after is not None:
            # Committed: a failing follow-up must not re-run or dead-letter the event.
            with causality.caused_by(envelope.correlation_id, envelope.event_id):
                try:
                    after()
                except Exception:
                    log.exception("consumer.after_commit_failed", extra=self._fields(envelope))

    def _fields(self, envelope: Envelope) -> dict[str, str | int]:
        """The log fields of one consumed event (docs/logging.md)."""
        return {
            "consumer": self.consumer.name,
            "event_type": envelope.event_type,
            "event_id": envelope.event_id,
            "stream_id": envelope.stream_id,
            "stream_version": envelope.stream_version,
            "correlation_id": envelope.correlation_id,
            "causation_id": envelope.event_id,
        }

    async def _apply_once(self, envelope: Envelope) -> tuple[bool, AfterCommit | None]:
        try:
            return await self._in_thread(self._apply_in_tx, envelope)
        except Exception as exc:
            if self.transient(exc):
                if self._stop.is_set():
                    raise _Stopped from exc
                log.warning(
                    "consumer.retrying",
                    extra={**self._fields(envelope), "error": f"{type(exc).__name__}: {exc}"},
                )
            raise

    def _apply_in_tx(self, envelope: Envelope) -> tuple[bool, AfterCommit | None]:
        with self.engine.begin() as conn:
            if not self.consumer.apply(conn, envelope):
                return False, None
            if self.effect is not None:
                self.effect(conn, envelope)
                after = None
            else:
                after = self._dispatch(conn, envelope)
            if self.before_commit is not None:
                self.before_commit(conn)
            return True, after

    def _dispatch(self, conn: Connection, envelope: Envelope) -> AfterCommit | None:
        typed = self._typed.get(envelope.event_type)
        if typed is None:
            return None  # delivered without its header (e.g. replayed): recorded, no effect
        payload_type, handler = typed
        payload: Any = payload_type()
        if not envelope.payload.Unpack(payload):
            raise ValueError(f"payload of {envelope.event_id} is not a {envelope.event_type}")
        return handler(conn, envelope, payload)

    async def _dead_letter(
        self, message: ReceivedMessage, envelope: Envelope | None, reason: str, *, attempts: int
    ) -> None:
        log.error(
            "consumer.dead_lettered",
            extra={
                **(self._fields(envelope) if envelope is not None else {}),
                "consumer": self.consumer.name,
                "topic": message.topic,
                "partition": message.partition,
                "offset": message.offset,
                "reason": reason,
            },
        )
        headers = (
            *message.headers,
            ("dlq-reason", reason.encode()),
            ("dlq-consumer", self.consumer.name.encode()),
            ("dlq-source-topic", message.topic.encode()),
            ("dlq-source-partition", str(message.partition).encode()),
            ("dlq-source-offset", str(message.offset).encode()),
            ("dlq-attempts", str(attempts).encode()),
        )
        # Publish first, then record: a crash in between re-sends to the DLQ (duplicate)
        # rather than recording a dead letter nobody can see.
        await self.bus.publish(
            [OutgoingMessage(dlq_topic_for(message.topic), message.key, message.value, headers)]
        )
        await self._in_thread(self._record_dead_letter, message, envelope, reason)
        self.dead_lettered += 1

    def _record_dead_letter(
        self, message: ReceivedMessage, envelope: Envelope | None, reason: str
    ) -> None:
        with self.engine.begin() as conn:
            self.consumer.record_dead_letter(conn, message, envelope, reason)
