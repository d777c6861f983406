"""Table-driven settlement tests: one row per line of each seed's payout table."""

from __future__ import annotations

import pytest
from electric_domain.cards import parse_cards
from electric_domain.casino.common.config import load_config
from electric_domain.casino.common.money import Outcome, totals
from electric_domain.casino.thb import settlement as thb
from electric_domain.casino.uth import settlement as uth
from electric_domain.evaluator import rank

CFG = load_config()


def r(text: str) -> int:
    return rank(parse_cards(text))


HAND = {
    "royal_flush": r("AsKsQsJsTs"),
    "straight_flush": r("9h8h7h6h5h"),
    "four_of_a_kind": r("7c7d7h7s2c"),
    "full_house": r("KcKdKh4s4c"),
    "flush": r("Ad9d7d5d2d"),
    "straight": r("Tc9d8h7s6c"),
    "three_of_a_kind": r("QcQdQh8s3c"),
    "two_pair": r("JcJd5h5s2c"),
    "pair": r("9c9d7h5s2c"),
    "high_card": r("AcJd8h5s3c"),
}
LOW = r("7c5d4h3s2c")  # the worst hand: loses to everything, never qualifies

# ------------------------------------------------------------------ THB (seed 001 Payouts)

# (line, player, dealer, spot, expected outcome, expected win on 100)
THB_ROWS = [
    ("ante below straight, win", "two_pair", "pair", "ante", Outcome.PUSH, 0),
    ("ante below straight, tie", "two_pair", "two_pair", "ante", Outcome.PUSH, 0),
    ("ante straight or better, win", "straight", "pair", "ante", Outcome.WIN, 100),
    ("ante higher than straight, win", "flush", "straight", "ante", Outcome.WIN, 100),
    ("ante straight or better, tie", "flush", "flush", "ante", Outcome.PUSH, 0),
    ("flop win 1:1", "pair", "high_card", "flop", Outcome.WIN, 200),
    ("flop tie", "pair", "pair", "flop", Outcome.PUSH, 0),
    ("turn win 1:1", "pair", "high_card", "turn", Outcome.WIN, 100),
    ("turn tie", "pair", "pair", "turn", Outcome.PUSH, 0),
    ("river win 1:1", "pair", "high_card", "river", Outcome.WIN, 100),
    ("river tie", "pair", "pair", "river", Outcome.PUSH, 0),
    ("loss: ante loses", "pair", "two_pair", "ante", Outcome.LOSE, 0),
    ("loss: flop loses", "pair", "two_pair", "flop", Outcome.LOSE, 0),
    ("loss with a straight: ante loses", "straight", "flush", "ante", Outcome.LOSE, 0),
]


@pytest.mark.parametrize(("line", "player", "dealer", "spot", "outcome", "win"), THB_ROWS)
def test_casino_thb_payout_line(
    line: str, player: str, dealer: str, spot: str, outcome: Outcome, win: int
) -> None:
    res = thb.settle(
        CFG.thb, ante=100, flop=200, turn=100, river=100, folded=False,
        player_rank=HAND[player], dealer_rank=HAND[dealer],
    )  # fmt: skip
    got = {x.spot: x for x in res}[spot]
    assert (got.outcome, got.win_cents) == (outcome, win), line


def test_casino_thb_fold_loses_ante_only() -> None:
    res = thb.settle(CFG.thb, ante=100, flop=0, turn=0, river=0, folded=True)
    assert [(x.spot, x.outcome) for x in res] == [("ante", Outcome.LOSE)]
    assert totals(res) == (100, 0, 100)


# --------------------------------------------------------------- UTH (seed 004, docs/design.md §7)

BLIND_ROWS = [
    ("royal_flush", 50000),
    ("straight_flush", 5000),
    ("four_of_a_kind", 1000),
    ("full_house", 300),
    ("flush", 150),
    ("straight", 100),
    ("three_of_a_kind", None),
    ("two_pair", None),
    ("pair", None),
]


