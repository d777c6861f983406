"""Idempotent consumers: record "applied" in the same transaction as the effect.

Two levels:

* :class:`IdempotentConsumer` -- ``apply(conn, envelope)`` inside the caller's transaction;
  ``False`` means "already applied, skip the effect". Redelivery therefore never has a
  second effect (no double prize credit).
* :class:`ConsumerWorker` -- runs a consumer over an :class:`EventBus` (Kafka or
  in-process): decodes, applies in a new transaction, lets the bus commit the offset after
  the effect, retries transient failures, and sends poison events to ``<topic>.dlq`` with
  the reason in the headers, then carries on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from datetime import datetime

from electric.eventlog.v1.envelope_pb2 import Envelope
from google.protobuf.message import DecodeError
from sqlalchemy import Connection, Engine, insert, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.sql.expression import Insert

from . import schema
from .bus import EventBus, OutgoingMessage, ReceivedMessage, decode_envelope
from .errors import ConcurrencyError
from .store import utc_now
from .topics import dlq_topic_for

log = logging.getLogger(__name__)

APPLIED = "applied"
DEAD_LETTERED = "dead_lettered"

#: An effect runs in the consumer's transaction; it must do its writes through ``conn``.
Effect = Callable[[Connection, Envelope], None]


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

    def is_applied(self, conn: Connection, event_id: str) -> bool:
        """Whether this consumer has recorded ``event_id`` (applied or dead-lettered)."""
        row = conn.execute(
            select(schema.applied.c.outcome).where(
                schema.applied.c.consumer == self.name, schema.applied.c.event_id == event_id
            )
        ).first()
        return row is not None

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
        # ON CONFLICT DO NOTHING: one round trip, and a concurrent duplicate waits for the
        # first transaction, then inserts nothing (or inserts, if the first rolled back).
        dialect = conn.dialect.name
        if dialect == "postgresql":
            statement: Insert = pg_insert(schema.applied).on_conflict_do_nothing()
        elif dialect == "sqlite":
            statement = sqlite_insert(schema.applied).on_conflict_do_nothing()
        else:  # pragma: no cover - only PostgreSQL and SQLite are supported
            raise NotImplementedError(dialect)
        # RETURNING, not rowcount: drivers may report -1 for INSERT ... ON CONFLICT.
        inserted = conn.execute(statement.returning(schema.applied.c.event_id), values)
        return inserted.first() is not None


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
        effect: Effect,
        group_id: str | None = None,
        max_attempts: int = 3,
        retry_delay: float = 0.05,
        transient: Callable[[BaseException], bool] = is_transient,
    ) -> None:
        """``effect`` runs in a worker thread inside the transaction that records the event.

        A non-transient failure is retried ``max_attempts`` times, then dead-lettered.
        ``group_id`` defaults to the consumer name.
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
        self.applied = 0
        self.skipped = 0
        self.dead_lettered = 0
        self._stop = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        """Consume until ``stop`` is set."""
        self._stop = stop
        # _Stopped: stopped while retrying a transient failure; that message stays uncommitted.
        with contextlib.suppress(_Stopped):
            await self.bus.consume(
                self.topics, group_id=self.group_id, handler=self.handle, stop=stop
            )

    async def handle(self, message: ReceivedMessage) -> None:
        """Apply one delivered message exactly once (or dead-letter it)."""
        try:
            envelope = decode_envelope(message)
        except DecodeError as exc:
            await self._dead_letter(message, None, f"undecodable envelope: {exc}", attempts=1)
            return
        attempt = 0
        while True:
            attempt += 1
            try:
                if await asyncio.to_thread(self._apply_in_tx, envelope):
                    self.applied += 1
                else:
                    self.skipped += 1
                return
            except Exception as exc:
                if self.transient(exc):
                    if self._stop.is_set():
                        raise _Stopped from exc  # raising keeps the offset uncommitted
                    log.warning("transient failure on %s, retrying: %s", envelope.event_id, exc)
                elif attempt >= self.max_attempts:
                    reason = f"{type(exc).__name__}: {exc}"
                    await self._dead_letter(message, envelope, reason, attempts=attempt)
                    return
                await asyncio.sleep(min(self.retry_delay * 2 ** min(attempt, 6), 5.0))

    def _apply_in_tx(self, envelope: Envelope) -> bool:
        with self.engine.begin() as conn:
            if not self.consumer.apply(conn, envelope):
                return False
            self.effect(conn, envelope)
            return True

    async def _dead_letter(
        self, message: ReceivedMessage, envelope: Envelope | None, reason: str, *, attempts: int
    ) -> None:
        log.error(
            "dead-lettering %s/%s@%s: %s", message.topic, message.partition, message.offset, reason
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
        await asyncio.to_thread(self._record_dead_letter, message, envelope, reason)
        self.dead_lettered += 1

    def _record_dead_letter(
        self, message: ReceivedMessage, envelope: Envelope | None, reason: str
    ) -> None:
        with self.engine.begin() as conn:
            self.consumer.record_dead_letter(conn, message, envelope, reason)
