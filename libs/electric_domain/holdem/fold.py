"""The fold of hand events into a :class:`HandState` (``apply``, ``replay``) and the small
state helpers the other engine modules share. Events are trusted facts: nothing is
re-validated here. Rules: docs/holdem-rules.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from electric_domain.evaluator import rank7
from electric_domain.holdem.events import (
    AntePosted,
    BetPlaced,
    BlindPosted,
    BoardDealt,
    Called,
    Checked,
    Event,
    Folded,
    HandEnded,
    HandMucked,
    HandShown,
    HandStarted,
    HoleCardsDealt,
    PotAwarded,
    Raised,
    RoundClosed,
    UncalledBetReturned,
)
from electric_domain.holdem.state import (
    HandConfig,
    HandState,
    Phase,
)

_BOARD_SIZES = (3, 1, 1)
# Phase members as module constants: a global lookup is much cheaper than the enum class
# attribute access on every step. The same objects, so ``is`` comparisons are unchanged.
_PH_FORCED_BETS = Phase.FORCED_BETS
_PH_DEAL_HOLE = Phase.DEAL_HOLE
_PH_BETTING = Phase.BETTING
_PH_DEAL_BOARD = Phase.DEAL_BOARD
_PH_SHOWDOWN = Phase.SHOWDOWN
_PH_COMPLETE = Phase.COMPLETE
_UNKNOWN = -1
_T = TypeVar("_T")


# --------------------------------------------------------------------------- helpers


def _set(t: tuple[_T, ...], i: int, v: _T) -> tuple[_T, ...]:
    return (*t[:i], v, *t[i + 1 :])


def _clockwise(n: int, start: int) -> range | list[int]:
    if start == 0:
        return range(n)
    return [*range(start, n), *range(start)]


def _begin_betting(s: HandState) -> None:
    """Set up a betting round on a private working copy."""
    n = s.n
    cfg = s.config
    opener = (cfg.big_blind_player + 1) % n if s.street == 0 else (cfg.button + 1) % n
    stacks, bets, folded = s.stacks, s.bets, s.folded
    totals = sorted(bets[i] + stacks[i] for i in range(n) if not folded[i])
    second = totals[-2] if len(totals) > 1 else 0
    queue = [
        i for i in _clockwise(n, opener) if not folded[i] and stacks[i] > 0 and second - bets[i] > 0
    ]
    if len(queue) == 1 and bets[queue[0]] >= max(bets):
        queue = []
    s.to_act = tuple(queue)
    s.acted_level = (-1,) * n
    s.cbr = 0
    s.aggressor = -1
    s.phase = _PH_BETTING


def _showdown_order(s: HandState) -> tuple[int, ...]:
    n = s.n
    start = s.aggressor
    if start < 0 or s.folded[start]:
        start = (s.config.button + 1) % n
    return tuple(i for i in _clockwise(n, start) if not s.folded[i])


def _hand_rank(s: HandState, player: int) -> int:
    hole = s.hole[player]
    board = s.board
    if len(board) != 5 or len(hole) != 2 or _UNKNOWN in hole or _UNKNOWN in board:
        return -1
    return rank7(hole[0], hole[1], board[0], board[1], board[2], board[3], board[4])


# --------------------------------------------------------------------------- apply


def initial_state(config: HandConfig) -> HandState:
    """The state right after :class:`HandStarted` for ``config``."""
    return apply(None, HandStarted(config))


def _apply_started(_: HandState | None, e: HandStarted) -> HandState:
    cfg = e.config
    n = len(cfg.stacks)
    s = HandState.__new__(HandState)
    zeros = (0,) * n
    falses = (False,) * n
    s.config = cfg
    s.n = n
    s.min_bet = cfg.effective_min_bet
    s.dealt = 0
    s.phase = _PH_FORCED_BETS
    s.street = -1
    s.stacks = tuple(cfg.stacks)
    s.bets = zeros
    s.committed = zeros
    s.folded = falses
    s.hole = ((),) * n
    s.board = ()
    s.to_act = ()
    s.acted_level = (-1,) * n
    s.cbr = 0
    s.aggressor = -1
    s.runout = False
    s.showdown_queue = ()
    s.shown = falses
    s.shown_rank = (-1,) * n
    s.mucked = falses
    s.winnings = zeros
    return s


def _apply_ante(s: HandState, e: AntePosted) -> HandState:
    p, a = e.player, e.amount
    s.stacks = _set(s.stacks, p, s.stacks[p] - a)
    s.committed = _set(s.committed, p, s.committed[p] + a)
    return s


def _apply_blind(s: HandState, e: BlindPosted) -> HandState:
    p, a = e.player, e.amount
    s.stacks = _set(s.stacks, p, s.stacks[p] - a)
    s.bets = _set(s.bets, p, s.bets[p] + a)
    s.committed = _set(s.committed, p, s.committed[p] + a)
    if e.big:
        s.phase = _PH_DEAL_HOLE
    return s


def _apply_hole(s: HandState, e: HoleCardsDealt) -> HandState:
    cards = e.cards
    dealt = s.dealt
    for c in cards:
        if c >= 0:
            dealt |= 1 << c
    s.dealt = dealt
    p = e.player
    hole = s.hole
    s.hole = hole = (*hole[:p], tuple(cards), *hole[p + 1 :])
    if all(hole):
        s.street = 0
        _begin_betting(s)
    return s


def _apply_board(s: HandState, e: BoardDealt) -> HandState:
    for c in e.cards:
        if c >= 0:
            s.dealt |= 1 << c
    s.board = s.board + tuple(e.cards)
    s.street = e.street
    if s.runout:
        s.phase = _PH_SHOWDOWN if len(s.board) == 5 else _PH_DEAL_BOARD
        if s.phase is _PH_SHOWDOWN:
            s.shown_rank = tuple(_hand_rank(s, i) if s.shown[i] else -1 for i in range(s.n))
    else:
        _begin_betting(s)
    return s


def _apply_fold(s: HandState, e: Folded) -> HandState:
    s.folded = _set(s.folded, e.player, True)
    s.to_act = s.to_act[1:]
    return s


def _apply_check(s: HandState, e: Checked) -> HandState:
    s.acted_level = _set(s.acted_level, e.player, max(s.bets))
    s.to_act = s.to_act[1:]
    return s


def _apply_call(s: HandState, e: Called) -> HandState:
    p, a = e.player, e.amount
    s.stacks = _set(s.stacks, p, s.stacks[p] - a)
    s.bets = _set(s.bets, p, s.bets[p] + a)
    s.committed = _set(s.committed, p, s.committed[p] + a)
    s.acted_level = _set(s.acted_level, p, max(s.bets))
    s.to_act = s.to_act[1:]
    return s


def _apply_wager(s: HandState, e: BetPlaced | Raised) -> HandState:
    p, to = e.player, e.to
    top = max(s.bets)
    delta = to - s.bets[p]
    s.stacks = stacks = _set(s.stacks, p, s.stacks[p] - delta)
    s.bets = _set(s.bets, p, to)
    s.committed = _set(s.committed, p, s.committed[p] + delta)
    increment = to - top
    if increment > s.cbr:
        s.cbr = increment
    s.acted_level = _set(s.acted_level, p, to)
    s.aggressor = p
    n = s.n
    folded = s.folded
    s.to_act = tuple(
        i for i in _clockwise(n, (p + 1) % n) if i != p and not folded[i] and stacks[i] > 0
    )
    return s


def _apply_uncalled(s: HandState, e: UncalledBetReturned) -> HandState:
    p, a = e.player, e.amount
    s.stacks = _set(s.stacks, p, s.stacks[p] + a)
    s.bets = _set(s.bets, p, s.bets[p] - a)
    s.committed = _set(s.committed, p, s.committed[p] - a)
    return s


def _apply_round_closed(s: HandState, e: RoundClosed) -> HandState:
    n = s.n
    s.bets = (0,) * n
    s.to_act = ()
    folded, stacks = s.folded, s.stacks
    live = [i for i in range(n) if not folded[i]]
    if len(live) == 1:
        s.phase = _PH_SHOWDOWN
        s.showdown_queue = ()
        return s
    with_chips = sum(1 for i in live if stacks[i] > 0)
    if with_chips <= 1:
        s.runout = True  # all-in, no more betting possible: expose every hand, run the board
    if s.runout:
        s.showdown_queue = ()
        s.phase = _PH_SHOWDOWN if e.street == 3 else _PH_DEAL_BOARD
    elif e.street == 3:
        s.phase = _PH_SHOWDOWN
        s.showdown_queue = _showdown_order(s)
    else:
        s.phase = _PH_DEAL_BOARD
    return s


def _apply_shown(s: HandState, e: HandShown) -> HandState:
    for c in e.cards:
        if c >= 0:
            s.dealt |= 1 << c
    p = e.player
    s.hole = _set(s.hole, p, tuple(e.cards))
    s.shown = _set(s.shown, p, True)
    s.shown_rank = _set(s.shown_rank, p, e.rank)
    if s.showdown_queue and s.showdown_queue[0] == p:
        s.showdown_queue = s.showdown_queue[1:]
    return s


def _apply_mucked(s: HandState, e: HandMucked) -> HandState:
    s.mucked = _set(s.mucked, e.player, True)
    s.showdown_queue = s.showdown_queue[1:]
    return s


def _apply_awarded(s: HandState, e: PotAwarded) -> HandState:
    stacks, won = list(s.stacks), list(s.winnings)
    for p, share in zip(e.winners, e.shares, strict=True):
        stacks[p] += share
        won[p] += share
    s.stacks = tuple(stacks)
    s.winnings = tuple(won)
    return s


def _apply_ended(s: HandState, e: HandEnded) -> HandState:
    s.phase = _PH_COMPLETE
    s.showdown_queue = ()
    return s


_APPLY: dict[type, Callable[[HandState, Event], HandState]] = {
    AntePosted: _apply_ante,  # type: ignore[dict-item]
    BlindPosted: _apply_blind,  # type: ignore[dict-item]
    HoleCardsDealt: _apply_hole,  # type: ignore[dict-item]
    BoardDealt: _apply_board,  # type: ignore[dict-item]
    Folded: _apply_fold,  # type: ignore[dict-item]
    Checked: _apply_check,  # type: ignore[dict-item]
    Called: _apply_call,  # type: ignore[dict-item]
    BetPlaced: _apply_wager,  # type: ignore[dict-item]
    Raised: _apply_wager,  # type: ignore[dict-item]
    UncalledBetReturned: _apply_uncalled,  # type: ignore[dict-item]
    RoundClosed: _apply_round_closed,  # type: ignore[dict-item]
    HandShown: _apply_shown,  # type: ignore[dict-item]
    HandMucked: _apply_mucked,  # type: ignore[dict-item]
    PotAwarded: _apply_awarded,  # type: ignore[dict-item]
    HandEnded: _apply_ended,  # type: ignore[dict-item]
}


def apply(state: HandState | None, event: Event) -> HandState:
    """The state after ``event`` (a new object; ``state`` is not modified).

    Events are trusted facts (produced by :func:`decide`); ``apply`` does not re-validate.
    ``state`` is ``None`` only for :class:`HandStarted`.
    """
    if type(event) is HandStarted:
        return _apply_started(state, event)
    if state is None:
        raise ValueError("the first event of a hand must be HandStarted")
    return _APPLY[type(event)](state.copy(), event)


def replay(events: Iterable[Event]) -> HandState:
    """Fold a hand's events (starting with :class:`HandStarted`) into its state."""
    state: HandState | None = None
    for event in events:
        state = apply(state, event)
    if state is None:
        raise ValueError("no events")
    return state
