"""The typed vocabulary of the tournament domain: moves (BET and RAISE_TO distinct), typed
refusals, action events that carry what a projection needs, the engine's events stated in
table terms, the player view (privacy included) and the multiplier consumed, not drawn."""

from __future__ import annotations

from typing import Any

import pytest
from electric_domain.holdem import Move, Street
from electric_domain.tournament import (
    Act,
    DealHand,
    InvalidCommand,
    NotAllowedNow,
    RejectReason,
    Tournament,
    default_config,
    draw_multiplier,
)
from electric_domain.tournament.events import ActionTaken, HandEvent, TurnStarted
from electric_domain.tournament.hand_port import Post

CFG = default_config()
SEED = bytes(32)  # draws 2x, first button = seat 2


def _start(**kw: Any) -> Tournament:
    return Tournament.start(
        CFG,
        tournament_id="t",
        players=("p0", "p1", "p2"),
        buy_in_cents=CFG.buy_ins[0].buy_in_cents,
        multiplier_seed=SEED,
        at=0,
        **kw,
    )


def _taken(events: list[Any]) -> ActionTaken:
    (taken,) = [e for e in events if isinstance(e, ActionTaken)]
    return taken


def test_bet_and_raise_are_distinct_moves_and_actions_carry_their_chips() -> None:
    t = _start()
    t.handle(DealHand(1_000, bytes([1]) * 32))  # button 2, SB 0 (10), BB 1 (20)
    legal = t.legal_actions(2)
    assert legal is not None and not legal.is_bet and legal.wager_move is Move.RAISE_TO
    with pytest.raises(NotAllowedNow) as refused:
        t.handle(Act(2, Move.BET, 2_000, 60))  # a bet exists: BET is not a raise
    assert refused.value.reason is RejectReason.ILLEGAL_MOVE
    ev = t.handle(Act(2, Move.RAISE_TO, 2_000, 60))
    a = _taken(ev)
    assert (a.move, a.amount_added, a.street_bet, a.all_in, a.street) == (
        Move.RAISE_TO, 60, 60, False, Street.PREFLOP,
    )  # fmt: skip
    assert (a.hand_no, a.action_seq) == (1, 1)
    turn = [e for e in ev if isinstance(e, TurnStarted)][-1]
    assert (turn.seat, turn.hand_no, turn.action_seq) == (0, 1, 2)
    a = _taken(t.handle(Act(0, Move.CALL, 3_000)))
    assert (a.amount_added, a.street_bet, a.action_seq) == (50, 60, 2)  # SB had 10 in
    a = _taken(t.handle(Act(1, Move.CALL, 4_000)))
    assert (a.amount_added, a.street_bet) == (40, 60)
    # Flop: nothing to call, so a wager opens the round: BET, and RAISE_TO is refused.
    legal = t.legal_actions(0)
    assert legal is not None and legal.is_bet and legal.street_bet == 0
    with pytest.raises(NotAllowedNow):
        t.handle(Act(0, Move.RAISE_TO, 5_000, 100))
    a = _taken(t.handle(Act(0, Move.BET, 5_000, 100)))
    assert (a.move, a.amount_added, a.street_bet, a.street) == (Move.BET, 100, 100, Street.FLOP)
    a = _taken(t.handle(Act(1, Move.ALL_IN, 6_000)))
    assert (a.move, a.amount_added, a.street_bet, a.all_in) == (Move.ALL_IN, 440, 440, True)
    assert t.state.next_action_seq == 6


def test_unknown_move_and_seat_are_invalid_commands() -> None:
    t = _start()
    t.handle(DealHand(1_000, bytes([1]) * 32))
    with pytest.raises(InvalidCommand) as bad:
        t.handle(Act(2, "dance", 1_500))  # type: ignore[arg-type]  # untyped callers
    assert bad.value.reason is RejectReason.UNKNOWN_MOVE
    with pytest.raises(InvalidCommand):
        t.handle(Act(9, Move.CALL, 1_500))


def test_engine_events_in_table_terms() -> None:
    t = _start()
    ev = t.handle(DealHand(1_000, bytes([2]) * 32))
    facts = t.hand_facts(ev)
    engine = [e.event for e in ev if isinstance(e, HandEvent)]
    assert len(facts) == len(engine) and facts[0] is None  # the deck escrow is not public
    posts = [(f.seat, f.post, f.amount, f.all_in) for f in facts if f and f.post]
    assert posts == [(0, Post.SMALL_BLIND, 10, False), (1, Post.BIG_BLIND, 20, False)]
    dealt = {f.seat: f.cards for f in facts if f and f.kind == "HoleCardsDealt"}
    assert set(dealt) == {0, 1, 2}
    assert t.view(0, 1_000).seats[0].hole_cards == t.view(0, 1_000).hole_cards
    # Everyone all-in: the hand runs out, every hand is shown as an all-in showdown.
    t.handle(Act(2, Move.ALL_IN, 2_000))
    t.handle(Act(0, Move.CALL, 3_000))
    ev = t.handle(Act(1, Move.CALL, 4_000))
    facts = [f for f in t.hand_facts(ev) if f is not None]
    streets = [(f.street, len(f.cards), len(f.board)) for f in facts if f.kind == "BoardDealt"]
    assert streets == [(Street.FLOP, 3, 3), (Street.TURN, 1, 4), (Street.RIVER, 1, 5)]
    shown = [f for f in facts if f.kind == "HandShown"]
    assert len(shown) == 3 and all(f.all_in for f in shown)
    pots = [f for f in facts if f.kind == "PotAwarded"]
    assert sum(share for f in pots for _, share in f.winners) == 1_500


def test_player_view_owns_the_privacy_rule() -> None:
    t = _start()
    t.handle(DealHand(1_000, bytes([3]) * 32))
    mine = t.view(0, 1_500)
    assert mine.seats[0].hole_cards and not mine.seats[1].hole_cards
    assert not mine.seats[2].hole_cards
    observer = t.view(None, 1_500)
    assert observer.seat is None and observer.legal is None and observer.hole_cards == ()
    assert not any(s.hole_cards for s in observer.seats)
    assert [s.street_bet for s in observer.seats] == [10, 20, 0]
    assert observer.street is Street.PREFLOP and observer.pot == 30 and observer.collected == 0
    assert observer.action_seq == 1 and observer.actor == 2 and observer.actor_min_raise_to == 40
    to_act = t.view(2, 1_500)
    assert to_act.legal is not None and to_act.legal.call_amount == 20
    assert [s.in_hand for s in to_act.seats] == [True, True, True]


def test_the_multiplier_is_consumed_not_drawn() -> None:
    drawn = draw_multiplier(SEED, CFG.pay_table).multiplier
    other = next(e.multiplier for e in CFG.pay_table.entries if e.multiplier != drawn)
    t = _start(multiplier=other, first_button=0)
    assert (t.state.multiplier, t.state.first_button) == (other, 0)
    assert t.state.prize_pool_cents == CFG.prize_pool_cents(other, CFG.buy_ins[0].buy_in_cents)
    with pytest.raises(InvalidCommand):
        _start(multiplier=7)  # not in the pay table
    with pytest.raises(InvalidCommand):
        _start(first_button=3)  # no such seat
