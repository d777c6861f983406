"""Pre-turn actions, exactly per seed 000 §5.b (pure state machine).

* Offered when it is NOT the player's turn and they can still act in the hand; fold is
  always offered (§5.b.i — the big blind too):
  - nothing to call: fold, check/fold, check, bet;
  - something to call that the stack covers (to_call <= stack): fold, call;
  - a bet over the player's chips (to_call > stack): fold, all-in (§5.b.v: all-in is shown
    only when a bet exceeds the chips).
* Executed automatically the moment it becomes the player's turn: fold folds (also with
  nothing to call), check/fold checks or folds, check checks, bet bets the minimum (the big
  blind, or the whole stack when smaller; a check when nobody could answer a bet), call
  calls, all-in calls with the whole stack.
* When the amount to call changes before the player's turn (a bet or raise):
  check/fold turns into fold (§5.b.ii), check becomes unselected (§5.b.iii), call becomes
  unselected on an additional bet (§5.b.iv), bet becomes unselected (the seed lists it
  without a rule of its own; like check, it assumed nobody bet); fold and all-in stay
  selected (all-in still commits every chip).
* The player may unselect at any time before their turn; selections are cleared when the
  betting round ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class PreAction(StrEnum):
    """A pre-selected action."""

    FOLD = "fold"
    CHECK_FOLD = "check_fold"
    CHECK = "check"
    CALL = "call"
    ALL_IN = "all_in"
    BET = "bet"


class Auto(StrEnum):
    """What a pre-turn action (or an automatic rule) does at the player's turn."""

    FOLD = "fold"
    CHECK = "check"
    CALL = "call"
    BET = "bet"


@dataclass(frozen=True, slots=True)
class Selection:
    """A selected pre-turn action and the amount to call when it was selected."""

    action: PreAction
    to_call: int


#: The seed's names of the pre-turn actions (§5.b), as messages show them.
_LABELS = {
    PreAction.FOLD: "fold",
    PreAction.CHECK_FOLD: "check/fold",
    PreAction.CHECK: "check",
    PreAction.BET: "bet",
    PreAction.CALL: "call",
    PreAction.ALL_IN: "all-in",
}


def label(action: PreAction) -> str:
    """The seed's name of ``action`` (messages never show internal names)."""
    return _LABELS[action]


def labels(actions: frozenset[PreAction]) -> str:
    """The seed's names of ``actions`` in the seed's order, comma separated."""
    return ", ".join(_LABELS[a] for a in _LABELS if a in actions) or "none"


def available(to_call: int, stack: int) -> frozenset[PreAction]:
    """Pre-turn actions the player may select, given what they would have to call."""
    if to_call <= 0:
        return frozenset({PreAction.FOLD, PreAction.CHECK_FOLD, PreAction.CHECK, PreAction.BET})
    if to_call <= stack:
        return frozenset({PreAction.FOLD, PreAction.CALL})
    return frozenset({PreAction.FOLD, PreAction.ALL_IN})


def on_bet_change(sel: Selection, to_call: int) -> Selection | None:
    """The selection after the amount to call became ``to_call`` (None = unselected)."""
    if to_call == sel.to_call:
        return sel
    if sel.action is PreAction.CHECK_FOLD:
        return Selection(PreAction.FOLD, to_call) if to_call > 0 else sel
    if sel.action in (PreAction.CHECK, PreAction.CALL, PreAction.BET):
        return None
    return Selection(sel.action, to_call)


def resolve(sel: Selection, to_call: int) -> Auto:
    """The action a selection performs at the player's turn."""
    if sel.action is PreAction.FOLD:
        return Auto.FOLD
    if sel.action is PreAction.BET:
        return Auto.BET if to_call <= 0 else Auto.FOLD
    if sel.action in (PreAction.CHECK_FOLD, PreAction.CHECK):
        return Auto.CHECK if to_call <= 0 else Auto.FOLD
    return Auto.CALL


def check_or_fold(to_call: int) -> Auto:
    """The automatic action of a timed-out or sitting-out player (seed "Action Timer")."""
    return Auto.CHECK if to_call <= 0 else Auto.FOLD
