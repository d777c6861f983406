"""Poker hand evaluation behind our own small API.

Backed by phevaluator (PokerHandEvaluator, perfect-hash tables in C): the measurements and the
reasons for the choice are in ``docs/evaluator-choice.md``. Cards are our ints (see
:mod:`electric_domain.cards`), which are phevaluator's native card ids, so the hot path is a
single C call.

Rank scale: :func:`rank` returns an ``int`` in ``1..7462``, **higher is better**; equal ranks
are equal hands (a split). ``7462`` is a royal flush, ``1`` is 7-5-4-3-2 offsuit. Each of the
7,462 distinct five-card hand values has its own rank.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from itertools import combinations

from electric_domain.cards import RANK_NAMES, RANK_PLURALS, UNKNOWN_CARD, cards_str

try:  # the native binding; the public wrapper adds per-card conversion overhead
    from phevaluator import _pheval as _native

    _e5: Callable[..., int] = _native.evaluate_5cards
    _e6: Callable[..., int] = _native.evaluate_6cards
    _e7: Callable[..., int] = _native.evaluate_7cards
except ImportError:  # pragma: no cover - only if phevaluator changes its layout
    from phevaluator import evaluate_cards as _ec

    _e5 = _e6 = _e7 = _ec


WORST = 7463  # phevaluator: 1 (royal flush) .. 7462 (worst high card)


class Category(IntEnum):
    """Hand category, ordered weakest to strongest."""

    HIGH_CARD = 0
    PAIR = 1
    TWO_PAIR = 2
    THREE_OF_A_KIND = 3
    STRAIGHT = 4
    FLUSH = 5
    FULL_HOUSE = 6
    FOUR_OF_A_KIND = 7
    STRAIGHT_FLUSH = 8

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    Category.HIGH_CARD: "High Card",
    Category.PAIR: "Pair",
    Category.TWO_PAIR: "Two Pair",
    Category.THREE_OF_A_KIND: "Three of a Kind",
    Category.STRAIGHT: "Straight",
    Category.FLUSH: "Flush",
    Category.FULL_HOUSE: "Full House",
    Category.FOUR_OF_A_KIND: "Four of a Kind",
    Category.STRAIGHT_FLUSH: "Straight Flush",
}

# Lowest rank (our scale) of each category, strongest first.
_CATEGORY_FLOORS = (
    (WORST - 10, Category.STRAIGHT_FLUSH),
    (WORST - 166, Category.FOUR_OF_A_KIND),
    (WORST - 322, Category.FULL_HOUSE),
    (WORST - 1599, Category.FLUSH),
    (WORST - 1609, Category.STRAIGHT),
    (WORST - 2467, Category.THREE_OF_A_KIND),
    (WORST - 3325, Category.TWO_PAIR),
    (WORST - 6185, Category.PAIR),
    (1, Category.HIGH_CARD),
)


def rank(cards: Sequence[int]) -> int:
    """Rank (1..7462, higher is better) of the best five of 5, 6 or 7 known cards."""
    n = len(cards)
    if n == 7:
        return WORST - _e7(*cards)
    if n == 5:
        return WORST - _e5(*cards)
    if n == 6:
        return WORST - _e6(*cards)
    raise ValueError(f"need 5 to 7 cards, got {n}")


def rank7(a: int, b: int, c: int, d: int, e: int, f: int, g: int) -> int:
    """Hot-path rank of exactly seven cards (no checks)."""
    return WORST - _e7(a, b, c, d, e, f, g)


def category_of(hand_rank: int) -> Category:
    """The category of a rank from :func:`rank`."""
    for floor, cat in _CATEGORY_FLOORS:
        if hand_rank >= floor:
            return cat
    raise ValueError(f"not a hand rank: {hand_rank}")


@dataclass(frozen=True, slots=True)
class HandValue:
    """A hand's value: ``rank`` (higher is better), category, best five cards (ordered for
    display: the cards that make the category first, then kickers), and a description."""

    rank: int
    category: Category
    best_five: tuple[int, ...]
    description: str

    def __str__(self) -> str:
        return f"{self.description} ({cards_str(self.best_five)})"


def _ordered_five(five: Sequence[int], category: Category) -> tuple[int, ...]:
    counts: dict[int, int] = {}
    for c in five:
        counts[c >> 2] = counts.get(c >> 2, 0) + 1
    ranks = {c >> 2 for c in five}
    wheel = category in (Category.STRAIGHT, Category.STRAIGHT_FLUSH) and ranks == {
        12,
        0,
        1,
        2,
        3,
    }

    def key(c: int) -> tuple[int, int, int]:
        r = c >> 2
        effective = -1 if (wheel and r == 12) else r
        return (counts[r], effective, c & 3)

    return tuple(sorted(five, key=key, reverse=True))


def describe(best_five: Sequence[int], category: Category) -> str:
    """Human description of an ordered best five, e.g. "Full House, Kings full of Sevens"."""
    r = [c >> 2 for c in best_five]
    if category is Category.STRAIGHT_FLUSH:
        if r[0] == 12:
            return "Royal Flush"
        return f"Straight Flush, {RANK_NAMES[r[0]]} high"
    if category is Category.FOUR_OF_A_KIND:
        return f"Four of a Kind, {RANK_PLURALS[r[0]]}"
    if category is Category.FULL_HOUSE:
        return f"Full House, {RANK_PLURALS[r[0]]} full of {RANK_PLURALS[r[3]]}"
    if category is Category.FLUSH:
        return f"Flush, {RANK_NAMES[r[0]]} high"
    if category is Category.STRAIGHT:
        return f"Straight, {RANK_NAMES[r[0]]} high"
    if category is Category.THREE_OF_A_KIND:
        return f"Three of a Kind, {RANK_PLURALS[r[0]]}"
    if category is Category.TWO_PAIR:
        return f"Two Pair, {RANK_PLURALS[r[0]]} and {RANK_PLURALS[r[2]]}"
    if category is Category.PAIR:
        return f"Pair of {RANK_PLURALS[r[0]]}"
    return f"High Card, {RANK_NAMES[r[0]]}"


def evaluate(cards: Sequence[int]) -> HandValue:
    """Full evaluation of 5–7 known cards: rank, category, ordered best five, description."""
    if not 5 <= len(cards) <= 7:
        raise ValueError(f"need 5 to 7 cards, got {len(cards)}")
    if len(set(cards)) != len(cards) or any(not 0 <= c < 52 for c in cards):
        raise ValueError(f"cards must be distinct known cards: {list(cards)}")
    if UNKNOWN_CARD in cards:  # pragma: no cover - excluded above
        raise ValueError("unknown card")
    best = rank(cards)
    five: Sequence[int] = cards
    if len(cards) > 5:
        for combo in combinations(cards, 5):
            if WORST - _e5(*combo) == best:
                five = combo
                break
    category = category_of(best)
    ordered = _ordered_five(five, category)
    return HandValue(best, category, ordered, describe(ordered, category))
