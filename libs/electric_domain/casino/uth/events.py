"""Live UTH commands and events (immutable); the round's state is a fold over the events.

Seats are indices in the order players took them. Every command and event carries ``at``
(ms, an input). Decision actions: ``play_4x``, ``play_3x``, ``check`` (pre-flop);
``play_2x``, ``check`` (flop); ``play_1x``, ``fold`` (river).
"""

from __future__ import annotations

from dataclasses import dataclass

from electric_domain.casino.common.money import BetResult

Placement = tuple[str, int]  # (spot "ante" | "trips", cents)

# ---------------------------------------------------------------------------- commands


@dataclass(frozen=True, slots=True)
class TakeSeat:
    player: str
    at: int


@dataclass(frozen=True, slots=True)
class PlaceBet:
    seat: int
    spot: str  # "ante" (the Blind follows automatically) or "trips"
    amount_cents: int
    at: int


@dataclass(frozen=True, slots=True)
class Undo:
    seat: int
    at: int


@dataclass(frozen=True, slots=True)
class Double:
    seat: int
    at: int


@dataclass(frozen=True, slots=True)
class Repeat:
    seat: int
    at: int


@dataclass(frozen=True, slots=True)
class Decide:
    seat: int
    action: str
    at: int


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed: lights, window close, decision deadlines up to ``at``."""

    at: int


@dataclass(frozen=True, slots=True)
class Void:
    reason: str
    at: int


Command = TakeSeat | PlaceBet | Undo | Double | Repeat | Decide | Tick | Void

# ------------------------------------------------------------------------------ events


@dataclass(frozen=True, slots=True)
class RoundOpened:
    round_id: str
    game_number: str
    config_version: int
    deck_commitment: str
    deck_seed_hex: str  # private until DeckRevealed
    yellow_at: int
    close_at: int
    previous_bets: tuple[tuple[str, tuple[Placement, ...]], ...]  # per player, for REPEAT
    at: int


@dataclass(frozen=True, slots=True)
class SeatTaken:
    seat: int
    player: str
    at: int


@dataclass(frozen=True, slots=True)
class BetsPlaced:
    """One betting action: a chip (``kind`` "place"), a DOUBLE or a REPEAT."""

    seat: int
    kind: str
    placements: tuple[Placement, ...]
    at: int


@dataclass(frozen=True, slots=True)
class BetsUndone:
    """UNDO: the seat's last betting action is taken back."""

    seat: int
    placements: tuple[Placement, ...]
    at: int


@dataclass(frozen=True, slots=True)
class LightChanged:
    light: str  # "yellow" | "red"
    at: int


@dataclass(frozen=True, slots=True)
class BettingClosed:
    stakes: tuple[tuple[int, int, int], ...]  # (seat, ante, trips) of seats in play
    at: int


@dataclass(frozen=True, slots=True)
class CardsDealt:
    street: str  # "hole" (the shared player hand) | "flop" | "turn_river"
    cards: tuple[int, ...]
    at: int


@dataclass(frozen=True, slots=True)
class DecisionWindowOpened:
    street: str  # "preflop" | "flop" | "river"
    deadline: int
    at: int


@dataclass(frozen=True, slots=True)
class Decided:
    seat: int
    street: str
    action: str
    play_cents: int
    at: int


@dataclass(frozen=True, slots=True)
class AutoChecked:
    """AUTOCHECKED: the decision timer ran out before the flop or after it."""

    seat: int
    street: str
    at: int


@dataclass(frozen=True, slots=True)
class AutoFolded:
    """AUTO-FOLD: the river decision timer ran out."""

    seat: int
    at: int


@dataclass(frozen=True, slots=True)
class Showdown:
    dealer_cards: tuple[int, int]
    player_rank: int
    player_hand: str
    dealer_rank: int
    dealer_hand: str
    dealer_qualifies: bool
    at: int


@dataclass(frozen=True, slots=True)
class SeatSettled:
    seat: int
    results: tuple[BetResult, ...]
    staked_cents: int
    returned_cents: int
    house_net_cents: int
    at: int


@dataclass(frozen=True, slots=True)
class RoundVoided:
    reason: str
    refunds: tuple[tuple[int, tuple[BetResult, ...]], ...]
    at: int


@dataclass(frozen=True, slots=True)
class DeckRevealed:
    deck_seed_hex: str
    deck_commitment: str
    at: int


@dataclass(frozen=True, slots=True)
class RoundEnded:
    at: int


Event = (
    RoundOpened
    | SeatTaken
    | BetsPlaced
    | BetsUndone
    | LightChanged
    | BettingClosed
    | CardsDealt
    | DecisionWindowOpened
    | Decided
    | AutoChecked
    | AutoFolded
    | Showdown
    | SeatSettled
    | RoundVoided
    | DeckRevealed
    | RoundEnded
)
