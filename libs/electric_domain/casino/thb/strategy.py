"""THB strategies as pure functions, for bots.

:class:`SimpleThb` is a simple rule-of-thumb strategy a person can keep in their head:

* Pre-flop, Call the flop (2× Ante) with everything except a deuce with an offsuit 3 to 7
  (32o–72o: the same five classes the exact enumeration folds).
* Turn, Bet 1×: a pair that uses a hole card (a hidden pair) or better; or four to a flush.
  Else check.
* River, Bet 1×: a hidden pair or better. Else check.

The optimal strategy (the argmax of the exact enumeration) is
:class:`electric_math.strategy.OptimalThb`; both have the interface :class:`ThbStrategy`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from electric_domain.evaluator import Category, category_of, rank


class ThbStrategy(Protocol):
    """Decision maker for one THB round (cards as ids; board grows 0 → 3 → 4)."""

    def preflop(self, hole: Sequence[int]) -> str: ...  # "call_flop" | "fold"

    def turn(self, hole: Sequence[int], flop: Sequence[int]) -> str: ...  # "bet" | "check"

    def river(self, hole: Sequence[int], board4: Sequence[int]) -> str: ...  # "bet" | "check"


def _rank_of(card: int) -> int:
    return card >> 2


def _hidden_pair_or_better(hole: Sequence[int], board: Sequence[int]) -> bool:
    """A made hand of a pair or better that a hole card takes part in (not the board's)."""
    mine = category_of(rank([*hole, *board]))
    if mine < Category.PAIR:
        return False
    if _rank_of(hole[0]) == _rank_of(hole[1]):
        return True
    board_ranks = {_rank_of(c) for c in board}
    if any(_rank_of(c) in board_ranks for c in hole):
        return True
    # With at most four board cards, a straight or better always needs a hole card.
    return mine >= Category.STRAIGHT


def _four_flush(hole: Sequence[int], board: Sequence[int]) -> bool:
    cards = [*hole, *board]
    return any(
        sum(1 for c in cards if c & 3 == suit) >= 4 and any(c & 3 == suit for c in hole)
        for suit in range(4)
    )


class SimpleThb:
    """The simple THB strategy (see the module doc)."""

    def preflop(self, hole: Sequence[int]) -> str:
        lo, hi = sorted((_rank_of(hole[0]), _rank_of(hole[1])))
        suited = (hole[0] & 3) == (hole[1] & 3)
        # ranks: 0 = deuce .. 12 = ace; fold 32o .. 72o
        return "fold" if lo == 0 and 1 <= hi <= 5 and not suited else "call_flop"

    def turn(self, hole: Sequence[int], flop: Sequence[int]) -> str:
        good = _hidden_pair_or_better(hole, flop) or _four_flush(hole, flop)
        return "bet" if good else "check"

    def river(self, hole: Sequence[int], board4: Sequence[int]) -> str:
        return "bet" if _hidden_pair_or_better(hole, board4) else "check"
