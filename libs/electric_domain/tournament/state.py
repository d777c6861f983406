"""What the tournament aggregate knows (rebuilt exactly by folding its events), and the
small answers it gives (`Deadline`, `Result`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from electric_domain.tournament import preaction as pa
from electric_domain.tournament import prizes as pz
from electric_domain.tournament import schedule as sch
from electric_domain.tournament import timers as tm


@dataclass(slots=True)
class SeatState:
    player_id: str
    stack: int
    bank_ms: int
    sitting_out: bool = False
    consecutive_timeouts: int = 0
    eliminated: bool = False
    eliminated_in: int = 0  # the hand the seat busted in
    places: tuple[int, ...] = ()
    prize_cents: int = 0
    preaction: pa.Selection | None = None
    voluntary: bool = False
    start_stack: int = 0


@dataclass(slots=True)
class TournamentState:
    """Everything the aggregate knows; rebuilt exactly by folding the events."""

    tournament_id: str = ""
    config_version: str = ""
    buy_in_cents: int = 0
    prize_pool_cents: int = 0
    multiplier: int = 0
    multiplier_commitment: str = ""
    multiplier_seed_hex: str = ""
    started_at: int = 0
    levels: int = 0
    level_ms: int = 0
    level: int = 0  # 1-based display level
    first_button: int = 0
    seats: list[SeatState] = field(default_factory=list)
    positions: sch.Positions | None = None
    hand_no: int = 0
    hand: Any = None
    hand_over: bool = True
    hand_level: int = 0
    hand_blinds: tuple[int, int, int] = (0, 0, 0)
    deck_commitment: str = ""  # of the current (or last) hand
    actions: int = 0  # decisions taken in the current (or last) hand
    electric_hand: bool = False
    clock_expired: bool = False
    electric_mode: bool = False
    electric_since_hand: int = 0
    turn: tm.TurnClock | None = None
    turn_serial: int = 0  # number of turns started so far (identifies the current turn)
    now: int = 0
    finished: bool = False
    winner: int = -1
    finishes: list[tuple[pz.Finish, int]] = field(default_factory=list)
    events_applied: int = 0

    @property
    def next_action_seq(self) -> int:
        """Number of the next decision of the current hand (1-based)."""
        return self.actions + 1


@dataclass(frozen=True, slots=True)
class Deadline:
    """When the current turn's timer runs out (send Tick/Timeout at ``at``)."""

    seat: int
    at: int
    phase: tm.Phase


@dataclass(frozen=True, slots=True)
class Result:
    """Final places (a tuple per seat; several places = shared) and prizes in cents."""

    winner: int
    places: tuple[tuple[int, ...], ...]
    prizes_cents: tuple[int, ...]
    prize_pool_cents: int
