"""A player's `Move` is exactly one engine command; BET opens, RAISE_TO raises."""

from __future__ import annotations

import pytest
from electric_domain.holdem import (
    AllIn,
    Bet,
    Call,
    Check,
    CommandRejected,
    Fold,
    HoldemHand,
    Move,
    RaiseTo,
    Street,
    command_for,
)


@pytest.mark.parametrize(
    ("move", "command"),
    [
        (Move.FOLD, Fold(3)),
        (Move.CHECK, Check(3)),
        (Move.CALL, Call(3)),
        (Move.BET, Bet(3, 80)),
        (Move.RAISE_TO, RaiseTo(3, 80)),
        (Move.ALL_IN, AllIn(3)),
    ],
)
def test_each_move_is_one_command(move: Move, command: object) -> None:
    assert command_for(move, 3, 80 if move.takes_amount else 0) == command
    assert move.takes_amount == (move in (Move.BET, Move.RAISE_TO))


def test_bet_and_raise_are_not_interchangeable() -> None:
    hand = HoldemHand.start((500, 500, 500), 0, 10, 20, deck=tuple(range(52)))
    actor = hand.actor
    assert actor is not None
    with pytest.raises(CommandRejected, match="raise instead"):
        hand.act(command_for(Move.BET, actor, 60))  # the big blind is a bet already
    hand.act(command_for(Move.RAISE_TO, actor, 60))
    hand.call()
    hand.call()
    assert hand.state.street == Street.FLOP
    actor = hand.actor
    assert actor is not None
    with pytest.raises(CommandRejected, match="bet instead"):
        hand.act(command_for(Move.RAISE_TO, actor, 40))  # nothing to raise on a new street
    hand.act(command_for(Move.BET, actor, 40))
