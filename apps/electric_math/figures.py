"""Exact figures from the per-class tables (pure Python, exact fractions).

Key names (documented in ``docs/casino-math.md``); amounts in Antes, per round, optimal play:
``ev_per_ante`` ("num/den"), ``ev_per_ante_decimal`` (7 places), ``rtp_ante`` = 1 + EV,
``avg_stake``, ``rtp_total`` = 1 + EV / avg_stake, ``sd``; UTH: ``p_play_4x``, ``p_play_3x``,
``p_play_2x``, ``p_play_1x``, ``p_fold``, ``trips_rtp``; THB: ``p_call_flop``, ``p_bet_turn``,
``p_bet_river``. Every RTP/probability is a fraction of 1, given as a decimal string to 7
places and, under ``exact``, as "num/den".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction
from typing import Any

from electric_math.solve import (
    BOARDS_PER_CLASS,
    DEALERS,
    FLOPS_PER_CLASS,
    SPLITS,
    THB_DEALS,
    TR_PER_FLOP,
)

COMBOS = 1326


def dec(x: Fraction, places: int = 7) -> str:
    """``x`` rounded half-even to ``places`` decimals, as text."""
    with localcontext() as ctx:
        ctx.prec = 60
        q = Decimal(x.numerator) / Decimal(x.denominator)
        return format(q.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN), "f")


def frac(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def _pack(exact: dict[str, Fraction], sd: Fraction) -> dict[str, Any]:
    out: dict[str, Any] = {"ev_per_ante": frac(exact["ev_per_ante"])}
    out["ev_per_ante_decimal"] = dec(exact["ev_per_ante"])
    for key, value in exact.items():
        if key != "ev_per_ante":
            out[key] = dec(value)
    out["sd"] = f"{math.sqrt(sd):.7f}"
    out["exact"] = {key: frac(value) for key, value in exact.items()}
    out["exact"]["variance"] = frac(sd)
    return out


def uth_figures(rows: Sequence[dict[str, Any]], trips_net: Sequence[int]) -> dict[str, Any]:
    """Figures of UTH from :func:`electric_math.solve.uth_classes` rows."""
    den = COMBOS * SPLITS * DEALERS
    ev = Fraction(sum(r["weight"] * r["sum_" + r["decision"]] for r in rows), 2 * den)
    m2 = Fraction(sum(r["weight"] * r["sum_sq"] for r in rows), 4 * den)
    p4 = Fraction(sum(r["weight"] for r in rows if r["decision"] == "4x"), COMBOS)
    p3 = Fraction(sum(r["weight"] for r in rows if r["decision"] == "3x"), COMBOS)
    p2 = Fraction(sum(r["weight"] * r["flops_2x"] for r in rows), COMBOS * FLOPS_PER_CLASS)
    p1 = Fraction(sum(r["weight"] * r["river_1x"] for r in rows), COMBOS * SPLITS)
    checked = Fraction(
        sum(r["weight"] * r["flops_checked"] * TR_PER_FLOP for r in rows), COMBOS * SPLITS
    )
    pf = checked - p1
    stake = 2 + 4 * p4 + 3 * p3 + 2 * p2 + p1
    trips = Fraction(
        sum(
            r["weight"] * n * (1 + trips_net[cat])
            for r in rows
            for cat, n in enumerate(r["trips_categories"])
        ),
        COMBOS * BOARDS_PER_CLASS,
    )
    odd = Fraction(sum(r["weight"] * r["odd_blind_wins"] for r in rows), den)
    exact = {
        "ev_per_ante": ev,
        "rtp_ante": 1 + ev,
        "avg_stake": stake,
        "rtp_total": 1 + ev / stake,
        "p_play_4x": p4,
        "p_play_3x": p3,
        "p_play_2x": p2,
        "p_play_1x": p1,
        "p_fold": pf,
        "trips_rtp": trips,
        "p_blind_half_unit_win": odd,
    }
    return _pack(exact, m2 - ev * ev)


def thb_figures(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Figures of THB from :func:`electric_math.solve.thb_classes` rows."""
    den = COMBOS * THB_DEALS
    ev = Fraction(sum(r["weight"] * r["sum_" + r["decision"]] for r in rows), den)
    m2 = Fraction(sum(r["weight"] * r["sum_sq"] for r in rows), den)
    pc = Fraction(sum(r["weight"] for r in rows if r["decision"] == "call"), COMBOS)
    pt = Fraction(sum(r["weight"] * r["turn_bets"] for r in rows), COMBOS * FLOPS_PER_CLASS)
    pr = Fraction(sum(r["weight"] * r["river_bets"] for r in rows), COMBOS * FLOPS_PER_CLASS * 47)
    stake = 1 + 2 * pc + pt + pr
    exact = {
        "ev_per_ante": ev,
        "rtp_ante": 1 + ev,
        "avg_stake": stake,
        "rtp_total": 1 + ev / stake,
        "p_call_flop": pc,
        "p_bet_turn": pt,
        "p_bet_river": pr,
    }
    return _pack(exact, m2 - ev * ev)
