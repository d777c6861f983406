"""What the tournament needs from a no-limit hold'em hand engine (the port).

The tournament aggregate talks to the hand engine only through this protocol; the adapter
module (`engine_adapter`) implements it over `electric_domain.holdem`. Hand states and hand
events are opaque to the tournament: it stores the engine's events inside its own
`HandEvent` and rebuilds the hand state by folding them with `apply`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from electric_domain.holdem.moves import Move
from electric_domain.holdem.state import Street

__all__ = [
    "ActionResult",
    "HandFact",
    "HandPort",
    "HandSeat",
    "HandSnapshot",
    "IllegalMove",
    "Legal",
    "Move",
    "Post",
    "Street",
]


@dataclass(frozen=True, slots=True)
class Legal:
    """Exactly what the actor may do now (amounts in chips).

    ``is_bet``: a bet/raise now opens the round (the move is BET, else RAISE_TO);
    ``street_bet`` is the actor's bet this round so far."""

    seat: int
    can_fold: bool
    can_check: bool
    call_amount: int  # 0 when nothing to call; capped at the stack (an all-in call)
    min_raise_to: int | None  # None when no bet/raise is possible
    max_raise_to: int | None
    stack: int
    is_bet: bool = False
    street_bet: int = 0

    @property
    def wager_move(self) -> Move:
        """The move that bets or raises here: BET when opening, else RAISE_TO."""
        return Move.BET if self.is_bet else Move.RAISE_TO


@dataclass(frozen=True, slots=True)
class ActionResult:
    """What a move did to the actor's chips, for projections (street = the round it was
    made in; ``street_bet`` = the actor's bet this round after it)."""

    amount_added: int
    street_bet: int
    all_in: bool
    street: Street


@dataclass(frozen=True, slots=True)
class HandSeat:
    """One seat dealt into a hand (``behind``: chips not in the pot)."""

    behind: int
    street_bet: int
    folded: bool
    has_cards: bool


@dataclass(frozen=True, slots=True)
class HandSnapshot:
    """The public state of a hand: seats dealt in (table seat -> `HandSeat`), the betting
    round (None once betting is over: showdown or complete), board, bets, pot, and the hole
    cards exposed so far (table seat -> cards)."""

    seats: Mapping[int, HandSeat]
    street: Street | None
    board: tuple[str, ...]
    current_bet: int
    pot_total: int
    shown: Mapping[int, tuple[str, ...]]


class Post(StrEnum):
    """A forced bet."""

    NONE = ""
    ANTE = "ante"
    SMALL_BLIND = "small_blind"
    BIG_BLIND = "big_blind"


@dataclass(frozen=True, slots=True)
class HandFact:
    """An engine event in table terms, for publication: ``kind`` is the engine event's
    name; ``seat`` the table seat it concerns (-1 none); ``cards`` dealt/shown cards (ints);
    ``board`` the whole board after a street; ``all_in`` the seat has no chips behind after
    posting (posts) or some live hand was all-in (shows); ``winners`` (seat, share) pairs;
    ``street`` of a dealt street; ``post`` the kind of a forced bet; ``hands`` (best five,
    category value, description) per winner of a pot (empty entries when the winner's hand
    was not shown) or of a shown hand (one entry; empty before five board cards)."""

    kind: str
    seat: int = -1
    amount: int = 0
    cards: tuple[int, ...] = ()
    board: tuple[int, ...] = ()
    all_in: bool = False
    post: Post = Post.NONE
    street: Street = Street.PREFLOP
    index: int = 0
    winners: tuple[tuple[int, int], ...] = ()
    hands: tuple[tuple[tuple[int, ...], int, str], ...] = ()


class IllegalMove(ValueError):
    """The engine rejected a move; nothing changed."""


class HandPort(Protocol):
    """Engine operations used by the tournament. All pure; ``H`` is the engine's hand state."""

    def start(
        self,
        *,
        stacks: Mapping[int, int],
        button: int,
        small_blind_seat: int,
        big_blind_seat: int,
        small_blind: int,
        big_blind: int,
        ante: int,
        deck_seed: bytes,
        table_size: int,
        show_beaten: frozenset[int] = frozenset(),
        show_uncontested: frozenset[int] = frozenset(),
    ) -> tuple[Any, list[Any]]:
        """Begin a hand (forced bets posted, cards dealt): the state and its events.
        ``show_beaten``: seats that show a hand the rules would let them muck at showdown;
        ``show_uncontested``: seats that show their hand when they win without a showdown."""
        ...

    def apply(self, hand: Any, event: Any) -> Any:
        """Fold one engine event into the hand state."""
        ...

    def initial(self) -> Any:
        """The state before the first event of a hand."""
        ...

    def act(self, hand: Any, seat: int, move: Move, amount: int) -> tuple[Any, list[Any]]:
        """A player's move: the new state and its events (the state equals folding the
        events into ``hand``); raises `IllegalMove` and changes nothing if illegal."""
        ...

    def advance(self, hand: Any) -> tuple[Any, list[Any]]:
        """Progress that needs no decision (deal the next street, showdown, awards): the new
        state and its events (none when a decision is pending or the hand is over)."""
        ...

    def actor(self, hand: Any) -> int | None: ...

    def legal(self, hand: Any) -> Legal: ...

    def to_call(self, hand: Any, seat: int) -> int: ...

    def street(self, hand: Any) -> int: ...

    def is_over(self, hand: Any) -> bool: ...

    def stacks(self, hand: Any) -> dict[int, int]:
        """Chips behind per seat (after awards once the hand is over)."""
        ...

    def in_hand(self, hand: Any, seat: int) -> bool:
        """Not folded and not all-in (can still be asked to act this hand)."""
        ...

    def hole_cards(self, hand: Any, seat: int) -> tuple[str, ...]: ...

    def board(self, hand: Any) -> tuple[str, ...]: ...

    def pot(self, hand: Any) -> int: ...

    def shown(self, hand: Any) -> Mapping[int, tuple[str, ...]]:
        """Hole cards exposed at showdown so far."""
        ...

    def deck_commitment(self, hand: Any) -> str: ...

    def deck_seed_hex(self, hand: Any) -> str:
        """The hand's deck seed (revealed in the tournament's HandEnded)."""
        ...

    def action_result(self, hand: Any, seat: int, events: Sequence[Any]) -> ActionResult:
        """What ``seat``'s move did, from the hand before it and the move's events."""
        ...

    def snapshot(self, hand: Any) -> HandSnapshot:
        """The public state of the hand (for player views)."""
        ...

    def facts(self, hand: Any, events: Sequence[Any]) -> list[HandFact | None]:
        """Engine events of the current hand (``hand`` = the state after them) in table
        terms, one per event (None for the hand set-up record)."""
        ...

    def describe(self, event: Any) -> Sequence[str]:
        """Short human-readable lines for logs (optional detail)."""
        ...
