"""The optimal strategies (argmax of the exact enumeration) for bots and the simulator.

Pre-flop decisions come from the stored per-class tables (``data/uth.json``,
``data/thb.json``); later decisions are computed exactly on the spot by the same integer
arithmetic as the enumeration (a few milliseconds: every turn/river and dealer hand for a
flop decision, every dealer hand for a river decision). Ties go to the smaller stake.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from electric_domain.casino.common.config import CasinoConfig, load_config
from numba import njit

from electric_math import check, kernel, tables
from electric_math.classes import class_of
from electric_math.solve import blind_half_units

DATA = Path(__file__).parent / "data"


@lru_cache(maxsize=4)
def class_decisions(game: str) -> dict[str, str]:
    """``{class label: pre-flop decision}`` from the stored table of ``game``."""
    doc = json.loads((DATA / f"{game}.json").read_text("utf-8"))
    return {row["class"]: row["decision"] for row in doc["classes"]}


@njit(cache=True)
def dealer_counts(p1: int, p2: int, board: Any, nf: Any, ft: Any, off: Any) -> Any:
    """``[wins, ties, non-qualifying wins, non-qualifying losses]`` over the 990 dealer
    hands, for the player's ``p1``/``p2`` on a 5-card ``board``."""
    rp = np.zeros((13, 13), np.int32)
    sc = np.zeros(4, np.int64)
    sm = np.zeros(4, np.int64)
    used = np.zeros(52, np.bool_)
    fs = kernel.prep_board(board, nf, off, rp, sc, sm, used)
    pr = kernel.rank_with(p1, p2, rp, fs, sc, sm, ft)
    dl = np.zeros(45, np.int64)
    n = 0
    for c in range(52):
        if not used[c] and c != p1 and c != p2:
            dl[n] = c
            n += 1
    out = np.zeros(4, np.int64)
    kernel.count_dealers(dl, n, pr, rp, fs, sc, sm, ft, out)
    return out


def _counts(hole: Sequence[int], board: Sequence[int]) -> Any:
    return dealer_counts(
        hole[0], hole[1], np.asarray(board, np.int64),
        tables.nonflush_table(), tables.flush_table(), tables.offsets(),
    )  # fmt: skip


def _flop_sums(hole: Sequence[int], flop: Sequence[int], cfg: CasinoConfig) -> tuple[Any, Any]:
    uth = np.zeros((1, 12), np.int64)
    thb = np.zeros((1, 4), np.int64)
    trips = np.zeros((1, 10), np.int64)
    check._class_kernel(
        hole[0], hole[1], np.asarray([sorted(flop)], np.int64), tables.nonflush_table(),
        tables.flush_table(), tables.offsets(), np.asarray(blind_half_units(cfg), np.int64),
        cfg.thb.ante_pays_from, uth, thb, trips,
    )  # fmt: skip
    return uth[0], thb[0]


class OptimalUth:
    """Optimal UTH play (same interface as :class:`electric_domain.casino.uth.strategy.
    BasicStrategy`)."""

    def __init__(self, config: CasinoConfig | None = None) -> None:
        self.config = config or load_config()
        self._b2 = blind_half_units(self.config)

    def preflop(self, hole: Sequence[int]) -> str:
        d = class_decisions("uth")[class_of(hole[0], hole[1]).label]
        return {"4x": "play_4x", "3x": "play_3x"}.get(d, "check")

    def flop(self, hole: Sequence[int], flop: Sequence[int]) -> str:
        uth, _ = _flop_sums(hole, flop, self.config)
        return "play_2x" if uth[0] > uth[1] else "check"

    def river(self, hole: Sequence[int], board: Sequence[int]) -> str:
        w, t, wn, ln = (int(x) for x in _counts(hole, board))
        from electric_domain.casino.common.deal import category_index
        from electric_domain.evaluator import rank

        b2 = self._b2[category_index(rank([*hole, *board]))]
        lose = 990 - w - t
        v1 = (w - wn) * (4 + b2) + wn * (2 + b2) - (lose - ln) * 6 - ln * 4
        return "play_1x" if v1 > -3960 else "fold"


class OptimalThb:
    """Optimal THB play: ``preflop`` → "call_flop"/"fold", ``turn``/``river`` → "bet"/"check"."""

    def __init__(self, config: CasinoConfig | None = None) -> None:
        self.config = config or load_config()

    def preflop(self, hole: Sequence[int]) -> str:
        d = class_decisions("thb")[class_of(hole[0], hole[1]).label]
        return "call_flop" if d == "call" else "fold"

    def turn(self, hole: Sequence[int], flop: Sequence[int]) -> str:
        _, thb = _flop_sums(hole, flop, self.config)
        return "bet" if thb[2] else "check"

    def river(self, hole: Sequence[int], board4: Sequence[int]) -> str:
        seen = {*hole, *board4}
        total = 0
        for c in range(52):
            if c not in seen:
                w, t, _, _ = (int(x) for x in _counts(hole, [*board4, c]))
                total += w - (990 - w - t)
        return "bet" if total > 0 else "check"
