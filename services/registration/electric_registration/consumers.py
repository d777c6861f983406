"""Registration follows the table topic to keep "My Tables" and the Multi-Table Bar current
(idempotent).

Consumer ``registration.table-status`` on ``electric.table.events``, handlers registered by
payload type on the shared ``ConsumerWorker``; each keeps the table row (status, hand number,
whose turn and until when) and the per-seat progress (``store.progress``: stack, place,
prize) of registration's own tables:

- TableStarted → running; every seat gets the starting stack;
- HandStarted → the hand number (only forward), running, the stacks, nobody's turn;
- BlindPosted / ActionTaken → the seat's stack goes down by the chips it put in; an action
  ends the turn;
- TurnStarted → the seat to act and its deadline; TimeoutApplied with a deadline (the time
  bank started) → the new deadline;
- HandEngineEvent ``UncalledBetReturned`` → the seat's stack goes up by the chips returned;
- PotAwarded → each winner's stack goes up by what it won;
- HandEnded → the stacks after the hand (authoritative), nobody's turn;
- PlayerEliminated → the seat is out at its place;
- TournamentFinished → finished; every player's place and prize (the final snapshot).

The applied-record and the row updates commit together (``IdempotentConsumer``), so a
redelivered event changes nothing. Other event types are passed over unrecorded (by their
header, before any decoding). Players at the table are notified after the commit.

Throughput (issues 16 and 18, docs/chaos.md): the table topic carries every action of every
table, so the worker applies up to :data:`BATCH_SIZE` events of a poll in one transaction
(one applied-record insert, one commit), and the players of a table are read once per
transaction, not once per event.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import events_pb2 as table_events
from electric_eventlog import ConsumerWorker, EventBus, IdempotentConsumer, topic_for
from electric_eventlog.consumer import AfterCommit
from sqlalchemy import Connection, Engine

from electric_registration.store import progress, repo, seating

CONSUMER_NAME = "registration.table-status"
SOURCE_TOPIC = topic_for("table")
#: Table events applied per transaction (``ConsumerWorker.batch_size``); a poll returns at
#: most 500 messages, and a failing batch is re-applied event by event.
BATCH_SIZE = 200
#: HandEngineEvent kind of an uncalled bet given back to its seat.
UNCALLED_BET_RETURNED = "UncalledBetReturned"


def _at(envelope: Envelope) -> datetime:
    return envelope.occurred_at.ToDatetime(tzinfo=UTC)


class TableStatusConsumer:
    """The table-status handlers on one ``ConsumerWorker`` (run it with ``worker.run``)."""

    def __init__(self, engine: Engine, bus: EventBus, notify: Callable[[set[str]], None]) -> None:
        self._notify = notify
        # Stack moves and turns are held back and written once per table per batch.
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
        self.worker.on(table_events.HandStarted, self._hand_started)
        self.worker.on(table_events.BlindPosted, self._blind_posted)
        self.worker.on(table_events.TurnStarted, self._turn_started)
        self.worker.on(table_events.TimeoutApplied, self._timeout_applied)
        self.worker.on(table_events.HandEngineEvent, self._engine_event)
        self.worker.on(table_events.ActionTaken, self._action_taken)
        self.worker.on(table_events.PotAwarded, self._pot_awarded)
        self.worker.on(table_events.HandEnded, self._hand_ended)
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
            self._pending.drop(conn, started.table_id)
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

    def _hand_started(
        self, conn: Connection, envelope: Envelope, hand: table_events.HandStarted
    ) -> AfterCommit | None:
        known = seating.hand_started(conn, hand.table_id, hand.hand_number)
        if known:
            self._pending.drop(conn, hand.table_id)  # the stacks below replace them
            progress.set_stacks(
                conn, hand.table_id, [(s.seat, s.stack) for s in hand.stacks], _at(envelope)
            )
            self._pending.set_turn(conn, hand.table_id, 0, None)
        return self._notify_players(conn, hand.table_id, known)

    def _blind_posted(
        self, conn: Connection, envelope: Envelope, blind: table_events.BlindPosted
    ) -> AfterCommit | None:
        self._pending.add_stack(conn, blind.table_id, blind.seat, -blind.amount, _at(envelope))
        return None  # the stack is shown with the next turn; no wake-up per blind

    def _turn_started(
        self, conn: Connection, envelope: Envelope, turn: table_events.TurnStarted
    ) -> AfterCommit | None:
        deadline = turn.deadline.ToDatetime(tzinfo=UTC) if turn.HasField("deadline") else None
        self._pending.set_turn(conn, turn.table_id, turn.seat, deadline)
        return self._notify_players(conn, turn.table_id)

    def _timeout_applied(
        self, conn: Connection, envelope: Envelope, timeout: table_events.TimeoutApplied
    ) -> AfterCommit | None:
        if not timeout.HasField("deadline"):
            return None  # the action timer ran out for good: an action follows
        deadline = timeout.deadline.ToDatetime(tzinfo=UTC)
        self._pending.set_turn(conn, timeout.table_id, timeout.seat, deadline)
        return self._notify_players(conn, timeout.table_id)

    def _engine_event(
        self, conn: Connection, envelope: Envelope, step: table_events.HandEngineEvent
    ) -> AfterCommit | None:
        if step.kind == UNCALLED_BET_RETURNED and step.seat and step.amount:
            self._pending.add_stack(conn, step.table_id, step.seat, step.amount, _at(envelope))
        return None

    def _action_taken(
        self, conn: Connection, envelope: Envelope, action: table_events.ActionTaken
    ) -> AfterCommit | None:
        self._pending.add_stack(
            conn, action.table_id, action.seat, -action.amount_added, _at(envelope)
        )
        self._pending.set_turn(conn, action.table_id, 0, None)
        return self._notify_players(conn, action.table_id)

    def _pot_awarded(
        self, conn: Connection, envelope: Envelope, pot: table_events.PotAwarded
    ) -> AfterCommit | None:
        for w in pot.winners:
            self._pending.add_stack(conn, pot.table_id, w.seat, w.amount, _at(envelope))
        return None  # HandEnded follows

    def _hand_ended(
        self, conn: Connection, envelope: Envelope, ended: table_events.HandEnded
    ) -> AfterCommit | None:
        self._pending.drop(conn, ended.table_id)  # the stacks below replace them
        progress.set_stacks(
            conn, ended.table_id, [(s.seat, s.stack) for s in ended.stacks], _at(envelope)
        )
        self._pending.set_turn(conn, ended.table_id, 0, None)
        return self._notify_players(conn, ended.table_id)

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
