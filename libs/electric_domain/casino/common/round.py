"""What every casino round is, whatever its game (THB, UTH): a fold of its own events.

The round holds its game's config, its state (changed only by ``apply``, the fold step),
its history (every event applied, in order) and the deal its deck seed derives (on first
use). ``replay`` rebuilds a round from its events; ``handle`` runs a command and returns the
events it emitted. A void is the same for every game: refused once the round is over,
otherwise the game voids it (``_void``); any other command is the game's (``_handle``).
Issue 25: the two games' rounds repeated this start of ``handle``, ``replay`` and the deal.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, Protocol, Self, TypeVar

from electric_domain.casino.common.config import CasinoConfig
from electric_domain.casino.common.deal import Deal
from electric_domain.casino.common.errors import Rejected, RejectReason

#: The phase of a round that is over (settled or voided), in every game.
OVER = "over"


class RoundState(Protocol):
    """What every game's round state has."""

    phase: str
    seed_hex: str


S = TypeVar("S", bound=RoundState)
E = TypeVar("E")
C = TypeVar("C")


class CasinoRound(Generic[S, E, C]):
    """One round of a casino game (module doc). Mutated only by :meth:`apply`."""

    def __init__(self, config: CasinoConfig) -> None:
        self.config = config
        self.state: S = self._initial_state()
        self.history: list[E] = []
        self._deal: Deal | None = None

    def _initial_state(self) -> S:
        raise NotImplementedError

    @classmethod
    def replay(cls, config: CasinoConfig, events: Iterable[E]) -> Self:
        """The round rebuilt from its events."""
        r = cls(config)
        for e in events:
            r.apply(e)
        return r

    def handle(self, cmd: C) -> list[E]:
        """Validate ``cmd``; emit and apply its events, which are returned (module doc)."""
        start = len(self.history)
        if self._is_void(cmd):
            if self.finished:
                raise Rejected(RejectReason.ROUND_OVER, "the round is over")
            self._void(cmd)
        else:
            self._handle(cmd)
        return self.history[start:]

    def _is_void(self, cmd: C) -> bool:
        raise NotImplementedError

    def _void(self, cmd: C) -> None:
        raise NotImplementedError

    def _handle(self, cmd: C) -> None:
        raise NotImplementedError

    def apply(self, e: E) -> None:
        """The fold step: the only place state changes."""
        raise NotImplementedError

    def _dealt(self) -> Deal:
        """The deal of the round's deck seed (derived once)."""
        if self._deal is None:
            self._deal = Deal.from_seed(bytes.fromhex(self.state.seed_hex))
        return self._deal

    @property
    def finished(self) -> bool:
        return self.state.phase == OVER


__all__ = ["OVER", "CasinoRound", "RoundState"]