@pytest.mark.parametrize(("cat", "win"), BLIND_ROWS)
def test_casino_uth_blind_pays_on_a_win(cat: str, win: int | None) -> None:
    res = {x.spot: x for x in uth.settle(
        CFG.uth, ante=100, trips=0, play=400, folded=False,
        player_rank=HAND[cat], dealer_rank=LOW,
    )}  # fmt: skip
    blind = res["blind"]
    if win is None:
        assert blind.outcome is Outcome.PUSH
    else:
        assert (blind.outcome, blind.win_cents) == (Outcome.WIN, win)
    assert (res["play"].outcome, res["play"].win_cents) == (Outcome.WIN, 400)


TRIPS_ROWS = [
    ("royal_flush", 5000),
    ("straight_flush", 4000),
    ("four_of_a_kind", 3000),
    ("full_house", 800),
    ("flush", 700),
    ("straight", 400),
    ("three_of_a_kind", 300),
    ("two_pair", None),
    ("pair", None),
    ("high_card", None),
]


@pytest.mark.parametrize(("cat", "win"), TRIPS_ROWS)
@pytest.mark.parametrize("folded", [False, True])
def test_casino_uth_trips_pays_whatever_the_result(cat: str, win: int | None, folded: bool) -> None:
    # the dealer has a royal flush: the main bets lose, Trips does not care
    res = {x.spot: x for x in uth.settle(
        CFG.uth, ante=100, trips=100, play=0, folded=folded,
        player_rank=HAND[cat], dealer_rank=HAND["royal_flush"] if cat != "royal_flush" else LOW,
    )}  # fmt: skip
    t = res["trips"]
    if win is None:
        assert t.outcome is Outcome.LOSE
    else:
        assert (t.outcome, t.win_cents) == (Outcome.WIN, win)


# (line, player, dealer, ante, blind, play outcomes)
MAIN_ROWS = [
    ("win, dealer qualifies", "straight", "pair", Outcome.WIN, Outcome.WIN, Outcome.WIN),
    ("win, dealer does not qualify", "pair", "high_card", Outcome.PUSH, Outcome.PUSH, Outcome.WIN),
    ("win with flush, no qualifier", "flush", "high_card", Outcome.PUSH, Outcome.WIN, Outcome.WIN),
    ("loss, dealer qualifies", "pair", "two_pair", Outcome.LOSE, Outcome.LOSE, Outcome.LOSE),
    ("loss, dealer does not qualify", "high_card", "high_card_hi", Outcome.PUSH, Outcome.LOSE,
     Outcome.LOSE),
    ("tie, qualified", "two_pair", "two_pair", Outcome.PUSH, Outcome.PUSH, Outcome.PUSH),
    ("tie, not qualified", "high_card", "high_card", Outcome.PUSH, Outcome.PUSH, Outcome.PUSH),
]  # fmt: skip


@pytest.mark.parametrize(("line", "player", "dealer", "ante", "blind", "play"), MAIN_ROWS)
def test_casino_uth_main_bets(
    line: str, player: str, dealer: str, ante: Outcome, blind: Outcome, play: Outcome
) -> None:
    hands = {**HAND, "high_card_hi": r("AcKd8h5s3c")}
    res = {x.spot: x for x in uth.settle(
        CFG.uth, ante=100, trips=0, play=200, folded=False,
        player_rank=hands[player], dealer_rank=hands[dealer],
    )}  # fmt: skip
    assert (res["ante"].outcome, res["blind"].outcome, res["play"].outcome) == (
        ante, blind, play), line  # fmt: skip


def test_casino_uth_fold_loses_ante_and_blind() -> None:
    res = uth.settle(
        CFG.uth, ante=100, trips=0, play=0, folded=True,
        player_rank=HAND["full_house"], dealer_rank=LOW,
    )  # fmt: skip
    by = {x.spot: x for x in res}
    assert by["ante"].outcome is Outcome.LOSE and by["blind"].outcome is Outcome.LOSE
    assert totals(res) == (200, 0, 200)


def test_casino_blind_three_to_two_on_odd_cents_rounds_down() -> None:
    res = {x.spot: x for x in uth.settle(
        CFG.uth, ante=25, trips=0, play=25, folded=False,
        player_rank=HAND["flush"], dealer_rank=LOW,
    )}  # fmt: skip
    assert res["blind"].win_cents == 37  # 37.5 floored: the documented floor_cent rule
