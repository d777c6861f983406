"""The CI-sized check of the stored exact math (``make math-check``).

Recomputes a deterministic sample of pre-flop classes with the independent class-centric
algorithm (:mod:`electric_math.check`) and requires every stored per-class figure and every
stored flop-level decision of those classes to match exactly; then recomputes the headline
figures from the stored tables and checks them against the published numbers.
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from electric_domain.casino.common.config import load_config
from electric_math import check, kernel
from electric_math.classes import CLASSES, HandClass
from electric_math.figures import thb_figures, uth_figures
from electric_math.solve import blind_half_units, trips_units

DATA = Path(kernel.__file__).parent / "data"
CFG = load_config()
# Deterministic sample: one suited class recomputed in full (suited classes are the cheapest:
# 6-fold flop symmetry), and the flop-level decisions of one pair class on 40 flops.
_RNG = random.Random(20261201)
SAMPLE = _RNG.sample([c for c in CLASSES if c.label.endswith("s")], 1)
PAIR = _RNG.choice([c for c in CLASSES if c.row == c.col])


def _doc(game: str) -> dict[str, object]:
    return json.loads((DATA / f"{game}.json").read_text("utf-8"))  # type: ignore[no-any-return]


@pytest.mark.parametrize("hc", SAMPLE, ids=lambda c: c.label)
def test_casino_sample_class_matches_stored_tables(hc: HandClass) -> None:
    got = check.recompute_class(hc, blind_half_units(CFG), CFG.thb.ante_pays_from)
    for game in ("uth", "thb"):
        rows = {r["class"]: r for r in _doc(game)["classes"]}  # type: ignore[attr-defined]
        assert got[game] == rows[hc.label], game


@pytest.mark.parametrize("hc", [SAMPLE[0], PAIR], ids=lambda c: c.label)
def test_casino_sample_flop_decisions_match_stored_bits(hc: HandClass) -> None:
    flops, _ = check.canonical_flops(hc)
    pick = flops[:: max(1, len(flops) // 40)][:40]
    from electric_math import tables

    uth = np.zeros((len(pick), 12), np.int64)
    thb = np.zeros((len(pick), 4), np.int64)
    trips = np.zeros((len(pick), 10), np.int64)
    check._class_kernel(
        hc.cards[0], hc.cards[1], pick, tables.nonflush_table(), tables.flush_table(),
        tables.offsets(), np.asarray(blind_half_units(CFG), np.int64),
        CFG.thb.ante_pays_from, uth, thb, trips,
    )  # fmt: skip
    with np.load(DATA / "strategy_bits.npz") as z:
        uf = np.unpackbits(z["uth_flop"], axis=1)
        tt = np.unpackbits(z["thb_turn"], axis=1)
    c = hc.index
    for i, f in enumerate(pick.tolist()):
        fi = int(kernel.BINOM[f[0], 1] + kernel.BINOM[f[1], 2] + kernel.BINOM[f[2], 3])
        assert uf[c, fi] == int(uth[i, 0] > uth[i, 1])
        assert tt[c, fi] == thb[i, 2]


def _pct(x: str) -> str:
    return f"{float(Fraction(x)) * 100:.2f}"


def test_casino_published_figures_reproduce() -> None:
    uth = uth_figures(_doc("uth")["classes"], trips_units(CFG))  # type: ignore[arg-type]
    thb = thb_figures(_doc("thb")["classes"])  # type: ignore[arg-type]
    assert uth == _doc("uth")["figures"] and thb == _doc("thb")["figures"]
    assert _pct(uth["exact"]["rtp_ante"]) == "97.82"
    assert _pct(uth["exact"]["rtp_total"]) == "99.47"
    assert _pct(uth["exact"]["trips_rtp"]) == "96.50"
    assert _pct(thb["exact"]["rtp_ante"]) == "97.96"
    assert _pct(thb["exact"]["rtp_total"]) == "99.47"
