"""The fold of the tournament's own events into its state (the only place state changes;
engine events inside `HandEvent` are folded by the hand port)."""

from __future__ import annotations

from electric_domain.tournament import preaction as pa
from electric_domain.tournament import prizes as pz
from electric_domain.tournament import schedule as sch
from electric_domain.tournament import timers as tm
from electric_domain.tournament.events import (
    ActionTaken,
    Cause,
    ClockExpired,
    ElectricModeStarted,
    Event,
    HandEnded,
    HandStarted,
    LevelAdvanced,
    PlayerEliminated,
    PreActionChanged,
    PreActionSelected,
    PreActionUnselected,
    SatIn,
    SatOut,
    TimeBankStarted,
    TimedOut,
    TournamentFinished,
    TournamentStarted,
    TurnStarted,
)
from electric_domain.tournament.hand_port import HandPort
from electric_domain.tournament.state import SeatState, TournamentState


def apply_event(st: TournamentState, port: HandPort, e: Event) -> None:
    """Fold one tournament event (not a `HandEvent`) into ``st``."""
    st.now = max(st.now, e.at)  # type: ignore[union-attr]
    if isinstance(e, ActionTaken):
        s = st.seats[e.seat]
        s.bank_ms = e.bank_ms_after
        s.voluntary = s.voluntary or e.voluntary_chips
        if e.cause in (Cause.PLAYER, Cause.PRE_ACTION):
            s.consecutive_timeouts = 0
        elif e.cause is Cause.TIMEOUT:
            s.consecutive_timeouts += 1
        st.turn = None
        st.actions += 1
    elif isinstance(e, TurnStarted):
        st.turn = tm.start_turn(e.seat, e.at, e.deadline - e.at)
        st.turn_serial += 1
    elif isinstance(e, TimeBankStarted):
        assert st.turn is not None
        st.turn = tm.start_bank(st.turn, e.at, e.deadline - e.at)
    elif isinstance(e, TimedOut):
        pass
    elif isinstance(e, PreActionSelected | PreActionChanged):
        st.seats[e.seat].preaction = pa.Selection(e.action, e.to_call)
    elif isinstance(e, PreActionUnselected):
        st.seats[e.seat].preaction = None
    elif isinstance(e, HandStarted):
        st.hand_no = e.hand_no
        st.positions = sch.Positions(e.button, e.small_blind_seat, e.big_blind_seat)
        st.hand = port.initial()
        st.hand_over = False
        st.hand_level = e.level
        st.hand_blinds = (e.small_blind, e.big_blind, e.ante)
        st.electric_hand = e.electric
        st.deck_commitment = e.deck_commitment
        st.actions = 0
        st.turn = None
        for i, s in enumerate(st.seats):
            s.voluntary = False
            s.start_stack = e.stacks[i]
    elif isinstance(e, HandEnded):
        for i, s in enumerate(st.seats):
            s.stack = e.stacks[i]
            s.preaction = None
        st.hand_over = True
        st.turn = None
    elif isinstance(e, LevelAdvanced):
        st.level = e.level
    elif isinstance(e, ClockExpired):
        st.clock_expired = True
    elif isinstance(e, ElectricModeStarted):
        st.electric_mode = True
        st.electric_since_hand = e.hand_no
    elif isinstance(e, SatOut):
        st.seats[e.seat].sitting_out = True
    elif isinstance(e, SatIn):
        st.seats[e.seat].sitting_out = False
        st.seats[e.seat].consecutive_timeouts = 0
    elif isinstance(e, PlayerEliminated):
        _eliminated(st, e)
    elif isinstance(e, TournamentFinished):
        st.finished = True
        st.winner = e.winner
        for i, s in enumerate(st.seats):
            s.places = e.places[i]
            s.prize_cents = e.prizes_cents[i]
    elif isinstance(e, TournamentStarted):
        _started(st, e)
    else:  # pragma: no cover - exhaustive
        raise TypeError(f"unknown event {e!r}")


def _eliminated(st: TournamentState, e: PlayerEliminated) -> None:
    s = st.seats[e.seat]
    s.eliminated = True
    s.eliminated_in = e.hand_no
    s.places = e.places
    s.preaction = None
    if not st.finishes or st.finishes[-1][0].places != e.places:
        st.finishes.append((pz.Finish(e.places, (e.seat,)), e.button))
    else:
        f, b = st.finishes[-1]
        st.finishes[-1] = (pz.Finish(f.places, (*f.seats, e.seat)), b)


def _started(st: TournamentState, e: TournamentStarted) -> None:
    st.tournament_id = e.tournament_id
    st.config_version = e.config_version
    st.buy_in_cents = e.buy_in_cents
    st.prize_pool_cents = e.prize_pool_cents
    st.multiplier = e.multiplier
    st.multiplier_commitment = e.multiplier_commitment
    st.multiplier_seed_hex = e.multiplier_seed_hex
    st.started_at = e.at
    st.levels = e.levels
    st.level_ms = e.level_duration_ms
    st.first_button = e.first_button
    st.seats = [SeatState(p, e.starting_stack, e.time_bank_ms) for p in e.players]
