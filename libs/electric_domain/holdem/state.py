"""Hand configuration, state and the answers the engine gives about a state."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

MAX_PLAYERS = 10
_INT_ONLY = frozenset((int,))
STREET_NAMES = ("preflop", "flop", "turn", "river")


@dataclass(frozen=True, slots=True)
class HandConfig:
    """Everything fixed at the start of a hand.

    ``stacks[i]`` is player ``i``'s stack; players ``0..n-1`` sit in clockwise order and
    ``button`` is the dealer's index. Heads-up the button posts the small blind; otherwise
    the small blind is ``button+1`` and the big blind ``button+2`` (mod n). ``min_bet``
    (0 = the big blind) is the smallest opening bet and the smallest raise increment.
    ``antes`` optionally gives a per-player ante (e.g. a big-blind ante in PHH records); when
    empty every player antes ``ante``.
    """

    stacks: tuple[int, ...]
    button: int
    small_blind: int
    big_blind: int
    ante: int = 0
    min_bet: int = 0
    antes: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        n = len(self.stacks)
        if not 2 <= n <= MAX_PLAYERS:
            raise ValueError(f"a hand needs 2..{MAX_PLAYERS} players, got {n}")
        if not set(map(type, self.stacks)) <= _INT_ONLY or min(self.stacks) <= 0:
            raise ValueError("every stack must be a positive integer")
        if not 0 <= self.button < n:
            raise ValueError(f"button {self.button} is not a player index")
        if min(self.small_blind, self.big_blind, self.ante, self.min_bet) < 0:
            raise ValueError("blinds, ante and min_bet cannot be negative")
        if self.effective_min_bet <= 0:
            raise ValueError("min_bet (or the big blind) must be positive")
        if self.antes and (len(self.antes) != n or min(self.antes) < 0):
            raise ValueError("antes, when given, are one non-negative amount per player")

    @property
    def players(self) -> int:
        return len(self.stacks)

    @property
    def effective_min_bet(self) -> int:
        return self.min_bet or self.big_blind

    def ante_of(self, player: int) -> int:
        """The ante ``player`` owes."""
        return self.antes[player] if self.antes else self.ante

    @property
    def small_blind_player(self) -> int:
        n = len(self.stacks)
        return self.button if n == 2 else (self.button + 1) % n

    @property
    def big_blind_player(self) -> int:
        return (self.small_blind_player + 1) % len(self.stacks)


class Street(IntEnum):
    """A betting round (``HandState.street`` during betting; ``BoardDealt.street``)."""

    PREFLOP = 0
    FLOP = 1
    TURN = 2
    RIVER = 3


class Phase(IntEnum):
    """What the hand is waiting for."""

    FORCED_BETS = 0
    DEAL_HOLE = 1
    BETTING = 2
    DEAL_BOARD = 3
    SHOWDOWN = 4
    COMPLETE = 5


_new_state = object.__new__


class HandState:
    """Immutable snapshot of a hand (treat every attribute as read-only).

    Built only by :func:`electric_domain.holdem.engine.apply`; every event produces a new
    object, the old one is never changed. Per-player tuples are indexed by player.
    ``committed`` is everything a player has put in this hand (antes, blinds and the bets of
    the current round included); ``bets`` only the current round. ``acted_level[i]`` is the
    highest bet when ``i`` last acted this round (``-1``: not yet). ``shown_rank[i]`` is the
    evaluator rank of a shown hand, ``-1`` not shown (or unknown cards), and ``mucked[i]``
    marks a hand given up at showdown. ``dealt`` is a bitmask of the known cards dealt.
    """

    __slots__ = (
        "acted_level",
        "aggressor",
        "bets",
        "board",
        "cbr",
        "committed",
        "config",
        "dealt",
        "folded",
        "hole",
        "min_bet",
        "mucked",
        "n",
        "phase",
        "runout",
        "showdown_queue",
        "shown",
        "shown_rank",
        "stacks",
        "street",
        "to_act",
        "winnings",
    )

    config: HandConfig
    n: int
    min_bet: int
    dealt: int
    phase: Phase
    street: int
    stacks: tuple[int, ...]
    bets: tuple[int, ...]
    committed: tuple[int, ...]
    folded: tuple[bool, ...]
    hole: tuple[tuple[int, ...], ...]
    board: tuple[int, ...]
    to_act: tuple[int, ...]
    acted_level: tuple[int, ...]
    cbr: int
    aggressor: int
    runout: bool
    showdown_queue: tuple[int, ...]
    shown: tuple[bool, ...]
    shown_rank: tuple[int, ...]
    mucked: tuple[bool, ...]
    winnings: tuple[int, ...]

    def copy(self) -> HandState:
        """A shallow copy (all fields are immutable values)."""
        new = _new_state(HandState)
        new.acted_level = self.acted_level
        new.aggressor = self.aggressor
        new.bets = self.bets
        new.board = self.board
        new.cbr = self.cbr
        new.committed = self.committed
        new.config = self.config
        new.dealt = self.dealt
        new.folded = self.folded
        new.hole = self.hole
        new.min_bet = self.min_bet
        new.mucked = self.mucked
        new.n = self.n
        new.phase = self.phase
        new.runout = self.runout
        new.showdown_queue = self.showdown_queue
        new.shown = self.shown
        new.shown_rank = self.shown_rank
        new.stacks = self.stacks
        new.street = self.street
        new.to_act = self.to_act
        new.winnings = self.winnings
        return new

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HandState):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in HandState.__slots__)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"HandState(phase={self.phase.name}, street={self.street}, stacks={self.stacks}, "
            f"bets={self.bets}, committed={self.committed}, to_act={self.to_act}, "
            f"board={self.board})"
        )

    @property
    def actor(self) -> int | None:
        """Who must act now (betting or showdown decision), else ``None``."""
        if self.phase is Phase.BETTING and self.to_act:
            return self.to_act[0]
        if self.phase is Phase.SHOWDOWN and self.showdown_queue:
            return self.showdown_queue[0]
        return None

    @property
    def is_complete(self) -> bool:
        return self.phase is Phase.COMPLETE

    @property
    def pot_total(self) -> int:
        """All chips in the middle (collected pots plus current bets)."""
        return sum(self.committed)

    @property
    def active_players(self) -> tuple[int, ...]:
        """Players still holding cards (not folded, not mucked)."""
        return tuple(i for i in range(self.n) if not self.folded[i] and not self.mucked[i])


class LegalActions(NamedTuple):
    """Exactly what ``player`` may do at a betting decision.

    ``call_amount`` is the chips a call adds (``0``: check instead; capped by the stack).
    When ``can_raise`` the bet/raise-TO amount must be in ``[min_raise_to, max_raise_to]``
    (``max_raise_to`` is all-in; ``min_raise_to == max_raise_to`` when the stack is short of
    a full raise); ``is_bet`` says whether it is an opening bet rather than a raise.
    ``all_in_to`` is the player's total bet if they go all-in (``bet + stack``).
    (An immutable named tuple: cheap to build at every decision point.)
    """

    player: int
    can_fold: bool
    can_check: bool
    call_amount: int
    can_raise: bool
    is_bet: bool
    min_raise_to: int
    max_raise_to: int
    all_in_to: int
    current_bet: int
    player_bet: int
    stack: int

    @property
    def can_call(self) -> bool:
        return self.call_amount > 0


@dataclass(frozen=True, slots=True)
class ShowdownOptions:
    """A showdown decision: ``player`` may always show; may muck only if ``can_muck``."""

    player: int
    can_muck: bool


class CommandRejected(ValueError):
    """A command is not legal in this state; ``reason`` says why. Nothing changed."""

    def __init__(self, reason: str, command: object = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.command = command
