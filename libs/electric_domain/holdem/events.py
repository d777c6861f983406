"""Events of a no-limit hold'em hand (immutable facts; the state is a fold over them).

Players are identified by their index ``0..n-1`` in clockwise table order (see
:class:`~electric_domain.holdem.state.HandConfig`); amounts are integer chips.
"""

from __future__ import annotations

from dataclasses import dataclass

from electric_domain.holdem.state import HandConfig


@dataclass(frozen=True, slots=True)
class HandStarted:
    """A hand begins with these stacks, button and stakes."""

    config: HandConfig


@dataclass(frozen=True, slots=True)
class AntePosted:
    """A player posted an ante (dead money; smaller than the ante when all-in)."""

    player: int
    amount: int


@dataclass(frozen=True, slots=True)
class BlindPosted:
    """A player posted the small or big blind (possibly short/zero when all-in)."""

    player: int
    amount: int
    big: bool


@dataclass(frozen=True, slots=True)
class HoleCardsDealt:
    """A player received hole cards (``-1`` = a card unknown to this record)."""

    player: int
    cards: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BoardDealt:
    """Community cards for ``street`` (1 flop, 2 turn, 3 river)."""

    street: int
    cards: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Folded:
    """The player folded."""

    player: int


@dataclass(frozen=True, slots=True)
class Checked:
    """The player checked."""

    player: int


@dataclass(frozen=True, slots=True)
class Called:
    """The player called ``amount`` more chips (``all_in`` when that was their stack)."""

    player: int
    amount: int
    all_in: bool


@dataclass(frozen=True, slots=True)
class BetPlaced:
    """First wager of a betting round: the player's bet is now ``to``."""

    player: int
    to: int
    all_in: bool


@dataclass(frozen=True, slots=True)
class Raised:
    """The player raised to ``to`` (their total bet this round)."""

    player: int
    to: int
    all_in: bool


@dataclass(frozen=True, slots=True)
class UncalledBetReturned:
    """The part of the top bet nobody matched goes back to its owner."""

    player: int
    amount: int


@dataclass(frozen=True, slots=True)
class RoundClosed:
    """The betting round of ``street`` (0 pre-flop .. 3 river) is over."""

    street: int


@dataclass(frozen=True, slots=True)
class HandShown:
    """A player's hole cards are exposed at showdown (``rank``: evaluator rank, higher
    better; ``-1`` when the cards are not known to this record)."""

    player: int
    cards: tuple[int, ...]
    rank: int


@dataclass(frozen=True, slots=True)
class HandMucked:
    """A player gave up their hand at showdown without showing it."""

    player: int


@dataclass(frozen=True, slots=True)
class PotAwarded:
    """Pot ``index`` (0 = main) of ``amount`` chips went to ``winners`` (clockwise from the
    button; the first gets the odd chips) in ``shares``. ``eligible`` are the contenders:
    live hands eligible for this pot, not counting hands that win no pot at all."""

    index: int
    amount: int
    eligible: tuple[int, ...]
    winners: tuple[int, ...]
    shares: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class HandEnded:
    """The hand is over; final stacks."""

    stacks: tuple[int, ...]


Event = (
    HandStarted
    | AntePosted
    | BlindPosted
    | HoleCardsDealt
    | BoardDealt
    | Folded
    | Checked
    | Called
    | BetPlaced
    | Raised
    | UncalledBetReturned
    | RoundClosed
    | HandShown
    | HandMucked
    | PotAwarded
    | HandEnded
)
