"""Exhaustive evaluator checks (``make exhaustive``; marker ``slow``).

Five cards: all 2,598,960 hands. Seven cards: all 133,784,560 combinations, enumerated with
``itertools.combinations`` and evaluated through ``itertools.starmap`` over the native
evaluator, counted with ``collections.Counter`` — the whole loop runs in C (no Python frame
per hand), roughly a minute on one core. A progress bar (tqdm) follows it slice by slice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from itertools import combinations, islice, starmap
from math import comb

import pytest
from electric_domain.evaluator import WORST, Category, _e5, _e7, category_of

from tests.support.progress import progress

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _only_when_selected(request: pytest.FixtureRequest) -> None:
    """Run only when slow tests are selected (``make exhaustive`` = ``pytest -m slow``)."""
    expr = str(request.config.getoption("markexpr") or "")
    if "slow" not in expr or "not slow" in expr:
        pytest.skip("exhaustive check: run with `make exhaustive` (pytest -m slow)")


_FIVE = {
    Category.STRAIGHT_FLUSH: 40,
    Category.FOUR_OF_A_KIND: 624,
    Category.FULL_HOUSE: 3_744,
    Category.FLUSH: 5_108,
    Category.STRAIGHT: 10_200,
    Category.THREE_OF_A_KIND: 54_912,
    Category.TWO_PAIR: 123_552,
    Category.PAIR: 1_098_240,
    Category.HIGH_CARD: 1_302_540,
}
#: Hands per slice between progress updates (about 15% slower than one unbroken loop).
_SLICE = 1 << 20

_SEVEN = {
    Category.STRAIGHT_FLUSH: 41_584,
    Category.FOUR_OF_A_KIND: 224_848,
    Category.FULL_HOUSE: 3_473_184,
    Category.FLUSH: 4_047_644,
    Category.STRAIGHT: 6_180_020,
    Category.THREE_OF_A_KIND: 6_461_620,
    Category.TWO_PAIR: 31_433_400,
    Category.PAIR: 58_627_800,
    Category.HIGH_CARD: 23_294_460,
}


def _by_category(raw_counts: Counter[int]) -> dict[Category, int]:
    out: Counter[Category] = Counter()
    for raw, k in raw_counts.items():
        out[category_of(WORST - raw)] += k
    return dict(out)


def _enumerate(
    capsys: pytest.CaptureFixture[str], evaluate: Callable[..., int], size: int
) -> Counter[int]:
    """Raw values of every ``size``-card hand: the one C loop, cut into slices of 2**20
    hands (``islice``) so the progress bar can advance between them."""
    counts: Counter[int] = Counter()
    hands = combinations(range(52), size)
    with progress(capsys, comb(52, size), f"{size}-card hands", "hand") as bar:
        while chunk := Counter(starmap(evaluate, islice(hands, _SLICE))):
            counts.update(chunk)
            bar.update(chunk.total())
    return counts


def test_all_five_card_hands(capsys: pytest.CaptureFixture[str]) -> None:
    counts = _enumerate(capsys, _e5, 5)
    assert sum(counts.values()) == 2_598_960
    assert len(counts) == 7_462  # every equivalence class, nothing else
    assert _by_category(counts) == _FIVE


def test_all_seven_card_hands(capsys: pytest.CaptureFixture[str]) -> None:
    counts = _enumerate(capsys, _e7, 7)
    assert sum(counts.values()) == 133_784_560
    assert len(counts) == 4_824  # distinct 7-card hand values
    assert _by_category(counts) == _SEVEN
