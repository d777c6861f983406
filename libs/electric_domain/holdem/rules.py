"""Questions about a hand state: what the player to act may do (:func:`legal_actions`) and
the pending showdown decision (:func:`showdown_options`). Pure; rules: docs/holdem-rules.md.
"""

from __future__ import annotations

from electric_domain.holdem.fold import _PH_BETTING, _PH_SHOWDOWN, _UNKNOWN, _hand_rank
from electric_domain.holdem.state import HandState, LegalActions, ShowdownOptions


def _can_raise(s: HandState, p: int, top: int) -> bool:
    stacks, bets = s.stacks, s.bets
    if stacks[p] <= top - bets[p]:
        return False  # covered: calling takes the whole stack
    level = s.acted_level[p]
    if level >= 0:
        full = s.cbr if s.cbr > s.min_bet else s.min_bet
        if top - level < full:
            return False  # only a short all-in since this player acted: not reopened
    folded = s.folded
    # someone else must be able to put in more than the current bet
    for j in range(s.n):  # noqa: SIM110 - a plain loop is faster than any() on the hot path
        if j != p and not folded[j] and stacks[j] + bets[j] > top:
            return True
    return False


def legal_actions(state: HandState) -> LegalActions | None:
    """What the player to act may do, or ``None`` when no betting decision is pending."""
    if state.phase is not _PH_BETTING or not state.to_act:
        return None
    p = state.to_act[0]
    bets = state.bets
    top = max(bets)
    bet = bets[p]
    stack = state.stacks[p]
    owed = top - bet
    call = owed if owed < stack else stack
    all_in_to = stack + bet
    if _can_raise(state, p, top):
        cbr = state.cbr
        mb = state.min_bet
        min_to = top + (cbr if cbr > mb else mb)
        if min_to > all_in_to:
            min_to = all_in_to
        return LegalActions(
            p, owed > 0, owed <= 0, call, True, top == 0, min_to, all_in_to, all_in_to, top,
            bet, stack,
        )  # fmt: skip
    return LegalActions(
        p, owed > 0, owed <= 0, call, False, top == 0, 0, 0, all_in_to, top, bet, stack
    )


def _cannot_win(s: HandState, p: int, my_rank: int) -> bool:
    committed = s.committed[p]
    for q in range(s.n):
        if (
            q != p
            and s.shown[q]
            and not s.folded[q]
            and s.committed[q] >= committed
            and s.shown_rank[q] > my_rank >= 0
        ):
            return True
    return False


def showdown_options(state: HandState) -> ShowdownOptions | None:
    """The pending showdown decision, or ``None``."""
    if state.phase is not _PH_SHOWDOWN or not state.showdown_queue:
        return None
    p = state.showdown_queue[0]
    return ShowdownOptions(p, _can_muck(state, p))


def _can_muck(s: HandState, p: int) -> bool:
    if _UNKNOWN in s.hole[p]:
        return True  # the record cannot know; treated as a forfeit
    return _cannot_win(s, p, _hand_rank(s, p))
