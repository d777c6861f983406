"""Payout's event handlers, registered by payload type on the shared ``ConsumerWorker``.

- ``payout.registration-events`` on ``electric.registration.events``: TournamentStarted;
- ``payout.table-events`` on ``electric.table.events``: HandStarted (the hand's button) and
  TournamentFinished (the result with the table's prizes).

Each event is applied once (``IdempotentConsumer``: the applied-record commits with the
effect); other event types are passed over unrecorded. After a commit that decided a
tournament, the crediter is woken (awarded) or the prize-check failure is counted (held).
"""

from __future__ import annotations

from collections.abc import Callable

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as registration_events
from electric.table.v1 import events_pb2 as table_events
from electric_eventlog import ConsumerWorker, EventBus, IdempotentConsumer, topic_for
from electric_eventlog.consumer import AfterCommit
from sqlalchemy import Connection

from electric_payout.handlers import Decision, Payouts
from electric_payout.metrics import PayoutMetrics

REGISTRATION_TOPIC = topic_for("registration")
TABLE_TOPIC = topic_for("table")
REGISTRATION_CONSUMER = "payout.registration-events"
TABLE_CONSUMER = "payout.table-events"


class PayoutConsumers:
    """The two workers (one consumer group per source topic)."""

    def __init__(
        self,
        payouts: Payouts,
        bus: EventBus,
        *,
        on_award: Callable[[], None],
        metrics: PayoutMetrics,
    ) -> None:
        self._payouts = payouts
        self._on_award = on_award
        self._metrics = metrics
        self.registration = ConsumerWorker(
            engine=payouts.engine,
            bus=bus,
            consumer=IdempotentConsumer(REGISTRATION_CONSUMER),
            topics=[REGISTRATION_TOPIC],
        )
        self.registration.on(registration_events.TournamentStarted, self._started)
        self.table = ConsumerWorker(
            engine=payouts.engine,
            bus=bus,
            consumer=IdempotentConsumer(TABLE_CONSUMER),
            topics=[TABLE_TOPIC],
        )
        self.table.on(table_events.HandStarted, self._hand)
        self.table.on(table_events.TournamentFinished, self._finished)

    @property
    def workers(self) -> tuple[ConsumerWorker, ConsumerWorker]:
        """Both workers (for metrics and the host's background tasks)."""
        return self.registration, self.table

    def _after(self, decision: Decision | None) -> AfterCommit | None:
        if decision is None:
            return None

        def after() -> None:
            self._metrics.decided(decision.held)
            if decision.awarded:
                self._on_award()

        return after

    def _started(
        self, conn: Connection, envelope: Envelope, started: registration_events.TournamentStarted
    ) -> AfterCommit | None:
        return self._after(self._payouts.on_started(conn, envelope, started))

    def _hand(
        self, conn: Connection, envelope: Envelope, hand: table_events.HandStarted
    ) -> AfterCommit | None:
        self._payouts.on_hand(conn, hand)
        return None

    def _finished(
        self, conn: Connection, envelope: Envelope, finished: table_events.TournamentFinished
    ) -> AfterCommit | None:
        return self._after(self._payouts.on_finished(conn, envelope, finished))
