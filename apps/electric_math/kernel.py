"""numba kernels shared by the THB and UTH enumerations.

The core is :func:`board_pass`: for one 5-card board it ranks all 1,081 two-card hands from the
47 other cards, sorts them once by rank, and in one sweep gets, for every hand ``p``, how many
of the dealer's 990 possible hands (disjoint from ``p``) it beats, ties, and — for UTH's
qualifier — how many non-qualifying dealer hands it beats or loses to. Card removal is done by
inclusion–exclusion: dealer hands below rank ``r`` that avoid both of ``p``'s cards =
all below ``r`` − those holding ``p[0]`` − those holding ``p[1]`` (+ ``p`` itself, which is
never below its own rank). Per-card running counts make each hand O(1).

Why numba (figures in ``docs/casino-math.md``): the inner loops are integer table look-ups and
counters over 2.6 million boards; numpy cannot vectorise the per-board sort-and-sweep without
materialising gigabytes, and numba gives C speed with no build step for the set-up.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from electric_domain.evaluator import WORST
from numba import njit

PAIR_FLOOR = WORST - 6185  # lowest rank of a pair: the UTH dealer qualifier
N_COMBOS = 1326

# category floors on our rank scale (see electric_domain.evaluator); index = category + 1
# with 9 = royal flush (top straight flush, rank 7462)
CAT_FLOORS = np.array(
    [1, WORST - 6185, WORST - 3325, WORST - 2467, WORST - 1609, WORST - 1599,
     WORST - 322, WORST - 166, WORST - 10, WORST - 1],
    dtype=np.int32,
)  # fmt: skip


def _binomials() -> Any:
    b = np.zeros((53, 6), dtype=np.int64)
    for n in range(53):
        b[n, 0] = 1
        for k in range(1, 6):
            b[n, k] = b[n - 1, k - 1] + b[n - 1, k] if n else 0
    return b


BINOM = _binomials()


def combo_tables() -> tuple[Any, Any, Any]:
    """``(c1, c2, index)``: the 1,326 two-card hands (c1 < c2) and ``index[a, b]``."""
    c1 = np.zeros(N_COMBOS, dtype=np.int64)
    c2 = np.zeros(N_COMBOS, dtype=np.int64)
    idx = -np.ones((52, 52), dtype=np.int64)
    k = 0
    for a in range(52):
        for b in range(a + 1, 52):
            c1[k], c2[k] = a, b
            idx[a, b] = idx[b, a] = k
            k += 1
    return c1, c2, idx


@njit(cache=True)
def category(r: int) -> int:
    """0 high card .. 8 straight flush, 9 royal flush."""
    cat = 0
    for i in range(1, 10):
        if r >= CAT_FLOORS[i]:
            cat = i
    return int(cat)


@njit(cache=True)
def all_boards() -> Any:
    """All C(52, 5) boards, each sorted ascending, in lexicographic order."""
    out = np.empty((2598960, 5), dtype=np.int8)
    n = 0
    for a in range(48):
        for b in range(a + 1, 49):
            for c in range(b + 1, 50):
                for d in range(c + 1, 51):
                    for e in range(d + 1, 52):
                        out[n, 0] = a
                        out[n, 1] = b
                        out[n, 2] = c
                        out[n, 3] = d
                        out[n, 4] = e
                        n += 1
    return out


@njit(cache=True)
def prep_board(board: Any, nf: Any, off: Any, rp: Any, sc: Any, sm: Any, used: Any) -> int:
    """Per-board set-up: ``rp[r1, r2]`` the non-flush rank with two more cards of ranks
    ``r1``/``r2``, suit counts ``sc`` and masks ``sm``, ``used`` cards; returns the only suit
    that can still make a flush (3+ on the board) or -1."""
    cnt = np.zeros(13, dtype=np.int64)
    used[:] = False
    sc[:] = 0
    sm[:] = 0
    for i in range(5):
        c = board[i]
        used[c] = True
        cnt[c >> 2] += 1
        sc[c & 3] += 1
        sm[c & 3] |= 1 << (c >> 2)
    fs = -1
    for s in range(4):
        if sc[s] >= 3:
            fs = s
    for r1 in range(13):
        for r2 in range(r1, 13):
            cnt[r1] += 1
            cnt[r2] += 1
            if cnt[r1] <= 4 and cnt[r2] <= 4:
                k = 7
                idx = 0
                for i in range(13):
                    idx += off[i, k, cnt[i]]
                    k -= cnt[i]
                rp[r1, r2] = nf[idx]
                rp[r2, r1] = rp[r1, r2]
            cnt[r1] -= 1
            cnt[r2] -= 1
    return fs


@njit(cache=True)
def rank_with(a: int, b: int, rp: Any, fs: int, sc: Any, sm: Any, ft: Any) -> int:
    """Rank of the prepared board plus cards ``a`` and ``b``."""
    r = rp[a >> 2, b >> 2]
    if fs >= 0:
        m = sm[fs]
        k = sc[fs]
        if (a & 3) == fs:
            m |= 1 << (a >> 2)
            k += 1
        if (b & 3) == fs:
            m |= 1 << (b >> 2)
            k += 1
        if k >= 5 and ft[m] > r:
            r = ft[m]
    return int(r)


@njit(cache=True)
def count_dealers(
    dl: Any, n: int, pr: int, rp: Any, fs: int, sc: Any, sm: Any, ft: Any, out: Any
) -> None:
    """Against every dealer hand from the ``n`` cards ``dl`` on a prepared board:
    ``out = [wins, ties, non-qualifying wins, non-qualifying losses]`` of player rank ``pr``.
    The rank look-up is :func:`rank_with` written out (numba does not inline it well)."""
    w = 0
    ti = 0
    wn = 0
    ln = 0
    for i in range(n):
        d1 = dl[i]
        for j in range(i + 1, n):
            d2 = dl[j]
            dr = rp[d1 >> 2, d2 >> 2]
            if fs >= 0:
                m = sm[fs]
                kk = sc[fs]
                if (d1 & 3) == fs:
                    m |= 1 << (d1 >> 2)
                    kk += 1
                if (d2 & 3) == fs:
                    m |= 1 << (d2 >> 2)
                    kk += 1
                if kk >= 5 and ft[m] > dr:
                    dr = ft[m]
            nq = dr < PAIR_FLOOR
            if dr < pr:
                w += 1
                if nq:
                    wn += 1
            elif dr == pr:
                ti += 1
            elif nq:
                ln += 1
    out[0] = w
    out[1] = ti
    out[2] = wn
    out[3] = ln


@njit(cache=True)
def board_pass(
    board: Any, nf: Any, ft: Any, off: Any, c1: Any, c2: Any,
    rank_out: Any, win: Any, tie: Any, wnq: Any, lnq: Any, keys: Any,
) -> None:  # fmt: skip
    """Fill, for every hand disjoint from ``board`` (index into the 1,326 list):
    ``rank_out`` (7-card rank), ``win``/``tie`` (dealer hands beaten / tied), ``wnq``/``lnq``
    (non-qualifying dealer hands beaten / lost to). Hands meeting the board get rank 0."""
    used = np.zeros(52, dtype=np.bool_)
    sc = np.zeros(4, dtype=np.int64)
    sm = np.zeros(4, dtype=np.int64)
    rp = np.zeros((13, 13), dtype=np.int32)
    fs = prep_board(board, nf, off, rp, sc, sm, used)
    n = 0
    for h in range(1326):
        a = c1[h]
        b = c2[h]
        if used[a] or used[b]:
            rank_out[h] = 0
            continue
        r = rp[a >> 2, b >> 2]
        if fs >= 0:  # rank_with, written out: numba does not inline it well here
            m = sm[fs]
            k = sc[fs]
            if (a & 3) == fs:
                m |= 1 << (a >> 2)
                k += 1
            if (b & 3) == fs:
                m |= 1 << (b >> 2)
                k += 1
            if k >= 5 and ft[m] > r:
                r = ft[m]
        rank_out[h] = r
        keys[n] = r * 2048 + h
        n += 1
    ks = np.sort(keys[:n])
    # non-qualifying (high card) dealer hands, in total and per card
    nqc = np.zeros(52, dtype=np.int64)
    nq_total = 0
    for j in range(n):
        h = ks[j] & 2047
        if (ks[j] >> 11) >= PAIR_FLOOR:
            break
        nq_total += 1
        nqc[c1[h]] += 1
        nqc[c2[h]] += 1
    less = np.zeros(52, dtype=np.int64)
    eq = np.zeros(52, dtype=np.int64)
    less_total = 0
    j = 0
    while j < n:
        r = ks[j] >> 11
        g = j
        while g < n and (ks[g] >> 11) == r:
            h = ks[g] & 2047
            eq[c1[h]] += 1
            eq[c2[h]] += 1
            g += 1
        size = g - j
        for q in range(j, g):
            h = ks[q] & 2047
            a = c1[h]
            b = c2[h]
            w = less_total - less[a] - less[b]
            t = size - eq[a] - eq[b] + 1
            win[h] = w
            tie[h] = t
            if r >= PAIR_FLOOR:
                wnq[h] = nq_total - nqc[a] - nqc[b]
                lnq[h] = 0
            else:
                nqd = nq_total - nqc[a] - nqc[b] + 1
                wnq[h] = w
                lnq[h] = nqd - w - t
        for q in range(j, g):
            h = ks[q] & 2047
            less[c1[h]] += eq[c1[h]]
            less[c2[h]] += eq[c2[h]]
            eq[c1[h]] = 0
            eq[c2[h]] = 0
        less_total += size
        j = g
