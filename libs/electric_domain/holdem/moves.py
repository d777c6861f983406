"""The typed vocabulary of a player's betting decision.

A :class:`Move` is what a player asks for, from the API edge to the stored event; each
move is exactly one engine command (:func:`command_for`): BET opens the betting of a round,
RAISE_TO raises an existing bet — they are never merged. Amounts are the player's total bet
this round after the move (``to``), as in :class:`~electric_domain.holdem.commands.Bet`.
"""

from __future__ import annotations

from enum import StrEnum

from electric_domain.holdem.commands import AllIn, Bet, Call, Check, Command, Fold, RaiseTo


class Move(StrEnum):
    """A player's betting decision."""

    FOLD = "fold"
    CHECK = "check"
    CALL = "call"
    BET = "bet"  # open the round's betting to ``amount``
    RAISE_TO = "raise_to"  # raise an existing bet to ``amount``
    ALL_IN = "all_in"

    @property
    def takes_amount(self) -> bool:
        """BET and RAISE_TO name their street total; the other moves take no amount."""
        return self is Move.BET or self is Move.RAISE_TO


def command_for(move: Move, player: int, amount: int = 0) -> Command:
    """The engine command of ``move`` by engine player ``player``."""
    if move is Move.FOLD:
        return Fold(player)
    if move is Move.CHECK:
        return Check(player)
    if move is Move.CALL:
        return Call(player)
    if move is Move.BET:
        return Bet(player, amount)
    if move is Move.RAISE_TO:
        return RaiseTo(player, amount)
    return AllIn(player)
