"""Levels, clock and button/blind positions (seed 000 §1, "The Dealer Button", "The Blinds")."""

from __future__ import annotations

import pytest
from electric_domain.tournament.schedule import (
    Positions,
    clock_expired,
    first_positions,
    level_index,
    next_positions,
)

L = 120_000


@pytest.mark.parametrize(
    ("elapsed", "levels", "index", "expired"),
    [
        (0, 3, 0, False),
        (L - 1, 3, 0, False),
        (L, 3, 1, False),
        (3 * L - 1, 3, 2, False),
        (3 * L, 3, 2, True),
        (10 * L, 3, 2, True),
        (5 * L, 6, 5, False),
        (6 * L, 6, 5, True),
    ],
)
def test_levels_advance_every_two_minutes(
    elapsed: int, levels: int, index: int, expired: bool
) -> None:
    """rule=seed 000 §1: blind levels are two minutes; 0:00 after levels × 2 min."""
    assert level_index(elapsed, L, levels) == index
    assert clock_expired(elapsed, L, levels) is expired


@pytest.mark.parametrize(
    ("rule", "button", "expected"),
    [
        (
            "The Dealer Button: 3-handed SB is left of the button, BB left of SB",
            0,
            Positions(0, 1, 2),
        ),
        ("3-handed, button on seat 1", 1, Positions(1, 2, 0)),
        ("3-handed, button on seat 2", 2, Positions(2, 0, 1)),
    ],
)
def test_first_hand_positions(rule: str, button: int, expected: Positions) -> None:
    assert first_positions(button, [0, 1, 2], 3) == expected, rule


@pytest.mark.parametrize(
    ("rule", "prev", "live", "expected"),
    [
        (
            "The Next Hand: button moves clockwise 3-handed",
            Positions(0, 1, 2),
            [0, 1, 2],
            Positions(1, 2, 0),
        ),
        ("3-handed wraps", Positions(2, 0, 1), [0, 1, 2], Positions(0, 1, 2)),
        (
            "heads-up after the BB busts: BB to next live, button posts SB",
            Positions(0, 1, 2),
            [0, 1],
            Positions(1, 1, 0),
        ),
        ("heads-up after the SB busts", Positions(0, 1, 2), [0, 2], Positions(2, 2, 0)),
        ("heads-up after the button busts", Positions(0, 1, 2), [1, 2], Positions(2, 2, 1)),
        (
            "heads-up alternates: button=SB moves each hand",
            Positions(1, 1, 0),
            [0, 1],
            Positions(0, 0, 1),
        ),
    ],
)
def test_next_positions(rule: str, prev: Positions, live: list[int], expected: Positions) -> None:
    """rule=seed 000 "The Dealer Button" (heads-up button is SB); no BB twice in a row."""
    got = next_positions(prev, live, 3)
    assert got == expected, rule
    assert got.big_blind != prev.big_blind


def test_heads_up_first_positions() -> None:
    assert first_positions(2, [0, 2], 3) == Positions(2, 2, 0)
