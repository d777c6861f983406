"""Action timer and time bank (seed 000 "Action Timer" and "Time Bank"; docs/design.md §5).

Times are integer milliseconds supplied as inputs; nothing here reads a clock.

* A turn starts with the action timer: deadline = turn start + action_timer_ms.
* When the action timer expires, the time bank activates only if the player has voluntarily
  put chips in the pot this hand (blinds and antes do not count) and has bank time left:
  deadline = expiry + remaining bank.
* Bank time used is deducted when the player acts (or all of it when it runs out) and the
  balance carries over to later hands of the same tournament.
* With no time left the player checks if possible, else folds.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Phase(StrEnum):
    """Which timer is running for the player to act."""

    ACTION = "action"
    BANK = "bank"


@dataclass(frozen=True, slots=True)
class TurnClock:
    """The running timer of the player whose turn it is."""

    seat: int
    phase: Phase
    started_at: int
    deadline: int


def start_turn(seat: int, at: int, action_timer_ms: int) -> TurnClock:
    return TurnClock(seat, Phase.ACTION, at, at + action_timer_ms)


def bank_activates(bank_remaining_ms: int, voluntarily_invested: bool) -> bool:
    """Whether the time bank starts when the action timer expires."""
    return voluntarily_invested and bank_remaining_ms > 0


def start_bank(clock: TurnClock, at: int, bank_remaining_ms: int) -> TurnClock:
    return TurnClock(clock.seat, Phase.BANK, at, at + bank_remaining_ms)


def bank_after_action(clock: TurnClock, at: int, bank_remaining_ms: int) -> int:
    """Bank balance after the player acts at ``at`` (only BANK-phase time is deducted)."""
    if clock.phase is not Phase.BANK:
        return bank_remaining_ms
    used = max(0, at - clock.started_at)
    return max(0, bank_remaining_ms - used)
