"""electric_bots.views: a player's own TableView → a strategy's context → an Act request."""

from __future__ import annotations

import random

import pytest
from electric.common.v1 import cards_pb2, tournament_pb2
from electric.table.v1 import table_pb2
from electric_bots.runner import assign
from electric_bots.views import (
    act_fields,
    context_from_view,
    is_my_turn,
    legal_from_view,
    offered_pre_actions,
    safe_fields,
)
from electric_clients.convert import card_number
from electric_domain.cards import parse_card
from electric_domain.tournament.bots import BOTS, Decide, TightAggressiveBot
from electric_domain.tournament.hand_port import Move
from electric_domain.tournament.preaction import PreAction

T = table_pb2


def _card(text: str) -> cards_pb2.Card:
    ranks = "23456789TJQKA"
    suits = "cdhs"
    return cards_pb2.Card(
        rank=ranks.index(text[0]) + 2,  # type: ignore[arg-type]
        suit=suits.index(text[1]) + 1,  # type: ignore[arg-type]
        text=text,
    )


def _view(
    *,
    legal: list[tuple[int, int, int]],
    to_act: int = 2,
    hole: tuple[str, ...] = ("As", "Ad"),
    board: tuple[str, ...] = (),
    current_bet: int = 20,
    my_bet: int = 10,
    my_stack: int = 490,
) -> table_pb2.TableView:
    return T.TableView(
        table_id="t1",
        status=T.TABLE_STATUS_RUNNING,
        your_seat=2,
        seats=[
            T.SeatView(seat=1, player_id="a", stack=480, street_bet=20, has_cards=True),
            T.SeatView(
                seat=2,
                player_id="me",
                stack=my_stack,
                street_bet=my_bet,
                has_cards=True,
                hole_cards=[_card(c) for c in hole],
            ),
            T.SeatView(seat=3, player_id="c", stack=500, has_cards=True, folded=True),
        ],
        hand=T.HandView(
            hand_number=7,
            action_seq=4,
            to_act_seat=to_act,
            current_bet=current_bet,
            board=[_card(c) for c in board],
            pots=[T.Pot(index=0, amount=30)],
        ),
        level=tournament_pb2.BlindLevel(level=1, small_blind=10, big_blind=20),
        legal_actions=[T.LegalAction(type=t, min_amount=lo, max_amount=hi) for t, lo, hi in legal],
    )


FACING_BET = [
    (T.ACTION_TYPE_FOLD, 0, 0),
    (T.ACTION_TYPE_CALL, 20, 20),
    (T.ACTION_TYPE_RAISE, 40, 500),
    (T.ACTION_TYPE_ALL_IN, 500, 500),
]


def test_cards_map_to_domain_numbers() -> None:
    for text in ("2c", "As", "Td", "9h", "Kc"):
        assert card_number(_card(text)) == parse_card(text)
    assert card_number(cards_pb2.Card(text="Qh")) == parse_card("Qh")
    with pytest.raises(ValueError):
        card_number(cards_pb2.Card())


def test_legal_from_view_uses_street_totals() -> None:
    view = _view(legal=FACING_BET)
    legal = legal_from_view(view)
    assert legal.can_fold and not legal.can_check
    assert legal.call_amount == 10  # 20 to match, 10 already in
    assert (legal.min_raise_to, legal.max_raise_to) == (40, 500)
    assert legal.stack == 490 and legal.seat == 2
    checked = legal_from_view(
        _view(legal=[(T.ACTION_TYPE_CHECK, 0, 0), (T.ACTION_TYPE_BET, 20, 500)], my_bet=20)
    )
    assert checked.can_check and checked.call_amount == 0 and checked.min_raise_to == 20


def test_short_all_in_is_not_taken_for_a_raise() -> None:
    view = _view(
        legal=[
            (T.ACTION_TYPE_FOLD, 0, 0),
            (T.ACTION_TYPE_CALL, 20, 20),
            (T.ACTION_TYPE_ALL_IN, 30, 30),
        ],
        my_stack=20,
    )
    legal = legal_from_view(view)
    # Whether a short all-in re-opens the betting is not in the view: the bot only calls.
    assert (legal.min_raise_to, legal.max_raise_to) == (None, None)
    assert act_fields(Decide(Move.RAISE_TO, 100, 0), view) == (T.ACTION_TYPE_CALL, 0)
    assert act_fields(Decide(Move.ALL_IN, 0, 0), view) == (T.ACTION_TYPE_CALL, 0)
    assert safe_fields(view) == (T.ACTION_TYPE_CALL, 0)


