"""Levels, clock and button/blind positions (seed 000 §1, "The Dealer Button", "The Blinds")."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml
from electric_domain.tournament.schedule import (
    ButtonRule,
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
def test_next_positions_big_blind_forward(
    rule: str, prev: Positions, live: list[int], expected: Positions
) -> None:
    """The configurable ``button_rule: big_blind_forward`` (the rule before issue 11):
    heads-up button is SB; no BB twice in a row."""
    got = next_positions(prev, live, 3, ButtonRule.BIG_BLIND_FORWARD)
    assert got == expected, rule
    assert got.big_blind != prev.big_blind


@pytest.mark.parametrize(
    ("rule", "prev", "live", "expected"),
    [
        ("3-handed: the button moves one seat", Positions(0, 1, 2), [0, 1, 2], Positions(1, 2, 0)),
        ("3-handed wraps", Positions(2, 0, 1), [0, 1, 2], Positions(0, 1, 2)),
        (
            "BB busts: button to seat 1 (= SB heads-up)",
            Positions(0, 1, 2),
            [0, 1],
            Positions(1, 1, 0),
        ),
        (
            "SB busts: button to the next player, seat 2",
            Positions(0, 1, 2),
            [0, 2],
            Positions(2, 2, 0),
        ),
        (
            "issue 11 / seed rule 11: the button player busts -> the button moves to the next "
            "player (seat 1), not a seat further",
            Positions(0, 1, 2),
            [1, 2],
            Positions(1, 1, 2),
        ),
        ("heads-up alternates", Positions(1, 1, 0), [0, 1], Positions(0, 0, 1)),
    ],
)
def test_next_positions_seed_rule_11(
    rule: str, prev: Positions, live: list[int], expected: Positions
) -> None:
    """rule=seed 000 §11 "The Next Hand": the dealer button is moved clockwise to the next
    player (the default ``button_rule: next_player``)."""
    assert next_positions(prev, live, 3) == expected, rule
    assert next_positions(prev, live, 3, ButtonRule.NEXT_PLAYER) == expected, rule
    assert expected.button == next(
        (prev.button + k) % 3 for k in (1, 2, 3) if (prev.button + k) % 3 in live
    )


def test_button_rule_is_validated_and_defaults_to_seed_rule_11() -> None:
    from electric_domain.tournament import default_config
    from electric_domain.tournament.config import ConfigError, parse_config

    assert default_config().button_rule is ButtonRule.NEXT_PLAYER
    raw = yaml.safe_load(
        resources.files("electric_domain.tournament.config")
        .joinpath("electric-v1.yaml")
        .read_text("utf-8")
    )
    raw["button_rule"] = "big_blind_forward"
    assert parse_config(raw).button_rule is ButtonRule.BIG_BLIND_FORWARD
    del raw["button_rule"]
    assert parse_config(raw).button_rule is ButtonRule.NEXT_PLAYER
    raw["button_rule"] = "dead_button"
    with pytest.raises(ConfigError, match="button_rule: expected one of"):
        parse_config(raw)


def test_heads_up_first_positions() -> None:
    assert first_positions(2, [0, 2], 3) == Positions(2, 2, 0)
