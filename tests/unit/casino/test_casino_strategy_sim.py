"""Strategies (published basic, optimal) and the seeded simulator."""

from __future__ import annotations

import pytest
from electric_domain.cards import parse_cards
from electric_domain.casino.uth.strategy import BasicStrategy, dealer_outs
from electric_math.casino_sim import simulate
from electric_math.classes import BY_LABEL
from electric_math.strategy import OptimalThb, OptimalUth, class_decisions


@pytest.mark.parametrize(
    ("hole", "action"),
    [("3c3d", "play_4x"), ("2c2d", "check"), ("Ah2c", "play_4x"), ("Ks2s", "play_4x"),
     ("Kc4d", "check"), ("Kc5d", "play_4x"), ("Qs6s", "play_4x"), ("Qs5s", "check"),
     ("Qc8d", "play_4x"), ("Qc7d", "check"), ("Js8s", "play_4x"), ("JcTd", "play_4x"),
     ("Jc9d", "check"), ("9c8c", "check")],
)  # fmt: skip
def test_casino_basic_preflop(hole: str, action: str) -> None:
    assert BasicStrategy().preflop(parse_cards(hole)) == action


def test_casino_basic_preflop_is_the_optimal_preflop() -> None:
    # the published simple rule is the optimal pre-flop rule, class by class
    table = class_decisions("uth")
    basic = BasicStrategy()
    differ = [
        label for label, d in table.items()
        if (basic.preflop(BY_LABEL[label].cards) == "play_4x") != (d == "4x")
    ]  # fmt: skip
    assert differ == []


def test_casino_basic_flop_and_river() -> None:
    b = BasicStrategy()
    assert b.flop(parse_cards("Ah7c"), parse_cards("7d2s9h")) == "play_2x"  # hidden pair
    assert b.flop(parse_cards("2h2c"), parse_cards("7d5s9h")) == "check"  # pocket deuces
    assert b.flop(parse_cards("Th3c"), parse_cards("2h5h9h")) == "play_2x"  # 4-flush, hidden T
    assert b.flop(parse_cards("9h3c"), parse_cards("2h5hKh")) == "check"  # 4-flush, hidden 9
    assert b.river(parse_cards("Kh7c"), parse_cards("Kd2s9h4c3d")) == "play_1x"
    hole, board = parse_cards("4h3c"), parse_cards("KdQsJh9c7d")
    assert dealer_outs(hole, board) >= 21 and b.river(hole, board) == "fold"


def test_casino_optimal_decisions() -> None:
    u = OptimalUth()
    assert u.preflop(parse_cards("AsAd")) == "play_4x"
    assert u.preflop(parse_cards("7c2d")) == "check"
    assert u.flop(parse_cards("7c2d"), parse_cards("7h7s2h")) == "play_2x"  # full house
    assert u.flop(parse_cards("7c2d"), parse_cards("KhQsJh")) == "check"
    assert u.river(parse_cards("7c2d"), parse_cards("7h7s2hKdQc")) == "play_1x"
    assert u.river(parse_cards("3c2d"), parse_cards("AhKsQhJd9c")) == "fold"
    t = OptimalThb()
    assert t.preflop(parse_cards("7c2d")) == "fold"
    assert t.preflop(parse_cards("7c2c")) == "call_flop"
    assert t.turn(parse_cards("AcAd"), parse_cards("As7h2c")) == "bet"
    assert t.river(parse_cards("3c2d"), parse_cards("AhKsQhJd")) == "check"


@pytest.mark.parametrize("game", ["thb", "uth"])
def test_casino_small_simulation_is_seeded_and_near_exact(game: str) -> None:
    a = simulate(game, 40_000, seed=5, progress=False, chunk=20_000)
    b = simulate(game, 40_000, seed=5, progress=False, chunk=20_000)
    assert (a.mean, a.sd, a.path) == (b.mean, b.sd, b.path)
    assert abs(a.z) < 4  # a seeded run: fixed outcome, far inside 4 standard errors