def test_context_sees_own_cards_board_and_pot() -> None:
    view = _view(legal=FACING_BET, board=("Kh", "7c", "2d"))
    ctx = context_from_view(view)
    assert ctx.hole == (parse_card("As"), parse_card("Ad"))
    assert ctx.board == tuple(parse_card(c) for c in ("Kh", "7c", "2d"))
    assert ctx.pot == 30 + 20 + 10 and ctx.big_blind == 20
    assert ctx.players_in_hand == 2 and ctx.hand_no == 7


def test_decisions_become_offered_actions() -> None:
    view = _view(legal=FACING_BET)
    assert act_fields(Decide(Move.FOLD, 0, 0), view) == (T.ACTION_TYPE_FOLD, 0)
    assert act_fields(Decide(Move.CALL, 0, 0), view) == (T.ACTION_TYPE_CALL, 0)
    assert act_fields(Decide(Move.RAISE_TO, 60, 0), view) == (T.ACTION_TYPE_RAISE, 60)
    assert act_fields(Decide(Move.RAISE_TO, 9999, 0), view) == (T.ACTION_TYPE_ALL_IN, 0)
    assert act_fields(Decide(Move.RAISE_TO, 499, 0), view) == (T.ACTION_TYPE_RAISE, 499)
    assert act_fields(Decide(Move.RAISE_TO, 1, 0), view) == (T.ACTION_TYPE_RAISE, 40)
    assert act_fields(Decide(Move.ALL_IN, 0, 0), view) == (T.ACTION_TYPE_ALL_IN, 0)
    assert act_fields(Decide(Move.RAISE_TO, 500, 0), view) == (T.ACTION_TYPE_ALL_IN, 0)
    assert legal_from_view(view).max_raise_to == 500
    free = _view(legal=[(T.ACTION_TYPE_CHECK, 0, 0), (T.ACTION_TYPE_BET, 20, 500)], my_bet=20)
    # A strategy's fold when checking is free becomes a check; a call becomes a check too.
    assert act_fields(Decide(Move.FOLD, 0, 0), free) == (T.ACTION_TYPE_CHECK, 0)
    assert act_fields(Decide(Move.CALL, 0, 0), free) == (T.ACTION_TYPE_CHECK, 0)
    assert act_fields(Decide(Move.RAISE_TO, 60, 0), free) == (T.ACTION_TYPE_BET, 60)


@pytest.mark.parametrize("name", sorted(BOTS))
def test_every_strategy_answers_with_a_legal_action(name: str) -> None:
    rng = random.Random(7)
    for legal in (FACING_BET, [(T.ACTION_TYPE_CHECK, 0, 0), (T.ACTION_TYPE_BET, 20, 500)]):
        view = _view(legal=legal, my_bet=10 if legal is FACING_BET else 20)
        offered = {t for t, _, _ in legal}
        for _ in range(50):
            decision = BOTS[name]().decide(context_from_view(view), rng)
            if isinstance(decision, Decide):
                fields = act_fields(decision, view)
                assert fields.action in offered


def test_turn_and_pre_actions_follow_the_view() -> None:
    mine = _view(legal=FACING_BET)
    assert is_my_turn(mine) and offered_pre_actions(mine) == frozenset()
    other = _view(legal=[], to_act=1)
    assert not is_my_turn(other)
    assert offered_pre_actions(other) == {PreAction.FOLD, PreAction.CALL}
    unbet = _view(legal=[], to_act=1, current_bet=10, my_bet=10)
    assert offered_pre_actions(unbet) == {  # seed 5.b: fold always; bet with no bet
        PreAction.FOLD,
        PreAction.CHECK_FOLD,
        PreAction.CHECK,
        PreAction.BET,
    }
    assert TightAggressiveBot().pre_action(offered_pre_actions(other), random.Random(1)) is None


def test_assign_spreads_bots_so_every_used_tier_can_fill() -> None:
    tiers = ["t1", "t2", "t3", "t4", "t5"]
    out = assign(15, tiers, [("tag", 2), ("random", 1)], "b")
    per_tier = {t: [a for a in out if a.tier_id == t] for t in tiers}
    assert all(len(v) == 3 for v in per_tier.values())
    assert {a.strategy for a in per_tier["t1"]} == {"tag", "random"}
    assert len({a.player_id for a in out}) == 15
    few = assign(7, tiers, [("tag", 1)], "b")
    assert {a.tier_id for a in few} == {"t1", "t2"}  # 7 bots: two tiers of >= 3
    with pytest.raises(ValueError):
        assign(3, tiers, [("nope", 1)], "b")
