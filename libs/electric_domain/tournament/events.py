"""Tournament commands and events (immutable). State is a fold over the events.

Every command and event carries ``at``: milliseconds on the service's clock, supplied as
input (the domain never reads a clock). Seats are 0-based indices into the player list.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from electric_domain.holdem.moves import Move
from electric_domain.holdem.state import Street
from electric_domain.tournament.preaction import PreAction

# ---------------------------------------------------------------------------------- commands


@dataclass(frozen=True, slots=True)
class DealHand:
    """Deal the next hand with a fresh 32-byte deck seed (from the OS CSPRNG in production).

    ``settings``: each seat's showdown settings (index = seat; missing seats and an empty
    tuple mean the defaults: muck whatever the rules let be mucked). They become part of the
    hand's events (the adapter's `DeckEscrowed`), so replay decides exactly as live."""

    at: int
    deck_seed: bytes
    settings: tuple[ShowSettings, ...] = ()


@dataclass(frozen=True, slots=True)
class ShowSettings:
    """A player's seed settings "Muck Winning Hands" / "Muck Losing Hands" (both on by
    default). They only decide what the showdown rules leave to the player
    (docs/tournament-rules.md "Showdown: show or muck")."""

    muck_winning: bool = True
    muck_losing: bool = True


@dataclass(frozen=True, slots=True)
class Act:
    """A player's decision; BET and RAISE_TO name the street total ``amount``.

    ``hand_no`` / ``action_seq``: the hand and action the player answers (what their screen
    showed); when given, a table that moved on refuses it (`StaleCommand`)."""

    seat: int
    move: Move
    at: int
    amount: int = 0
    hand_no: int | None = None
    action_seq: int | None = None


@dataclass(frozen=True, slots=True)
class SelectPreAction:
    """Pre-select a pre-turn action (seed 000 §5.b); ``hand_no`` / ``action_seq`` as `Act`."""

    seat: int
    action: PreAction
    at: int
    hand_no: int | None = None
    action_seq: int | None = None


@dataclass(frozen=True, slots=True)
class ClearPreAction:
    """Unselect the pre-turn action before the player's turn; ``hand_no`` as `Act`."""

    seat: int
    at: int
    hand_no: int | None = None


@dataclass(frozen=True, slots=True)
class SitOut:
    seat: int
    at: int


@dataclass(frozen=True, slots=True)
class SitIn:
    seat: int
    at: int


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passed: process level changes, 0:00 and expired turn deadlines up to ``at``."""

    at: int


@dataclass(frozen=True, slots=True)
class Timeout:
    """The current turn's deadline (action timer or time bank) passed; ``at`` >= deadline."""

    seat: int
    at: int


Command = DealHand | Act | SelectPreAction | ClearPreAction | SitOut | SitIn | Tick | Timeout

# ------------------------------------------------------------------------------------ events


class Cause(StrEnum):
    """Why an action was taken."""

    PLAYER = "player"
    PRE_ACTION = "pre_action"
    TIMEOUT = "timeout"
    SITTING_OUT = "sitting_out"
    ELECTRIC = "electric"


class UnselectReason(StrEnum):
    """Why a pre-turn action was unselected."""

    PLAYER = "player"  # the player cleared it
    BET = "bet"  # the amount to call changed (seed §5.b.iii/iv)
    EXECUTED = "executed"  # it was performed at the player's turn
    ROUND_END = "round_end"
    SITTING_OUT = "sitting_out"


class SitOutReason(StrEnum):
    """Why a player sat out."""

    PLAYER = "player"
    TIMEOUTS = "timeouts"  # too many consecutive timeouts


class TimeoutKind(StrEnum):
    """Which timer ran out."""

    ACTION_TIMER = "action_timer"
    TIME_BANK = "time_bank"


@dataclass(frozen=True, slots=True)
class TournamentStarted:
    tournament_id: str
    config_version: str
    buy_in_cents: int
    rake_cents: int
    prize_pool_cents: int
    multiplier: int
    multiplier_commitment: str
    multiplier_seed_hex: str
    players: tuple[str, ...]
    starting_stack: int
    levels: int
    level_duration_ms: int
    first_button: int
    time_bank_ms: int
    at: int


@dataclass(frozen=True, slots=True)
class LevelAdvanced:
    level: int  # 1-based
    small_blind: int
    big_blind: int
    ante: int
    at: int


