"""Finishing places and prizes (seed 000 "Prizes Awarded"; docs/design.md §5 finishing places)."""

from __future__ import annotations

import pytest
from electric_domain.tournament.config import default_config
from electric_domain.tournament.prizes import (
    Finish,
    award,
    place_amounts,
    rank_busts,
    split_group,
)


@pytest.mark.parametrize(
    ("pool", "shares", "expected"),
    [
        (200, (1,), (200, 0, 0)),
        (10_000, (80, 10, 10), (8_000, 1_000, 1_000)),
        (50_000_000, (80, 10, 10), (40_000_000, 5_000_000, 5_000_000)),
        (1_001, (80, 10, 10), (801, 100, 100)),  # 800.8/100.1/100.1 -> floors, rest to 1st
        (7, (1, 1, 1), (3, 2, 2)),
    ],
)
def test_place_amounts_sum_exactly(
    pool: int, shares: tuple[int, ...], expected: tuple[int, ...]
) -> None:
    """rule=docs/design.md §5 prizes in cents: floor per place, remainder cents to 1st place."""
    got = place_amounts(pool, shares, 3)
    assert got == expected
    assert sum(got) == pool


@pytest.mark.parametrize(
    ("case", "busted", "left", "expected"),
    [
        ("one bust 3-handed", {2: 300}, 2, [((3,), (2,))]),
        (
            "two busts, different stacks: smaller finishes lower",
            {0: 100, 2: 250},
            1,
            [((2,), (2,)), ((3,), (0,))],
        ),
        ("two busts, equal stacks: share places 2 and 3", {0: 200, 1: 200}, 1, [((2, 3), (0, 1))]),
        ("heads-up bust", {1: 900}, 1, [((2,), (1,))]),
    ],
)
def test_rank_busts(
    case: str,
    busted: dict[int, int],
    left: int,
    expected: list[tuple[tuple[int, ...], tuple[int, ...]]],
) -> None:
    """rule=seed 000 "Prizes Awarded": same-hand eliminations ordered by start-of-hand chips."""
    assert [(f.places, f.seats) for f in rank_busts(busted, left)] == expected, case


def test_seed_example_equal_stacks_share_100_and_50() -> None:
    """rule=seed 000 "Prizes Awarded" example: 2nd $100, 3rd $50, equal stacks -> $75 each."""
    amounts = (20_000, 10_000, 5_000)  # 1st, 2nd $100, 3rd $50 (cents)
    shares = split_group(amounts, Finish((2, 3), (0, 2)), button=1, table_size=3)
    assert shares == {0: 7_500, 2: 7_500}


def test_seed_example_different_stacks() -> None:
    """rule=seed 000 "Prizes Awarded": different stacks -> bigger stack takes 2nd ($100)."""
    (second, third) = rank_busts({0: 120, 2: 80}, 1)
    amounts = (20_000, 10_000, 5_000)
    assert split_group(amounts, second, 1, 3) == {0: 10_000}
    assert split_group(amounts, third, 1, 3) == {2: 5_000}


@pytest.mark.parametrize(
    ("button", "expected"),
    [(0, {1: 51, 2: 50}), (1, {2: 51, 1: 50}), (2, {1: 51, 2: 50})],
)
def test_tie_remainder_goes_clockwise_from_button(button: int, expected: dict[int, int]) -> None:
    """rule=DESIGN §5 "cents remainder to a documented rule": first tied seat left of button."""
    amounts = (0, 61, 40)  # 2nd + 3rd = 101 cents between two tied players
    assert split_group(amounts, Finish((2, 3), (1, 2)), button, 3) == expected


@pytest.mark.parametrize("multiplier", [2, 3, 4, 5, 10, 100, 1000, 10_000])
@pytest.mark.parametrize("buy_in", [100, 500, 1000, 2500, 5000])
def test_award_sums_to_pool_for_every_tier(multiplier: int, buy_in: int) -> None:
    """rule=docs/design.md §5: prize pool = multiplier × gross buy-in, paid exactly."""
    cfg = default_config()
    pool = cfg.prize_pool_cents(multiplier, buy_in)
    shares = cfg.pay_table.entry(multiplier).shares
    for finishes in (
        [(Finish((3,), (0,)), 0), (Finish((2,), (1,)), 1), (Finish((1,), (2,)), 1)],
        [(Finish((2, 3), (0, 1)), 2), (Finish((1,), (2,)), 2)],
    ):
        prizes = award(pool, shares, finishes, 3)
        assert sum(prizes.values()) == pool
    if len(shares) == 1:
        assert award(pool, shares, [(Finish((2, 3), (0, 1)), 2), (Finish((1,), (2,)), 2)], 3) == {
            0: 0,
            1: 0,
            2: pool,
        }
