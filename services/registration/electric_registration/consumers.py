"""Registration follows the table topic to keep "My Tables" and the Multi-Table Bar current
(idempotent).

Consumer ``registration.table-status`` on ``electric.table.events``, handlers registered by
payload type on the shared ``ConsumerWorker``; each keeps the table row (status, hand number,
whose turn and until when) and the per-seat progress (``store.progress``: stack, place,
prize) of registration's own tables:

- TableStarted → running; every seat gets the starting stack;
- TableProgress → the hand number (only forward), every seat's stack, whose turn and until
  when: the table's summary of each append that changed any of them (issue 26);
- PlayerEliminated → the seat is out at its place;
- TournamentFinished → finished; every player's place and prize (the final snapshot).

Registration decodes no per-action event (blinds, actions, turns, timeouts, cards, pots):
the worker passes over every other event type by its header, before any decoding, on Kafka
and on the in-process bus alike. The applied-record and the row updates commit together
(``IdempotentConsumer``), so a redelivered event changes nothing (a TableProgress holds
absolute values: applying one twice is applying it once). Players at the table are notified
after the commit.

Throughput (issues 16 and 18, docs/chaos.md): the worker applies up to :data:`BATCH_SIZE`
events of a poll in one transaction (one applied-record insert, one commit); a table's
progress is written once per transaction (its latest), and its players are read once per
transaction, not once per event.
"""

from __future__ import annotations

from datetime import UTC, datetime

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import events_pb2 as table_events
from electric_eventlog import ConsumerWorker, EventBus, IdempotentConsumer, topic_for
from electric_eventlog.consumer import AfterCommit
from sqlalchemy import Connection, Engine

from electric_registration.notify import Notify, TableMoved
from electric_registration.store import progress, repo, seating

CONSUMER_NAME = "registration.table-status"
SOURCE_TOPIC = topic_for("table")
#: Table events applied per transaction (``ConsumerWorker.batch_size``); a poll returns at
#: most 500 messages, and a failing batch is re-applied event by event.
BATCH_SIZE = 200


def _at(envelope: Envelope) -> datetime:
    return envelope.occurred_at.ToDatetime(tzinfo=UTC)


class TableStatusConsumer:
    """The table-status handlers on one ``ConsumerWorker`` (run it with ``worker.run``)."""

    def __init__(self, engine: Engine, bus: EventBus, notify: Notify) -> None:
        self._notify = notify
        # A table's progress is held back and written once per table per batch.
        self._pending = progress.PendingProgress()
        self.worker = ConsumerWorker(
            engine=engine,
            bus=bus,
            consumer=IdempotentConsumer(CONSUMER_NAME),
            topics=[SOURCE_TOPIC],
            batch_size=BATCH_SIZE,
            before_commit=self._pending.flush,
        )
        # The players of each table read in the current transaction (see _players).
        self._players_tx: Connection | None = None
        self._players_of: dict[str, set[str]] = {}
        self.worker.on(table_events.TableStarted, self._table_started)
        self.worker.on(table_events.TableProgress, self._progress)
        self.worker.on(table_events.PlayerEliminated, self._eliminated)
        self.worker.on(table_events.TournamentFinished, self._finished)

    def _players(self, conn: Connection, table_id: str) -> set[str]:
        """The table's players, read once per transaction: a batch holds many events of one
        table and these handlers never change entries (an entry changed by a concurrent
        transaction is seen at the next batch, like an event applied a moment earlier)."""
        if self._players_tx is not conn:
            self._players_tx, self._players_of = conn, {}
        players = self._players_of.get(table_id)
        if players is None:
            players = self._players_of[table_id] = repo.table_players(conn, [table_id])
        return players

    def _notify_players(
        self, conn: Connection, table_id: str, known: bool = True
    ) -> AfterCommit | None:
        """Wake the table's players after the commit (none when the table is not ours: it
        has no entries, so ``known`` need not be looked up separately)."""
        players = self._players(conn, table_id) if known else set()
        if not players:
            return None
        return lambda: self._notify(players)

    def _table_started(
        self, conn: Connection, envelope: Envelope, started: table_events.TableStarted
    ) -> AfterCommit | None:
        known = seating.table_running(conn, started.table_id)
        if known:
            self._pending.flush(conn, started.table_id)  # in order before the seats
            for s in started.seats:
                progress.seat(
                    conn,
                    started.table_id,
                    s.seat,
                    s.player_id,
                    started.starting_stack,
                    _at(envelope),
                )
        return self._notify_players(conn, started.table_id, known)

    def _progress(
        self, conn: Connection, envelope: Envelope, summary: table_events.TableProgress
    ) -> AfterCommit | None:
        deadline = (
            summary.turn_deadline.ToDatetime(tzinfo=UTC)
            if summary.HasField("turn_deadline")
            else None
        )
        moved = TableMoved(
            table_id=summary.table_id,
            hand_number=summary.hand_number,
            stacks=tuple((s.seat, s.stack) for s in summary.stacks),
            turn_seat=summary.turn_seat,
            turn_deadline=deadline,
        )
        self._pending.set(
            conn,
            summary.table_id,
            progress.TableProgress(
                moved.hand_number, moved.stacks, moved.turn_seat, deadline, _at(envelope)
            ),
        )
        players = self._players(conn, summary.table_id)
        if not players:
            return None
        # The watchers' bars move on from this summary itself, with no read (bars.py).
        return lambda: self._notify(players, moved)

    def _eliminated(
        self, conn: Connection, envelope: Envelope, out: table_events.PlayerEliminated
    ) -> AfterCommit | None:
        self._pending.flush(conn, out.table_id)  # in order before the row is written
        progress.eliminated(conn, out.table_id, out.seat, out.finishing_place, _at(envelope))
        return self._notify_players(conn, out.table_id)

    def _finished(
        self, conn: Connection, envelope: Envelope, finished: table_events.TournamentFinished
    ) -> AfterCommit | None:
        self._pending.flush(conn, finished.table_id)
        known = seating.table_finished(
            conn,
            finished.table_id,
            hands=finished.hands_played,
            at=_at(envelope),
        )
        if known:
            for place in finished.places:
                progress.finished(
                    conn,
                    finished.table_id,
                    place.player_id,
                    seat_no=place.seat,
                    place=place.place,
                    prize_cents=place.prize.cents,
                    at=_at(envelope),
                )
        return self._notify_players(conn, finished.table_id, known)
