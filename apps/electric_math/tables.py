"""Lookup tables for the numba 7-card evaluator used by the exact enumeration.

Built once (about a second) from :mod:`electric_domain.evaluator`, so every rank the math uses
is the platform's own rank (1..7462, higher is better) — the kernel cannot disagree with the
domain. Two tables:

* ``NONFLUSH[idx]``: the rank of a 7-card hand with no flush, indexed by the rank multiset
  (how many cards of each rank, each 0..4, summing to 7) through a combinatorial number
  system: ``idx = sum_i OFFSET[i, k_i, c_i]`` where ``c_i`` is the count of rank ``i`` and
  ``k_i`` the number of cards still to place at rank ``i`` (49,205 entries).
* ``FLUSH[mask]``: the best flush / straight flush rank of a 13-bit mask of one suit's ranks
  (only masks with 5..7 bits are used).

A 7-card hand with a flush can also hold a full house (never quads), so the kernel takes the
larger of the two lookups.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations

import numpy as np
import numpy.typing as npt
from electric_domain.evaluator import rank

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]


def _ways() -> list[list[int]]:
    """``ways[i][k]``: multisets over ranks ``i..12`` (counts 0..4) with ``k`` cards."""
    ways = [[0] * 8 for _ in range(14)]
    ways[13][0] = 1
    for i in range(12, -1, -1):
        for k in range(8):
            ways[i][k] = sum(ways[i + 1][k - c] for c in range(min(4, k) + 1))
    return ways


@lru_cache(maxsize=1)
def offsets() -> I64:
    """``OFFSET[i, k, c]`` of the combinatorial index (see the module doc)."""
    ways = _ways()
    off = np.zeros((13, 8, 5), dtype=np.int64)
    for i in range(13):
        for k in range(8):
            acc = 0
            for c in range(5):
                off[i, k, c] = acc
                if c <= k:
                    acc += ways[i + 1][k - c]
    return off


def multiset_index(counts: list[int]) -> int:
    """Index of a 7-card rank multiset (pure Python twin of the kernel's loop)."""
    off = offsets()
    k = 7
    idx = 0
    for i in range(13):
        idx += int(off[i, k, counts[i]])
        k -= counts[i]
    return idx


def _multisets(i: int, k: int, prefix: list[int]) -> list[list[int]]:
    if i == 13:
        return [prefix] if k == 0 else []
    out: list[list[int]] = []
    for c in range(min(4, k) + 1):
        out.extend(_multisets(i + 1, k - c, [*prefix, c]))
    return out


@lru_cache(maxsize=1)
def nonflush_table() -> I32:
    """Rank of every suit-free 7-card rank multiset, by :func:`multiset_index`."""
    table = np.zeros(_ways()[0][7], dtype=np.int32)
    for counts in _multisets(0, 7, []):
        cards: list[int] = []
        for r in range(13):
            cards.extend([r] * counts[r])
        # consecutive suits cycle 0..3, so no suit holds more than two of the seven cards
        hand = [r * 4 + (j % 4) for j, r in enumerate(cards)]
        table[multiset_index(counts)] = rank(hand)
    return table


@lru_cache(maxsize=1)
def flush_table() -> I32:
    """Best flush (or straight flush) rank for each 13-bit rank mask of 5..7 bits."""
    table = np.zeros(1 << 13, dtype=np.int32)
    for n in (5, 6, 7):
        for ranks in combinations(range(13), n):
            mask = sum(1 << r for r in ranks)
            table[mask] = rank([r * 4 for r in ranks])  # all clubs
    return table
