"""UTH strategies as pure functions, for bots and for the math.

:class:`BasicStrategy` is the published simple strategy (Wizard of Odds' "basic strategy";
it gives up about 0.1% of the Ante against optimal play):

* Pre-flop, Play 4×: any pair of 3s or better; any Ace; King with any suited card or 5+
  offsuit; Queen with 6+ suited or 8+ offsuit; Jack with 8+ suited or 10 offsuit. Else check.
* Flop, Play 2×: two pair or better; a hidden pair (a pair that uses a hole card), except
  pocket deuces; four to a flush holding a hidden 10 or better of that suit. Else check.
* River, Play 1×: a hidden pair or better; or fewer than 21 dealer outs. Else fold.
  A *dealer out* is an unseen card that with the five board cards alone beats the player.

The optimal strategy (the argmax of the exact enumeration) lives in
:mod:`electric_math.strategy`; it has the same interface (:class:`Strategy`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from electric_domain.evaluator import Category, category_of, rank


class Strategy(Protocol):
    """Decision maker for one UTH seat (cards as ids; board grows 0 → 3 → 5)."""

    def preflop(self, hole: Sequence[int]) -> str: ...  # "play_4x" | "play_3x" | "check"

    def flop(self, hole: Sequence[int], flop: Sequence[int]) -> str: ...  # "play_2x" | "check"

    def river(self, hole: Sequence[int], board: Sequence[int]) -> str: ...  # "play_1x" | "fold"


def _rank_of(card: int) -> int:
    return card >> 2


def _hidden_pair(hole: Sequence[int], board: Sequence[int]) -> bool:
    """A pair that uses a hole card: a pocket pair or a hole card matching the board."""
    h = [_rank_of(c) for c in hole]
    b = {_rank_of(c) for c in board}
    return h[0] == h[1] or h[0] in b or h[1] in b


def dealer_outs(hole: Sequence[int], board: Sequence[int]) -> int:
    """Unseen cards that together with the board alone beat the player's hand."""
    mine = rank([*hole, *board])
    seen = {*hole, *board}
    return sum(1 for c in range(52) if c not in seen and rank([*board, c]) > mine)


class BasicStrategy:
    """The published simple strategy (see the module doc)."""

    def preflop(self, hole: Sequence[int]) -> str:
        hi, lo = sorted((_rank_of(hole[0]), _rank_of(hole[1])), reverse=True)
        suited = (hole[0] & 3) == (hole[1] & 3)
        # ranks: 0 = deuce .. 12 = ace
        play = (
            (hi == lo and hi >= 1)
            or hi == 12
            or (hi == 11 and (suited or lo >= 3))
            or (hi == 10 and (lo >= 4 if suited else lo >= 6))
            or (hi == 9 and (lo >= 6 if suited else lo >= 8))
        )
        return "play_4x" if play else "check"

    def flop(self, hole: Sequence[int], flop: Sequence[int]) -> str:
        cards = [*hole, *flop]
        cat = category_of(rank(cards))
        if cat >= Category.TWO_PAIR and _uses_hole(hole, flop):
            return "play_2x"
        pocket_deuces = _rank_of(hole[0]) == _rank_of(hole[1]) == 0
        if cat == Category.PAIR and _hidden_pair(hole, flop) and not pocket_deuces:
            return "play_2x"
        for suit in range(4):
            if sum(1 for c in cards if c & 3 == suit) == 4 and any(
                c & 3 == suit and _rank_of(c) >= 8 for c in hole
            ):
                return "play_2x"
        return "check"

    def river(self, hole: Sequence[int], board: Sequence[int]) -> str:
        cat = category_of(rank([*hole, *board]))
        if cat >= Category.PAIR and _uses_hole(hole, board):
            return "play_1x"
        return "play_1x" if dealer_outs(hole, board) < 21 else "fold"


def _uses_hole(hole: Sequence[int], board: Sequence[int]) -> bool:
    """The player's hand is better than the board's own best (needs 5 board cards), or,
    with a 3-card flop, holds a hidden pair or better."""
    if len(board) < 5:
        return _hidden_pair(hole, board) or category_of(rank([*hole, *board])) > Category.PAIR
    return rank([*hole, *board]) > rank(board)
