"""Exhaustive enumeration of every THB and UTH deal: one pass over all 2,598,960 boards.

For each board, :func:`electric_math.kernel.board_pass` gives every player hand's counts
against the 990 dealer hands. The pass adds, for each of the 169 class representatives:

* **UTH** (values in half-Antes, so the 3:2 Blind stays an integer; squares in quarter-Antes²)
  per (class, flop) — each board feeds its 10 flop subsets, i.e. every ordered
  (flop, {turn, river}) split: sum of the Play 2× value, sum of the best river value
  (Play 1× or Fold, decided here with all seven player cards known), their second moments,
  the number of river plays, and the number of odd-half (3:2) Blind wins on both paths;
  per class: sums of the 4× and 3× values and second moments; Trips category counts.
* **THB** per (class, 4-card board before the river) — each board feeds its 5 four-card
  subsets: sum of dealer hands beaten, beaten with the Ante-paying category, and lost to.

Everything is exact integer arithmetic; :mod:`electric_math.solve` turns the sums into
decisions (argmax) and figures. Two threads work on disjoint boards with private
accumulators that are added at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numba import get_num_threads, njit, prange

from electric_math import kernel as k
from electric_math import tables
from electric_math.classes import CLASSES

N_FLOPS = 22100  # C(52, 3) colex indices
N_TURNS = 270725  # C(52, 4)
UTH_FLOP_FIELDS = 7  # e2, echeck, m2, mcheck, river plays, odd-blind wins (2x), (check)
UTH_CLASS_FIELDS = 5  # e4, e3, m4, m3, odd-blind wins
_SUB3 = np.array(
    [[i, j, m] for i in range(5) for j in range(i + 1, 5) for m in range(j + 1, 5)], np.int64
)
_SUB4 = np.array([[j for j in range(5) if j != i] for i in range(5)], np.int64)


@njit(cache=True)
def _uth_value(k2: int, wq: int, wn: int, lq: int, ln: int, b2: int) -> tuple[int, int]:
    """Sum over dealer hands of the net (half-Antes) and its square for Play ``k2``/2 ×."""
    ev = wq * (2 + k2 + b2) + wn * (k2 + b2) - lq * (4 + k2) - ln * (2 + k2)
    m2 = wq * (2 + k2 + b2) ** 2 + wn * (k2 + b2) ** 2 + lq * (4 + k2) ** 2 + ln * (2 + k2) ** 2
    return ev, m2


@njit(parallel=True, cache=True)
def run_chunk(
    boards: Any, lo: int, hi: int, nf: Any, ft: Any, off: Any, c1: Any, c2: Any, reps: Any,
    blind2: Any, thb_ante_cat: int, do_uth: bool, do_thb: bool,
    fa: Any, pa: Any, tr: Any, sq: Any,
) -> None:  # fmt: skip
    """Process boards ``lo..hi``; thread ``t`` takes every ``nt``-th board into ``[t]``."""
    nt = fa.shape[0]
    binom = k.BINOM
    for t in prange(nt):
        rank_out = np.zeros(1326, np.int32)
        win = np.zeros(1326, np.int64)
        tie = np.zeros(1326, np.int64)
        wnq = np.zeros(1326, np.int64)
        lnq = np.zeros(1326, np.int64)
        keys = np.zeros(1326, np.int64)
        fidx = np.zeros(10, np.int64)
        qidx = np.zeros(5, np.int64)
        for i in range(lo + t, hi, nt):
            b = boards[i]
            k.board_pass(b, nf, ft, off, c1, c2, rank_out, win, tie, wnq, lnq, keys)
            for s in range(10):
                fidx[s] = (
                    binom[b[_SUB3[s, 0]], 1] + binom[b[_SUB3[s, 1]], 2] + binom[b[_SUB3[s, 2]], 3]
                )
            for s in range(5):
                q = 0
                for j in range(4):
                    q += binom[b[_SUB4[s, j]], j + 1]
                qidx[s] = q
            for c in range(reps.shape[0]):
                h = reps[c]
                r = rank_out[h]
                if r == 0:
                    continue
                cat = k.category(r)
                w = win[h]
                lose = 990 - w - tie[h]
                if do_uth:
                    b2 = blind2[cat]
                    wn = wnq[h]
                    ln = lnq[h]
                    wq = w - wn
                    lq = lose - ln
                    v1, m1 = _uth_value(2, wq, wn, lq, ln, b2)
                    v2, m2 = _uth_value(4, wq, wn, lq, ln, b2)
                    v3, m3 = _uth_value(6, wq, wn, lq, ln, b2)
                    v4, m4 = _uth_value(8, wq, wn, lq, ln, b2)
                    play1 = 1 if v1 > -3960 else 0
                    vr = v1 if play1 else -3960
                    mr = m1 if play1 else 990 * 16
                    odd = w if (b2 & 1) == 1 else 0
                    for s in range(10):
                        f = fidx[s]
                        fa[t, c, f, 0] += v2
                        fa[t, c, f, 1] += vr
                        fa[t, c, f, 2] += m2
                        fa[t, c, f, 3] += mr
                        fa[t, c, f, 4] += play1
                        fa[t, c, f, 5] += odd
                        fa[t, c, f, 6] += odd * play1
                    pa[t, c, 0] += v4
                    pa[t, c, 1] += v3
                    pa[t, c, 2] += m4
                    pa[t, c, 3] += m3
                    pa[t, c, 4] += odd
                    tr[t, c, cat] += 1
                if do_thb:
                    a = 1 if cat >= thb_ante_cat else 0
                    for s in range(5):
                        q = qidx[s]
                        sq[t, c, q, 0] += w
                        sq[t, c, q, 1] += w * a
                        sq[t, c, q, 2] += lose


def class_reps() -> Any:
    """Combo index (in the 1,326 list) of each class representative."""
    _, _, idx = k.combo_tables()
    return np.array([idx[c.cards[0], c.cards[1]] for c in CLASSES], dtype=np.int64)


def run_pass(
    blind2: Any,
    thb_ante_cat: int,
    *,
    do_uth: bool = True,
    do_thb: bool = True,
    chunk: int = 20000,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """The whole pass; returns the summed accumulators (``fa``, ``pa``, ``tr``, ``sq``)."""
    nt = max(1, get_num_threads())
    boards = k.all_boards()
    nf, ft, off = tables.nonflush_table(), tables.flush_table(), tables.offsets()
    c1, c2, _ = k.combo_tables()
    reps = class_reps()
    nc = len(CLASSES)
    fa = np.zeros((nt, nc, N_FLOPS, UTH_FLOP_FIELDS) if do_uth else (nt, 1, 1, 7), np.int64)
    pa = np.zeros((nt, nc, UTH_CLASS_FIELDS), np.int64)
    tr = np.zeros((nt, nc, 10), np.int64)
    sq = np.zeros((nt, nc, N_TURNS, 3) if do_thb else (nt, 1, 1, 3), np.int32)
    b2 = np.asarray(blind2, dtype=np.int64)
    for lo in range(0, len(boards), chunk):
        hi = min(lo + chunk, len(boards))
        run_chunk(
            boards, lo, hi, nf, ft, off, c1, c2, reps, b2, thb_ante_cat,
            do_uth, do_thb, fa, pa, tr, sq,
        )  # fmt: skip
        if progress is not None:
            progress(hi - lo)
    for t in range(1, nt):  # in place: the THB array is large
        fa[0] += fa[t]
        sq[0] += sq[t]
    return {"fa": fa[0], "pa": pa.sum(axis=0), "tr": tr.sum(axis=0), "sq": sq[0]}
