"""The shared deal of a casino round from the provably fair deck, and the void rule.

Dealing order (both games; no burn cards): deck positions 0–1 the player's hole cards, 2–3
the dealer's, 4–6 the flop, 7 the turn, 8 the river. The deck is
:func:`electric_domain.deck.derive_deck` of a 32-byte seed whose SHA-256 commitment is
recorded when the round starts; the seed itself is revealed (``DeckRevealed``) when it ends.
"""

from __future__ import annotations

from dataclasses import dataclass

from electric_domain.casino.common.config import CATEGORY_NAMES
from electric_domain.casino.common.errors import Rejected, RejectReason
from electric_domain.casino.common.money import BetResult, Outcome
from electric_domain.deck import SEED_BYTES, FairDeck
from electric_domain.evaluator import Category, category_of, evaluate

ROYAL_RANK = 7462


@dataclass(frozen=True, slots=True)
class Deal:
    """The nine cards a round uses."""

    player: tuple[int, int]
    dealer: tuple[int, int]
    flop: tuple[int, int, int]
    turn: int
    river: int

    @property
    def board(self) -> tuple[int, ...]:
        return (*self.flop, self.turn, self.river)

    @classmethod
    def from_seed(cls, seed: bytes) -> Deal:
        if len(seed) != SEED_BYTES:
            raise Rejected(RejectReason.BAD_SEED, f"a deck seed is {SEED_BYTES} bytes")
        d = FairDeck.from_seed(seed).cards
        return cls((d[0], d[1]), (d[2], d[3]), (d[4], d[5], d[6]), d[7], d[8])


def category_index(rank: int) -> int:
    """Pay-table category ``0..9`` of a rank (``9`` = royal flush)."""
    if rank == ROYAL_RANK:
        return len(CATEGORY_NAMES) - 1
    return int(category_of(rank))


def describe(cards: tuple[int, ...]) -> tuple[int, str]:
    """Rank and text of the best five of 5–7 cards."""
    v = evaluate(cards)
    text = "Royal Flush" if v.rank == ROYAL_RANK else v.description
    return v.rank, text


def refunds(stakes: dict[str, int]) -> tuple[BetResult, ...]:
    """Void (malfunction): every bet is returned and nothing is paid."""
    return tuple(BetResult(spot, c, Outcome.REFUND) for spot, c in stakes.items() if c > 0)


__all__ = ["Category", "Deal", "category_index", "describe", "refunds"]
