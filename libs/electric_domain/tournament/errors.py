"""Typed refusals of the tournament aggregate.

A refused command raises a subclass of :class:`Rejected`; the class says what kind of
refusal it is (the service maps classes to transport statuses at its edge) and ``reason``
says which rule refused it. ``events`` are time catch-up events applied before the refusal
(the service persists them).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from electric_domain.tournament.events import Event


class RejectReason(StrEnum):
    """Which rule refused a command."""

    BAD_START = "bad_start"  # players, seed or buy-in unusable at the start
    NOT_STARTED = "not_started"
    FINISHED = "finished"
    TIME_WENT_BACKWARDS = "time_went_backwards"
    NO_EXPIRED_TIMER = "no_expired_timer"
    NO_SUCH_SEAT = "no_such_seat"
    ELIMINATED = "eliminated"
    HAND_IN_PROGRESS = "hand_in_progress"
    BAD_DECK_SEED = "bad_deck_seed"
    NOT_YOUR_TURN = "not_your_turn"
    UNKNOWN_MOVE = "unknown_move"
    ILLEGAL_MOVE = "illegal_move"  # the hand engine refused the move
    NO_HAND = "no_hand"
    ELECTRIC_HAND = "electric_hand"
    SITTING_OUT = "sitting_out"
    NOT_SITTING_OUT = "not_sitting_out"
    NOT_IN_HAND = "not_in_hand"
    PRE_ACTION_NOT_OFFERED = "pre_action_not_offered"
    NO_PRE_ACTION = "no_pre_action"
    UNKNOWN_COMMAND = "unknown_command"
    STALE_COMMAND = "stale_command"  # it answers a hand or action that is gone
    AMOUNT_OUT_OF_RANGE = "amount_out_of_range"  # a bet or raise outside the legal range


class Rejected(ValueError):
    """A command was refused; nothing changed except the catch-up ``events``."""

    def __init__(self, reason: RejectReason, message: str, events: Sequence[Event] = ()) -> None:
        super().__init__(message)
        self.reason = reason
        self.events: list[Event] = list(events)


class InvalidCommand(Rejected):
    """The command itself is malformed (no such seat or move, a bad seed, time reversed):
    it can never succeed as sent."""


class NotAllowedNow(Rejected):
    """The command is well formed but the rules forbid it in the current state (not your
    turn, an illegal bet, a finished tournament)."""


class StaleCommand(NotAllowedNow):
    """The command answers a hand (and action) the table has moved past: a player's click
    that crossed a timeout or the next deal. It names what it answered and where the
    table is, so the client can redraw."""

    def __init__(
        self,
        *,
        requested_hand: int,
        requested_seq: int | None,
        current_hand: int,
        current_seq: int,
        events: Sequence[Event] = (),
    ) -> None:
        super().__init__(
            RejectReason.STALE_COMMAND,
            f"stale command: it answers hand {requested_hand}"
            + (f" action {requested_seq}" if requested_seq is not None else "")
            + f" but the table is at hand {current_hand} action {current_seq}",
            events,
        )
        self.requested_hand = requested_hand
        self.requested_seq = requested_seq
        self.current_hand = current_hand
        self.current_seq = current_seq
