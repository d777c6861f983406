"""The 169 pre-flop classes (suit isomorphism) of a two-card hand, as a 13×13 grid.

Row and column ``0..12`` are ranks Ace down to Two. ``(i, i)`` is a pair (6 combos),
``i < j`` (upper right) is suited with high rank ``i`` (4 combos), ``i > j`` (lower left) is
offsuit with high rank ``j`` (12 combos); 6·13 + 4·78 + 12·78 = 1,326. Every hand of a class
has the same value under exhaustive enumeration (suits are symmetric), so each class is
computed once from a representative and weighted by its number of combos.
"""

from __future__ import annotations

from dataclasses import dataclass

from electric_domain.cards import RANKS


@dataclass(frozen=True, slots=True)
class HandClass:
    """One cell of the grid."""

    index: int  # row * 13 + col
    row: int
    col: int
    label: str  # "AA", "AKs", "AKo"
    weight: int  # combos
    cards: tuple[int, int]  # representative, ascending card ids


def _build() -> tuple[HandClass, ...]:
    out: list[HandClass] = []
    for row in range(13):
        for col in range(13):
            hi = 12 - min(row, col)
            lo = 12 - max(row, col)
            if row == col:
                label, weight, a, b = RANKS[hi] * 2, 6, hi * 4, hi * 4 + 1
            elif row < col:
                label, weight, a, b = RANKS[hi] + RANKS[lo] + "s", 4, hi * 4, lo * 4
            else:
                label, weight, a, b = RANKS[hi] + RANKS[lo] + "o", 12, hi * 4, lo * 4 + 1
            cards = (min(a, b), max(a, b))
            out.append(HandClass(row * 13 + col, row, col, label, weight, cards))
    return tuple(out)


CLASSES: tuple[HandClass, ...] = _build()
BY_LABEL = {c.label: c for c in CLASSES}


def class_of(a: int, b: int) -> HandClass:
    """The class of the two cards ``a`` and ``b``."""
    ra, rb = a >> 2, b >> 2
    hi, lo = max(ra, rb), min(ra, rb)
    if ra == rb:
        return CLASSES[(12 - hi) * 14]
    if (a & 3) == (b & 3):
        return CLASSES[(12 - hi) * 13 + (12 - lo)]
    return CLASSES[(12 - lo) * 13 + (12 - hi)]