@dataclass(frozen=True, slots=True)
class ClockExpired:
    """The tournament clock reached 0:00: Electric Mode starts with the next hand dealt.
    ``hand_no``: the hand in progress then (0 between hands)."""

    at: int
    hand_no: int = 0


@dataclass(frozen=True, slots=True)
class ElectricModeStarted:
    hand_no: int
    at: int


@dataclass(frozen=True, slots=True)
class HandStarted:
    hand_no: int
    at: int
    button: int
    small_blind_seat: int
    big_blind_seat: int
    level: int  # 1-based
    small_blind: int
    big_blind: int
    ante: int
    electric: bool
    stacks: tuple[int, ...]  # per seat at the start of the hand (0 for eliminated)
    deck_commitment: str  # SHA-256 of the deck seed, published before the deal


@dataclass(frozen=True, slots=True)
class HandEvent:
    """An event of the hand engine, carried in the tournament stream."""

    hand_no: int
    event: Any


# Events of a turn carry the hand and the number of the action they wait for / are
# (``action_seq``, 1-based per hand), so projections need not count.


@dataclass(frozen=True, slots=True)
class TurnStarted:
    seat: int
    at: int
    deadline: int
    hand_no: int = 0
    action_seq: int = 0


@dataclass(frozen=True, slots=True)
class TimeBankStarted:
    seat: int
    at: int
    deadline: int
    hand_no: int = 0
    action_seq: int = 0


@dataclass(frozen=True, slots=True)
class TimedOut:
    seat: int
    at: int
    kind: TimeoutKind = TimeoutKind.ACTION_TIMER
    hand_no: int = 0
    action_seq: int = 0


@dataclass(frozen=True, slots=True)
class ActionTaken:
    """A decision (made by the player or automatically); the engine's events follow.

    What it did to the seat's chips is here too (``amount_added``, ``street_bet`` after it,
    ``all_in``, the ``street`` it was made in), so projections need not re-fold the hand."""

    seat: int
    move: Move
    amount: int
    cause: Cause
    voluntary_chips: bool  # put chips in the pot by the player's own choice
    bank_ms_after: int
    at: int
    hand_no: int = 0
    action_seq: int = 0
    amount_added: int = 0
    street_bet: int = 0
    all_in: bool = False
    street: Street = Street.PREFLOP


@dataclass(frozen=True, slots=True)
class PreActionSelected:
    seat: int
    action: PreAction
    to_call: int
    at: int
    hand_no: int = 0


@dataclass(frozen=True, slots=True)
class PreActionChanged:
    """The selection followed a bet change: check/fold turned into fold, or to_call moved."""

    seat: int
    action: PreAction
    to_call: int
    at: int
    hand_no: int = 0


@dataclass(frozen=True, slots=True)
class PreActionUnselected:
    """``action``: the selection that was cleared."""

    seat: int
    reason: UnselectReason
    at: int
    action: PreAction | None = None
    hand_no: int = 0


@dataclass(frozen=True, slots=True)
class SatOut:
    seat: int
    reason: SitOutReason
    at: int


@dataclass(frozen=True, slots=True)
class SatIn:
    seat: int
    at: int


@dataclass(frozen=True, slots=True)
class HandEnded:
    hand_no: int
    stacks: tuple[int, ...]
    deck_seed_hex: str  # the reveal: SHA-256 of it is HandStarted.deck_commitment
    at: int
    deck_commitment: str = ""


@dataclass(frozen=True, slots=True)
class PlayerEliminated:
    seat: int
    hand_no: int
    places: tuple[int, ...]  # more than one place when tied (shared)
    start_stack: int
    button: int
    at: int


@dataclass(frozen=True, slots=True)
class TournamentFinished:
    winner: int
    places: tuple[tuple[int, ...], ...]  # per seat
    prizes_cents: tuple[int, ...]  # per seat; sums to the prize pool
    hands: int
    at: int
    eliminated_in: tuple[int, ...] = ()  # per seat: the hand they busted in (0: the winner)


Event = (
    TournamentStarted
    | LevelAdvanced
    | ClockExpired
    | ElectricModeStarted
    | HandStarted
    | HandEvent
    | TurnStarted
    | TimeBankStarted
    | TimedOut
    | ActionTaken
    | PreActionSelected
    | PreActionChanged
    | PreActionUnselected
    | SatOut
    | SatIn
    | HandEnded
    | PlayerEliminated
    | TournamentFinished
)
