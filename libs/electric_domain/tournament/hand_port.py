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


class Move(StrEnum):
    """A player's decision, as the tournament asks the engine to perform it."""

    FOLD = "fold"
    CHECK = "check"
    CALL = "call"
    RAISE_TO = "raise_to"  # bet or raise to an amount (total committed this round)
    ALL_IN = "all_in"


@dataclass(frozen=True, slots=True)
class Legal:
    """Exactly what the actor may do now (amounts in chips)."""

    seat: int
    can_fold: bool
    can_check: bool
    call_amount: int  # 0 when nothing to call; capped at the stack (an all-in call)
    min_raise_to: int | None  # None when no bet/raise is possible
    max_raise_to: int | None
    stack: int


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
    ) -> tuple[Any, list[Any]]:
        """Begin a hand (forced bets posted, cards dealt): the state and its events."""
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

    def describe(self, event: Any) -> Sequence[str]:
        """Short human-readable lines for logs (optional detail)."""
        ...
