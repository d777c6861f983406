"""Decisions (argmax at every decision point) and exact figures from the enumeration sums.

Units: UTH sums are in half-Antes (squares in quarter-Antes²) over every (flop, unordered
turn/river, dealer hand) of a class; THB sums are in Antes over every (flop, turn, river,
dealer hand). Ties between options go to the smaller stake (fold/check before a bet), so a
strategy never risks more for no gain.
"""

# numba compiles chained == far better than tuple membership in its hot loops
# ruff: noqa: SIM109

from __future__ import annotations

from typing import Any

import numpy as np
from electric_domain.casino.common.config import CasinoConfig
from numba import njit, prange

from electric_math import kernel as k
from electric_math.classes import CLASSES

FLOPS_PER_CLASS = 19600  # C(50, 3)
TR_PER_FLOP = 1081  # C(47, 2)
SPLITS = FLOPS_PER_CLASS * TR_PER_FLOP  # 10 × C(50, 5)
BOARDS_PER_CLASS = 2118760  # C(50, 5)
DEALERS = 990  # C(45, 2)
THB_DEALS = FLOPS_PER_CLASS * 47 * 46 * DEALERS  # ordered turn and river


def blind_half_units(cfg: CasinoConfig) -> list[int]:
    """Blind pay per category in half-Antes (3:2 → 3)."""
    out = []
    for r in cfg.uth.blind_pays:
        out.append(0 if r is None else int(2 * r.value))
    return out


def trips_units(cfg: CasinoConfig) -> list[int]:
    """Trips net per category in Trips bets: the ratio, or -1 when it loses."""
    return [-1 if r is None else int(r.value) for r in cfg.uth.trips_pays]


def flop_cards() -> Any:
    """Cards of each colex flop index (22,100 × 3)."""
    out = np.zeros((22100, 3), np.int64)
    for a in range(52):
        for b in range(a + 1, 52):
            for c in range(b + 1, 52):
                out[k.BINOM[a, 1] + k.BINOM[b, 2] + k.BINOM[c, 3]] = (a, b, c)
    return out


def uth_classes(fa: Any, pa: Any, tr: Any, bits: Any = None) -> list[dict[str, Any]]:
    """Per class: the option sums, the decision and the chosen path's statistics.
    ``bits`` (169 × 22,100 bool), when given, receives the flop Play 2× decisions."""
    fc = flop_cards()
    out = []
    for c, hc in enumerate(CLASSES):
        valid = ~np.isin(fc, hc.cards).any(axis=1)
        f = fa[c][valid]
        play2 = f[:, 0] > f[:, 1]
        if bits is not None:
            bits[c, valid] = play2
        echeck = int(np.where(play2, f[:, 0], f[:, 1]).sum())
        mcheck = int(np.where(play2, f[:, 2], f[:, 3]).sum())
        odd_check = int(np.where(play2, f[:, 5], f[:, 6]).sum())
        n2 = int(play2.sum())
        n1 = int(np.where(play2, 0, f[:, 4]).sum())
        e4, e3, m4, m3, odd = (10 * int(x) for x in pa[c])
        decision, best, m, odd_best = "check", echeck, mcheck, odd_check
        if e3 > best:
            decision, best, m, odd_best = "3x", e3, m3, odd
        if e4 > best:
            decision, best, m, odd_best = "4x", e4, m4, odd
        out.append(
            {
                "class": hc.label,
                "weight": hc.weight,
                "decision": decision,
                "sum_4x": e4,
                "sum_3x": e3,
                "sum_check": echeck,
                "sum_sq": m,
                "odd_blind_wins": odd_best,
                "flops_2x": n2 if decision == "check" else 0,
                "river_1x": n1 if decision == "check" else 0,
                "flops_checked": len(f) - n2 if decision == "check" else 0,
                "trips_categories": [int(x) for x in tr[c]],
            }
        )
    return out


@njit(parallel=True, cache=True)
def _thb_all(sq: Any, reps1: Any, reps2: Any, out: Any, tbits: Any, rbits: Any) -> None:
    """THB per class: out = [call sum, call square sum, turn bets, river bets]; the turn
    (per flop index) and river (per 4-card index) bet decisions into ``tbits``/``rbits``."""
    binom = k.BINOM
    for c in prange(reps1.shape[0]):
        p1 = reps1[c]
        p2 = reps2[c]
        ev = 0
        m2 = 0
        nturn = 0
        nriver = 0
        q4 = np.zeros(4, np.int64)
        for a in range(52):
            if a == p1 or a == p2:
                continue
            for b in range(a + 1, 52):
                if b == p1 or b == p2:
                    continue
                for d in range(b + 1, 52):
                    if d == p1 or d == p2:
                        continue
                    # the turn decision: sum of (wins - losses) over all turns and rivers
                    tsum = 0
                    for pass_ in range(2):
                        for t in range(52):
                            if t == p1 or t == p2 or t == a or t == b or t == d:
                                continue
                            # sorted 4 cards for the colex index
                            q4[0], q4[1], q4[2], q4[3] = a, b, d, t
                            for i in range(3, 0, -1):
                                if q4[i] < q4[i - 1]:
                                    q4[i], q4[i - 1] = q4[i - 1], q4[i]
                            qi = binom[q4[0], 1] + binom[q4[1], 2] + binom[q4[2], 3]
                            qi += binom[q4[3], 4]
                            sw = int(sq[c, qi, 0])
                            swa = int(sq[c, qi, 1])
                            sl = int(sq[c, qi, 2])
                            if pass_ == 0:
                                tsum += sw - sl
                                continue
                            tb = 1 if tsum > 0 else 0
                            rb = 1 if sw - sl > 0 else 0
                            x = 2 + tb + rb
                            rbits[c, qi] = rb
                            ev += swa + x * (sw - sl) - sl
                            m2 += sw * x * x + swa * (2 * x + 1) + sl * (x + 1) * (x + 1)
                            nriver += rb
                    if tsum > 0:
                        nturn += 1
                        tbits[c, binom[a, 1] + binom[b, 2] + binom[d, 3]] = 1
        out[c, 0] = ev
        out[c, 1] = m2
        out[c, 2] = nturn
        out[c, 3] = nriver


def thb_classes(sq: Any, tbits: Any = None, rbits: Any = None) -> list[dict[str, Any]]:
    """Per class: call and fold sums, decision, and the chosen path's statistics; the turn
    and river decisions into ``tbits`` (169 × 22,100) and ``rbits`` (169 × 270,725)."""
    reps1 = np.array([c.cards[0] for c in CLASSES], np.int64)
    reps2 = np.array([c.cards[1] for c in CLASSES], np.int64)
    res = np.zeros((len(CLASSES), 4), np.int64)
    if tbits is None or rbits is None:
        tbits = np.zeros((len(CLASSES), 22100), np.uint8)
        rbits = np.zeros((len(CLASSES), 270725), np.uint8)
    _thb_all(sq, reps1, reps2, res, tbits, rbits)
    out = []
    for c, hc in enumerate(CLASSES):
        ev, m2, nturn, nriver = (int(x) for x in res[c])
        call = ev > -THB_DEALS
        out.append(
            {
                "class": hc.label,
                "weight": hc.weight,
                "decision": "call" if call else "fold",
                "sum_call": ev,
                "sum_fold": -THB_DEALS,
                "sum_sq": m2 if call else THB_DEALS,
                "turn_bets": nturn if call else 0,
                "river_bets": nriver if call else 0,
            }
        )
    return out
