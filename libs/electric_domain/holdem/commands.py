"""Commands: requests validated by :func:`electric_domain.holdem.engine.decide`."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PostForcedBets:
    """Post every ante, then the small and big blind (short stacks post what they have)."""


@dataclass(frozen=True, slots=True)
class DealHole:
    """Deal ``player`` their two hole cards (``-1`` for a card unknown to the record)."""

    player: int
    cards: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DealBoard:
    """Deal the next street's community cards (3, then 1, then 1)."""

    cards: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Fold:
    """Give up the hand (only when facing a bet)."""

    player: int


@dataclass(frozen=True, slots=True)
class Check:
    """Pass when nothing is owed."""

    player: int


@dataclass(frozen=True, slots=True)
class Call:
    """Match the current bet (or put in the whole stack if it is smaller)."""

    player: int


@dataclass(frozen=True, slots=True)
class Bet:
    """Open the betting of a round: the player's bet becomes ``to``."""

    player: int
    to: int


@dataclass(frozen=True, slots=True)
class RaiseTo:
    """Raise so the player's total bet this round is ``to``."""

    player: int
    to: int


@dataclass(frozen=True, slots=True)
class AllIn:
    """Put in the whole stack: a bet/raise when allowed, otherwise a call of all of it."""

    player: int


@dataclass(frozen=True, slots=True)
class Show:
    """Expose the hand at showdown (``cards`` needed only if the record lacks them)."""

    player: int
    cards: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class Muck:
    """Give up at showdown without showing (only a hand that cannot win any pot)."""

    player: int


Command = (
    PostForcedBets
    | DealHole
    | DealBoard
    | Fold
    | Check
    | Call
    | Bet
    | RaiseTo
    | AllIn
    | Show
    | Muck
)
