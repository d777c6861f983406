"""Independent recomputation of single pre-flop classes (the CI-sized check).

A different algorithm from :mod:`electric_math.enumeration`: class-centric, it walks the
class representative's flops and turn/river pairs and compares the player's hand with each of
the 990 dealer hands directly (no sorting, no inclusion–exclusion). Flops are reduced by the
suit permutations that fix the representative (6 for suited hands, 4 for pairs, 2 for
offsuit), each canonical flop weighted by its orbit. It returns the same per-class fields as
the stored tables, which must match exactly.
"""

# numba compiles chained == far better than tuple membership in its hot loops
# ruff: noqa: SIM109

from __future__ import annotations

from itertools import permutations
from typing import Any

import numpy as np
from numba import njit, prange

from electric_math import kernel as k
from electric_math import tables
from electric_math.classes import HandClass


def canonical_flops(hc: HandClass) -> tuple[Any, Any]:
    """``(flops, weights)``: one flop per orbit under the suit permutations fixing the hand."""
    hand = set(hc.cards)
    group = []
    for perm in permutations(range(4)):
        if {(c & ~3) | perm[c & 3] for c in hand} == hand:
            group.append(perm)
    seen: dict[tuple[int, ...], int] = {}
    rest = [c for c in range(52) if c not in hand]
    for i, a in enumerate(rest):
        for j in range(i + 1, len(rest)):
            for m in range(j + 1, len(rest)):
                flop = (a, rest[j], rest[m])
                canon = min(tuple(sorted((c & ~3) | perm[c & 3] for c in flop)) for perm in group)
                seen[canon] = seen.get(canon, 0) + 1
    flops = np.array(sorted(seen), dtype=np.int64)
    weights = np.array([seen[tuple(f)] for f in flops.tolist()], dtype=np.int64)
    return flops, weights


@njit(parallel=True, cache=True)
def _class_kernel(
    p1: int, p2: int, flops: Any, nf: Any, ft: Any, off: Any, blind2: Any, ante_cat: int,
    uth: Any, thb: Any, trips: Any,
) -> None:  # fmt: skip
    """Per canonical flop: uth[f] = (e2, echeck, m2, mcheck, river plays, odd wins (2x),
    odd wins (check path), e4, e3, m4, m3, odd (all)), thb[f] = (call sum, square sum,
    turn bet, river bets); trips[f, cat] = boards of each category."""
    for fi in prange(flops.shape[0]):
        rp = np.zeros((13, 13), np.int32)
        sc = np.zeros(4, np.int64)
        sm = np.zeros(4, np.int64)
        used = np.zeros(52, np.bool_)
        board = np.zeros(5, np.int64)
        sw = np.zeros(52, np.int64)
        swa = np.zeros(52, np.int64)
        sl = np.zeros(52, np.int64)
        live = np.zeros(52, np.bool_)
        dl = np.zeros(45, np.int64)
        cnt = np.zeros(4, np.int64)
        vals = np.zeros(5, np.int64)
        sqs = np.zeros(5, np.int64)
        board[0], board[1], board[2] = flops[fi, 0], flops[fi, 1], flops[fi, 2]
        for c in range(52):
            live[c] = not (c == p1 or c == p2 or c == board[0] or c == board[1] or c == board[2])
        for t in range(52):
            if not live[t]:
                continue
            for r in range(t + 1, 52):
                if not live[r]:
                    continue
                board[3], board[4] = t, r
                fs = k.prep_board(board, nf, off, rp, sc, sm, used)
                pr = k.rank_with(p1, p2, rp, fs, sc, sm, ft)
                n = 0
                for c in range(52):  # the 45 cards the dealer can hold
                    if live[c] and c != t and c != r:
                        dl[n] = c
                        n += 1
                k.count_dealers(dl, n, pr, rp, fs, sc, sm, ft, cnt)
                w, ti, wn, ln = cnt[0], cnt[1], cnt[2], cnt[3]
                lose = 990 - w - ti
                cat = k.category(pr)
                trips[fi, cat] += 1
                # UTH, half-Antes (as in enumeration)
                b2 = blind2[cat]
                wq = w - wn
                lq = lose - ln
                for j in range(1, 5):
                    k2 = 2 * j
                    vals[j] = wq * (2 + k2 + b2) + wn * (k2 + b2) - lq * (4 + k2) - ln * (2 + k2)
                    sqs[j] = (wq * (2 + k2 + b2) ** 2 + wn * (k2 + b2) ** 2
                              + lq * (4 + k2) ** 2 + ln * (2 + k2) ** 2)  # fmt: skip
                play1 = vals[1] > -3960
                odd = w if (b2 & 1) == 1 else 0
                uth[fi, 0] += vals[2]
                uth[fi, 1] += vals[1] if play1 else -3960
                uth[fi, 2] += sqs[2]
                uth[fi, 3] += sqs[1] if play1 else 990 * 16
                uth[fi, 4] += 1 if play1 else 0
                uth[fi, 5] += odd
                uth[fi, 6] += odd if play1 else 0
                uth[fi, 7] += vals[4]
                uth[fi, 8] += vals[3]
                uth[fi, 9] += sqs[4]
                uth[fi, 10] += sqs[3]
                uth[fi, 11] += odd
                # THB: both orders of turn and river
                a = 1 if cat >= ante_cat else 0
                sw[t] += w
                sw[r] += w
                swa[t] += w * a
                swa[r] += w * a
                sl[t] += lose
                sl[r] += lose
        tsum = 0
        for t in range(52):
            if live[t]:
                tsum += sw[t] - sl[t]
        tb = 1 if tsum > 0 else 0
        thb[fi, 2] = tb
        for t in range(52):
            if not live[t]:
                continue
            rb = 1 if sw[t] - sl[t] > 0 else 0
            x = 2 + tb + rb
            thb[fi, 0] += swa[t] + x * (sw[t] - sl[t]) - sl[t]
            thb[fi, 1] += sw[t] * x * x + swa[t] * (2 * x + 1) + sl[t] * (x + 1) * (x + 1)
            thb[fi, 3] += rb


