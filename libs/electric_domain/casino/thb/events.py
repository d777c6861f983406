"""THB commands and events (immutable); the round's state is a fold over the events.

Every command and event carries ``at`` (ms, an input: the domain reads no clock).
"""

from __future__ import annotations

from dataclasses import dataclass

from electric_domain.casino.common.money import BetResult

# ---------------------------------------------------------------------------- commands


@dataclass(frozen=True, slots=True)
class Fold:
    at: int


@dataclass(frozen=True, slots=True)
class CallFlop:
    at: int


@dataclass(frozen=True, slots=True)
class Check:
    """Check before the turn or before the river."""

    at: int


@dataclass(frozen=True, slots=True)
class Bet:
    """Bet Turn or Bet River (1× Ante), whichever street is next."""

    at: int


@dataclass(frozen=True, slots=True)
class Void:
    """Malfunction: end the round, refund every bet, pay nothing."""

    reason: str
    at: int


Command = Fold | CallFlop | Check | Bet | Void

# ------------------------------------------------------------------------------ events


@dataclass(frozen=True, slots=True)
class RoundStarted:
    round_id: str
    game_number: str
    config_version: int
    ante_cents: int
    deck_commitment: str
    deck_seed_hex: str  # private until DeckRevealed; views never show it before
    at: int


@dataclass(frozen=True, slots=True)
class HoleCardsDealt:
    player_cards: tuple[int, int]
    nickname: str | None
    at: int


@dataclass(frozen=True, slots=True)
class Folded:
    at: int


@dataclass(frozen=True, slots=True)
class FlopCalled:
    amount_cents: int
    at: int


@dataclass(frozen=True, slots=True)
class StreetBet:
    street: str  # "turn" | "river"
    amount_cents: int
    at: int


@dataclass(frozen=True, slots=True)
class StreetChecked:
    street: str  # "turn" | "river"
    at: int


@dataclass(frozen=True, slots=True)
class BoardDealt:
    street: str  # "flop" | "turn" | "river"
    cards: tuple[int, ...]
    hand_text: str  # the player's current best hand, as the game displays it
    at: int


@dataclass(frozen=True, slots=True)
class Showdown:
    dealer_cards: tuple[int, int]
    player_rank: int
    player_hand: str
    dealer_rank: int
    dealer_hand: str
    winner: str  # "player" | "dealer" | "tie"
    at: int


@dataclass(frozen=True, slots=True)
class Settled:
    results: tuple[BetResult, ...]
    staked_cents: int
    returned_cents: int
    house_net_cents: int
    at: int


@dataclass(frozen=True, slots=True)
class RoundVoided:
    reason: str
    results: tuple[BetResult, ...]
    at: int


@dataclass(frozen=True, slots=True)
class DeckRevealed:
    deck_seed_hex: str
    deck_commitment: str
    at: int


Event = (
    RoundStarted
    | HoleCardsDealt
    | Folded
    | FlopCalled
    | StreetBet
    | StreetChecked
    | BoardDealt
    | Showdown
    | Settled
    | RoundVoided
    | DeckRevealed
)
