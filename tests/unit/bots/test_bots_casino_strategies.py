"""Casino bot strategies and the runner's bookkeeping (pure: no services)."""

from __future__ import annotations

import random

import pytest
from electric.table.v1 import casino_pb2
from electric_bots.casino import thb_decision, thb_strategy
from electric_bots.casino_runner import DEFAULT_UTH_MIX, parse_casino_mix, spread
from electric_bots.casino_uth import UTH_STRATEGIES, uth_decision, uth_strategy
from electric_domain.casino.thb.strategy import SimpleThb


def card(rank: str, suit: str) -> int:
    return "23456789TJQKA".index(rank) * 4 + "cdhs".index(suit)


def test_simple_thb_folds_only_deuce_with_offsuit_three_to_seven() -> None:
    s = SimpleThb()
    folded = {(a, b) for a in range(52) for b in range(52) if a < b and s.preflop([a, b]) == "fold"}
    assert len(folded) == 5 * 12  # 32o..72o: 5 classes of 12 offsuit combinations
    assert s.preflop([card("2", "c"), card("8", "d")]) == "call_flop"
    assert s.preflop([card("2", "c"), card("7", "c")]) == "call_flop"  # suited
    assert s.preflop([card("2", "c"), card("7", "d")]) == "fold"


def test_simple_thb_bets_a_hidden_pair_and_checks_a_board_pair() -> None:
    s = SimpleThb()
    hole = [card("K", "c"), card("9", "d")]
    assert s.turn(hole, [card("K", "h"), card("4", "s"), card("2", "c")]) == "bet"
    # The pair is on the board only: check.
    assert s.turn(hole, [card("4", "h"), card("4", "s"), card("2", "c")]) == "check"
    # Four to a flush with a hole card.
    assert s.turn(hole, [card("4", "c"), card("7", "c"), card("2", "c")]) == "bet"
    board4 = [card("4", "h"), card("4", "s"), card("2", "c"), card("J", "d")]
    assert s.river(hole, board4) == "check"
    assert s.river(hole, [*board4[:3], card("9", "h")]) == "bet"


def test_thb_decision_follows_the_buttons_and_both_strategies_answer() -> None:
    rng = random.Random(5)
    for name in ("simple", "optimal"):
        strategy = thb_strategy(name)
        for _ in range(5):
            cards = rng.sample(range(52), 6)
            pre = casino_pb2.CasinoRoundView(player_cards=cards[:2], legal=["fold", "call_flop"])
            assert thb_decision(strategy, pre) in ("fold", "call_flop")
            turn = casino_pb2.CasinoRoundView(
                player_cards=cards[:2], board=cards[2:5], legal=["check", "bet_turn"]
            )
            assert thb_decision(strategy, turn) in ("bet", "check")
            river = casino_pb2.CasinoRoundView(
                player_cards=cards[:2], board=cards[2:6], legal=["check", "bet_river"]
            )
            assert thb_decision(strategy, river) in ("bet", "check")
    with pytest.raises(ValueError):
        thb_decision(SimpleThb(), casino_pb2.CasinoRoundView(legal=["new_game"]))
    with pytest.raises(ValueError):
        thb_strategy("reckless")


def test_uth_strategies_and_the_bot_that_never_decides() -> None:
    rng = random.Random(9)
    for name in UTH_STRATEGIES:
        strategy = uth_strategy(name)
        cards = rng.sample(range(52), 7)
        views = [
            casino_pb2.CasinoTableView(
                phase="preflop", player_cards=cards[:2], legal=["play_4x", "play_3x", "check"]
            ),
            casino_pb2.CasinoTableView(
                phase="flop", player_cards=cards[:2], board=cards[2:5], legal=["play_2x", "check"]
            ),
            casino_pb2.CasinoTableView(
                phase="river", player_cards=cards[:2], board=cards[2:7], legal=["play_1x", "fold"]
            ),
        ]
        answers = [uth_decision(strategy, v) for v in views]
        if name == "never":
            assert answers == [None, None, None]
        else:
            for view, answer in zip(views, answers, strict=True):
                assert answer in view.legal
    # Pocket aces: both real strategies raise 4x pre-flop.
    aces = casino_pb2.CasinoTableView(
        phase="preflop", player_cards=[card("A", "c"), card("A", "d")], legal=["play_4x", "check"]
    )
    assert uth_decision(uth_strategy("optimal"), aces) == "play_4x"
    assert uth_decision(uth_strategy("simple"), aces) == "play_4x"


def test_mix_parsing_and_spread() -> None:
    assert parse_casino_mix("optimal:2,simple", ("optimal", "simple")) == (
        ("optimal", 2),
        ("simple", 1),
    )
    with pytest.raises(ValueError):
        parse_casino_mix("magic", ("optimal",))
    with pytest.raises(ValueError):
        parse_casino_mix("optimal:0", ("optimal",))
    names = spread(24, DEFAULT_UTH_MIX)
    assert names.count("never") == 3 and names.count("optimal") == 12
    assert spread(3, (("a", 1), ("b", 1))) == ["a", "b", "a"]