def recompute_class(hc: HandClass, blind2: list[int], ante_cat: int) -> dict[str, Any]:
    """The class's UTH and THB row fields, recomputed from scratch."""
    flops, wts = canonical_flops(hc)
    n = len(flops)
    uth = np.zeros((n, 12), np.int64)
    thb = np.zeros((n, 4), np.int64)
    trips = np.zeros((n, 10), np.int64)
    _class_kernel(
        hc.cards[0], hc.cards[1], flops, tables.nonflush_table(), tables.flush_table(),
        tables.offsets(), np.asarray(blind2, np.int64), ante_cat, uth, thb, trips,
    )  # fmt: skip
    play2 = uth[:, 0] > uth[:, 1]
    echeck = int((np.where(play2, uth[:, 0], uth[:, 1]) * wts).sum())
    mcheck = int((np.where(play2, uth[:, 2], uth[:, 3]) * wts).sum())
    odd_check = int((np.where(play2, uth[:, 5], uth[:, 6]) * wts).sum())
    e4, e3, m4, m3, odd = (int((uth[:, j] * wts).sum()) for j in (7, 8, 9, 10, 11))
    decision, best, m, odd_best = "check", echeck, mcheck, odd_check
    if e3 > best:
        decision, best, m, odd_best = "3x", e3, m3, odd
    if e4 > best:
        decision, best, m, odd_best = "4x", e4, m4, odd
    n2 = int((play2 * wts).sum())
    chk = decision == "check"
    # each unordered board appears under 10 flop splits in total: trips counts boards once
    trips_boards = (trips * wts[:, None]).sum(axis=0) // 10
    uth_row = {
        "class": hc.label,
        "weight": hc.weight,
        "decision": decision,
        "sum_4x": e4,
        "sum_3x": e3,
        "sum_check": echeck,
        "sum_sq": m,
        "odd_blind_wins": odd_best,
        "flops_2x": n2 if chk else 0,
        "river_1x": int((np.where(play2, 0, uth[:, 4]) * wts).sum()) if chk else 0,
        "flops_checked": int(wts.sum()) - n2 if chk else 0,
        "trips_categories": [int(x) for x in trips_boards],
    }
    call_sum = int((thb[:, 0] * wts).sum())
    from electric_math.solve import THB_DEALS

    call = call_sum > -THB_DEALS
    thb_row = {
        "class": hc.label,
        "weight": hc.weight,
        "decision": "call" if call else "fold",
        "sum_call": call_sum,
        "sum_fold": -THB_DEALS,
        "sum_sq": int((thb[:, 1] * wts).sum()) if call else THB_DEALS,
        "turn_bets": int((thb[:, 2] * wts).sum()) if call else 0,
        "river_bets": int((thb[:, 3] * wts).sum()) if call else 0,
    }
    return {"uth": uth_row, "thb": thb_row}
