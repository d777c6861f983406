"""How a hand runs inside the tournament: time catch-up (levels, 0:00, expired timers),
decisions made for a player (timeouts, sitting out, pre-turn actions, Electric Mode), the
progress of a hand through the engine, and its end (eliminations, places and prizes).

`HandFlow` is a part of `Tournament` (its base class): it emits events through the
aggregate's `_emit`, so the state still changes only by folding events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from electric_domain.holdem.moves import Move
from electric_domain.tournament import preaction as pa
from electric_domain.tournament import prizes as pz
from electric_domain.tournament import timers as tm
from electric_domain.tournament.config import TournamentConfig
from electric_domain.tournament.errors import NotAllowedNow, RejectReason
from electric_domain.tournament.events import (
    ActionTaken,
    Cause,
    ClockExpired,
    Event,
    HandEnded,
    LevelAdvanced,
    PlayerEliminated,
    PreActionChanged,
    PreActionUnselected,
    SatOut,
    SitOutReason,
    TimeBankStarted,
    TimedOut,
    TimeoutKind,
    TournamentFinished,
    TurnStarted,
    UnselectReason,
)
from electric_domain.tournament.hand_port import HandPort, IllegalMove
from electric_domain.tournament.state import TournamentState


class HandFlow:
    """Time and hand driving of the tournament aggregate (see the module doc)."""

    config: TournamentConfig
    port: HandPort
    state: TournamentState

    def _emit(self, e: Event) -> None:  # pragma: no cover - provided by Tournament
        raise NotImplementedError

    def _emit_hand(self, events: Sequence[Any], new_hand: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    def hand_live(self) -> bool:
        """A hand is being played (dealt and not over)."""
        return self.state.hand is not None and not self.state.hand_over

    # ------------------------------------------------------------------------ time catch-up

    def _next_clock_at(self) -> int | None:
        st = self.state
        if st.clock_expired:
            return None
        return st.started_at + st.level * st.level_ms

    def _catch_up(self, at: int) -> None:
        st = self.state
        while not st.finished:
            clock_at = self._next_clock_at()
            turn_at = st.turn.deadline if st.turn is not None else None
            if clock_at is not None and clock_at <= at and (turn_at is None or clock_at <= turn_at):
                if st.level < st.levels:
                    self._emit(
                        LevelAdvanced(st.level + 1, *_blinds(self.config, st.level), at=clock_at)
                    )
                else:
                    self._emit(ClockExpired(clock_at, st.hand_no if self.hand_live() else 0))
            elif turn_at is not None and turn_at <= at:
                self._expire_turn(turn_at)
            else:
                return

    def _expire_turn(self, t: int) -> None:
        st = self.state
        turn = st.turn
        assert turn is not None
        seat = st.seats[turn.seat]
        if turn.phase is tm.Phase.ACTION and tm.bank_activates(seat.bank_ms, seat.voluntary):
            self._emit(
                TimeBankStarted(turn.seat, t, t + seat.bank_ms, st.hand_no, st.next_action_seq)
            )
            return
        kind = TimeoutKind.TIME_BANK if turn.phase is tm.Phase.BANK else TimeoutKind.ACTION_TIMER
        self._emit(TimedOut(turn.seat, t, kind, st.hand_no, st.next_action_seq))
        self._auto(
            turn.seat, pa.check_or_fold(self.port.to_call(st.hand, turn.seat)), t, Cause.TIMEOUT
        )
        if (
            not seat.sitting_out
            and seat.consecutive_timeouts >= self.config.sit_out_after_consecutive_timeouts
        ):
            self._emit(SatOut(turn.seat, SitOutReason.TIMEOUTS, t))
        self._progress(t)

    # ------------------------------------------------------------------------- hand driving

    def _behind(self, seat: int) -> int:
        return self.port.stacks(self.state.hand).get(seat, 0)

    def _auto(self, seat: int, auto: pa.Auto, at: int, cause: Cause) -> None:
        if auto is pa.Auto.BET:
            legal = self.port.legal(self.state.hand)
            if legal.is_bet and legal.min_raise_to is not None:
                self._do_act(seat, Move.BET, legal.min_raise_to, at, cause)
                return
            auto = pa.Auto.CHECK if legal.can_check else pa.Auto.FOLD
        move = {pa.Auto.FOLD: Move.FOLD, pa.Auto.CHECK: Move.CHECK, pa.Auto.CALL: Move.CALL}[auto]
        if (
            move is Move.FOLD
            and self.port.legal(self.state.hand).can_check
            and cause
            in (
                Cause.TIMEOUT,
                Cause.SITTING_OUT,
            )
        ):
            move = Move.CHECK
        self._do_act(seat, move, 0, at, cause)

    def _do_act(self, seat: int, move: Move, amount: int, at: int, cause: Cause) -> None:
        st = self.state
        hand = st.hand
        legal = self.port.legal(hand)
        try:
            new_hand, evs = self.port.act(hand, seat, move, amount)
        except IllegalMove as exc:
            raise NotAllowedNow(RejectReason.ILLEGAL_MOVE, str(exc)) from exc
        chips = move in (Move.BET, Move.RAISE_TO, Move.ALL_IN) or (
            move is Move.CALL and legal.call_amount > 0
        )
        voluntary = chips and cause in (Cause.PLAYER, Cause.PRE_ACTION)
        s = st.seats[seat]
        bank = s.bank_ms
        if st.turn is not None and st.turn.seat == seat:
            bank = (
                0
                if cause is Cause.TIMEOUT and st.turn.phase is tm.Phase.BANK
                else (tm.bank_after_action(st.turn, at, bank))
            )
        street = self.port.street(hand)
        done = self.port.action_result(hand, seat, evs)
        self._emit(
            ActionTaken(
                seat, move, amount, cause, voluntary, bank, at,
                hand_no=st.hand_no,
                action_seq=st.next_action_seq,
                amount_added=done.amount_added,
                street_bet=done.street_bet,
                all_in=done.all_in,
                street=done.street,
            )
        )  # fmt: skip
        self._emit_hand(evs, new_hand)
        self._sync_preactions(street, at)

    def _unselect(self, seat: int, reason: UnselectReason, at: int) -> None:
        sel = self.state.seats[seat].preaction
        action = sel.action if sel is not None else None
        self._emit(PreActionUnselected(seat, reason, at, action, self.state.hand_no))

    def _sync_preactions(self, street_before: int, at: int) -> None:
        st = self.state
        hand = st.hand
        round_over = self.port.is_over(hand) or self.port.street(hand) != street_before
        for i, s in enumerate(st.seats):
            sel = s.preaction
            if sel is None:
                continue
            if round_over or not self.port.in_hand(hand, i):
                self._unselect(i, UnselectReason.ROUND_END, at)
                continue
            new = pa.on_bet_change(sel, self.port.to_call(hand, i))
            if new is None:
                self._unselect(i, UnselectReason.BET, at)
            elif new != sel:
                self._emit(PreActionChanged(i, new.action, new.to_call, at, st.hand_no))

    def _progress(self, at: int) -> None:
        st = self.state
        port = self.port
        while self.hand_live():
            street = port.street(st.hand)
            new_hand, evs = port.advance(st.hand)
            if evs:
                self._emit_hand(evs, new_hand)
                self._sync_preactions(street, at)
            if port.is_over(st.hand):
                self._end_hand(at)
                return
            seat = port.actor(st.hand)
            if seat is None:
                if not evs:
                    raise RuntimeError("hand engine is stuck: no actor and nothing to advance")
                continue
            s = st.seats[seat]
            if st.electric_hand:
                legal = port.legal(st.hand)
                if legal.max_raise_to is not None:
                    self._do_act(seat, Move.ALL_IN, 0, at, Cause.ELECTRIC)
                elif legal.call_amount > 0:
                    self._do_act(seat, Move.CALL, 0, at, Cause.ELECTRIC)
                else:
                    self._do_act(seat, Move.CHECK, 0, at, Cause.ELECTRIC)
                continue
            if s.sitting_out:
                self._auto(
                    seat, pa.check_or_fold(port.to_call(st.hand, seat)), at, Cause.SITTING_OUT
                )
                continue
            if s.preaction is not None:
                auto = pa.resolve(s.preaction, port.to_call(st.hand, seat))
                self._unselect(seat, UnselectReason.EXECUTED, at)
                self._auto(seat, auto, at, Cause.PRE_ACTION)
                continue
            if st.turn is None or st.turn.seat != seat:
                self._emit(
                    TurnStarted(
                        seat, at, at + self.config.action_timer_ms, st.hand_no, st.next_action_seq
                    )
                )
            return

    def _end_hand(self, at: int) -> None:
        st = self.state
        after = self.port.stacks(st.hand)
        stacks = tuple(0 if s.eliminated else after.get(i, 0) for i, s in enumerate(st.seats))
        seed_hex = self.port.deck_seed_hex(st.hand)
        self._emit(HandEnded(st.hand_no, stacks, seed_hex, at, st.deck_commitment))
        busted = {
            i: s.start_stack for i, s in enumerate(st.seats) if not s.eliminated and stacks[i] == 0
        }
        left = sum(1 for x in stacks if x > 0)
        assert st.positions is not None
        for finish in pz.rank_busts(busted, left):
            for seat in finish.seats:
                self._emit(
                    PlayerEliminated(
                        seat, st.hand_no, finish.places, busted[seat], st.positions.button, at
                    )
                )
        if left == 1:
            winner = next(i for i, x in enumerate(stacks) if x > 0)
            entry = self.config.pay_table.entry(st.multiplier)
            finishes = [*st.finishes, (pz.Finish((1,), (winner,)), st.positions.button)]
            prizes = pz.award(st.prize_pool_cents, entry.shares, finishes, len(st.seats))
            places: dict[int, tuple[int, ...]] = {}
            for f, _ in finishes:
                for seat in f.seats:
                    places[seat] = f.places
            n = len(st.seats)
            self._emit(
                TournamentFinished(
                    winner=winner,
                    places=tuple(places[i] for i in range(n)),
                    prizes_cents=tuple(prizes.get(i, 0) for i in range(n)),
                    hands=st.hand_no,
                    at=at,
                    eliminated_in=tuple(s.eliminated_in for s in st.seats),
                )
            )


def _blinds(cfg: TournamentConfig, level0: int) -> tuple[int, int, int]:
    lv = cfg.blind_levels[level0]
    return lv.small_blind, lv.big_blind, lv.ante
