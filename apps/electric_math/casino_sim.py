"""Seeded Monte Carlo of THB and UTH rounds under the optimal strategy (``make simulate-casino``).

Decisions come from the enumeration's stored tables: the pre-flop class decision
(``data/{thb,uth}.json``) and the packed per-flop / per-turn decisions
(``data/strategy_bits.npz``), looked up after mapping the hand to its class representative by
a suit permutation; the UTH river decision is computed exactly on the spot (every dealer
hand). Rounds run in numba in chunks of ``--chunk``, each seeded from (seed, game, chunk), so
a run is reproducible; a progress bar shows the rounds done. The observed RTP per Ante is
compared with the exact figure: it should lie within 3 standard errors.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
from electric_domain.casino.common.config import load_config
from numba import njit
from tqdm import tqdm

from electric_math import kernel as k
from electric_math import tables
from electric_math.solve import blind_half_units, trips_units

DATA = Path(__file__).parent / "data"


@dataclass(frozen=True, slots=True)
class SimResult:
    game: str
    rounds: int
    mean: float  # net per round, Antes
    sd: float
    exact_ev: float
    trips_mean: float  # UTH: Trips net per Trips bet
    path: list[float]  # cumulative net (Antes) every ``len(rounds) / len(path)`` rounds
    seconds: float

    @property
    def se(self) -> float:
        return self.sd / math.sqrt(self.rounds)

    @property
    def z(self) -> float:
        return (self.mean - self.exact_ev) / self.se


def load_bits() -> dict[str, Any]:
    with np.load(DATA / "strategy_bits.npz") as z:
        return {
            "uth_flop": np.unpackbits(z["uth_flop"], axis=1)[:, :22100].astype(np.uint8),
            "thb_turn": np.unpackbits(z["thb_turn"], axis=1)[:, :22100].astype(np.uint8),
            "thb_river": np.unpackbits(z["thb_river"], axis=1)[:, :270725].astype(np.uint8),
        }


def class_codes(game: str) -> Any:
    doc = json.loads((DATA / f"{game}.json").read_text("utf-8"))
    code = {"check": 0, "3x": 3, "4x": 4, "fold": 0, "call": 1}
    return np.array([code[r["decision"]] for r in doc["classes"]], np.int64)


@njit(cache=True)
def _class_and_perm(a: int, b: int, perm: Any) -> int:
    """Class index of hole cards ``a``/``b`` and the suit map onto its representative."""
    ra, rb = a >> 2, b >> 2
    if rb > ra or (rb == ra and (b & 3) < (a & 3)):
        a, b, ra, rb = b, a, rb, ra
    sa, sb = a & 3, b & 3
    for s in range(4):
        perm[s] = -1
    perm[sa] = 0
    if sb != sa:
        perm[sb] = 1
    nxt = 1 if sb == sa else 2
    for s in range(4):
        if perm[s] < 0:
            perm[s] = nxt
            nxt += 1
    if ra == rb:
        return (12 - ra) * 14
    if sa == sb:
        return (12 - ra) * 13 + (12 - rb)
    return (12 - rb) * 13 + (12 - ra)


@njit(cache=True)
def _index(cards: Any, n: int, perm: Any) -> int:
    """Colex index of the first ``n`` cards after the suit map."""
    m = np.empty(n, np.int64)
    for i in range(n):
        m[i] = (cards[i] & ~3) | perm[cards[i] & 3]
    m.sort()
    q = 0
    for i in range(n):
        q += k.BINOM[m[i], i + 1]
    return q


@njit(cache=True)
def _chunk(
    game: int, n: int, seed: int, nf: Any, ft: Any, off: Any, codes: Any, b1: Any, b2: Any,
    blind2: Any, trips: Any, ante_cat: int, out: Any, path: Any, every: int,
) -> None:  # fmt: skip
    """Play ``n`` rounds; out = [sum, sum of squares, trips sum] (half-Antes for UTH)."""
    np.random.seed(seed)
    deck = np.arange(52)
    perm = np.zeros(4, np.int64)
    rp = np.zeros((13, 13), np.int32)
    sc = np.zeros(4, np.int64)
    sm = np.zeros(4, np.int64)
    used = np.zeros(52, np.bool_)
    board = np.zeros(5, np.int64)
    dl = np.zeros(45, np.int64)
    cnt = np.zeros(4, np.int64)
    cum = 0.0
    for i in range(n):
        for j in range(9):  # partial Fisher–Yates
            r = j + np.random.randint(0, 52 - j)
            deck[j], deck[r] = deck[r], deck[j]
        p1, p2, d1, d2 = deck[0], deck[1], deck[2], deck[3]
        for j in range(5):
            board[j] = deck[4 + j]
        c = _class_and_perm(p1, p2, perm)
        fs = k.prep_board(board, nf, off, rp, sc, sm, used)
        pr = k.rank_with(p1, p2, rp, fs, sc, sm, ft)
        dr = k.rank_with(d1, d2, rp, fs, sc, sm, ft)
        cat = k.category(pr)
        net = 0
        if game == 0:  # UTH, half-Antes
            mult = codes[c]
            if mult == 0 and b1[c, _index(board, 3, perm)] == 1:
                mult = 2
            if mult == 0:  # river: exact, against every dealer hand
                n_dl = 0
                for x in range(52):
                    if not used[x] and x != p1 and x != p2:
                        dl[n_dl] = x
                        n_dl += 1
                k.count_dealers(dl, n_dl, pr, rp, fs, sc, sm, ft, cnt)
                w, t, wn, ln = cnt[0], cnt[1], cnt[2], cnt[3]
                lose = 990 - w - t
                v1 = (w - wn) * (4 + blind2[cat]) + wn * (2 + blind2[cat])
                v1 -= (lose - ln) * 6 + ln * 4
                mult = 1 if v1 > -3960 else -1
            if mult < 0:
                net = -4
            else:
                qual = k.category(dr) >= 1
                if pr > dr:
                    net = (2 if qual else 0) + 2 * mult + blind2[cat]
                elif pr < dr:
                    net = -(2 if qual else 0) - 2 * mult - 2
            out[2] += trips[cat]
        else:  # THB, Antes
            if codes[c] == 0:
                net = -1
            else:
                tb = b1[c, _index(board, 3, perm)]
                rb = b2[c, _index(board, 4, perm)]
                if pr > dr:
                    net = (1 if cat >= ante_cat else 0) + 2 + tb + rb
                elif pr < dr:
                    net = -(3 + tb + rb)
        out[0] += net
        out[1] += net * net
        cum += net
        if (i + 1) % every == 0:
            path[(i + 1) // every - 1] = cum


def simulate(
    game: str, rounds: int, seed: int = 1, *, chunk: int = 200_000, progress: bool = True,
    points: int = 1000,
) -> SimResult:  # fmt: skip
    cfg = load_config()
    bits = load_bits()
    codes = class_codes(game)
    gi = 0 if game == "uth" else 1
    b1 = bits["uth_flop"] if gi == 0 else bits["thb_turn"]
    b2 = bits["thb_river"]
    unit = 2.0 if gi == 0 else 1.0
    out = np.zeros(3, np.int64)
    every = max(1, rounds // points)
    t0 = time.monotonic()
    path: list[float] = []
    offset = 0.0
    done = 0
    ss = np.random.SeedSequence([seed, gi])
    with tqdm(total=rounds, unit="round", desc=game, disable=not progress) as bar:
        for idx, child in enumerate(ss.spawn(-(-rounds // chunk))):
            n = min(chunk, rounds - idx * chunk)
            part = np.zeros(max(1, n // every), np.float64)
            o = np.zeros(3, np.int64)
            _chunk(
                gi, n, int(child.generate_state(1)[0]), tables.nonflush_table(),
                tables.flush_table(), tables.offsets(), codes, b1, b2,
                np.asarray(blind_half_units(cfg), np.int64),
                np.asarray(trips_units(cfg), np.int64), cfg.thb.ante_pays_from, o, part,
                every if n >= every else n + 1,
            )  # fmt: skip
            path.extend((offset + x / unit) for x in part[: n // every])
            offset += o[0] / unit
            out += o
            done += n
            bar.update(n)
    mean = out[0] / unit / rounds
    var = out[1] / unit**2 / rounds - mean * mean
    doc = json.loads((DATA / f"{game}.json").read_text("utf-8"))
    ev = float(Fraction(doc["figures"]["ev_per_ante"]))
    return SimResult(game, rounds, mean, math.sqrt(var), ev, out[2] / rounds, path,
                     time.monotonic() - t0)  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m electric_math.casino_sim", description=__doc__)
    ap.add_argument("-n", type=int, default=10_000_000, help="rounds per game")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--games", default="thb,uth")
    args = ap.parse_args(argv)
    worst = 0.0
    for game in args.games.split(","):
        r = simulate(game, args.n, args.seed)
        worst = max(worst, abs(r.z))
        line = (
            f"{game}: {r.rounds:,} rounds in {r.seconds:.0f} s — RTP/Ante observed "
            f"{1 + r.mean:.6f} ± {r.se:.6f} (SE), exact {1 + r.exact_ev:.6f}, z = {r.z:+.2f}"
        )
        if game == "uth":
            line += f"; Trips RTP observed {1 + r.trips_mean:.5f}"
        print(line)
    print("within 3 standard errors" if worst <= 3 else "OUTSIDE 3 standard errors")
    return 0 if worst <= 3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
