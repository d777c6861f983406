"""The Electric Poker tournament aggregate: commands in, events out, state = fold of events.

Deterministic given the configuration, the multiplier seed, the deck seeds and the sequence
of commands (each carrying its time ``at`` in ms). Nothing here reads a clock or does I/O.

Flow for a service::

    t = Tournament.start(cfg, tournament_id=..., players=(...), buy_in_cents=500,
                         multiplier_seed=seed, at=now)          # events: t.history
    events = t.handle(DealHand(at=now, deck_seed=os.urandom(32)))
    events = t.handle(Act(seat=1, move="call", at=now))
    t.next_wakeup_at()   # schedule Tick(at) then (turn deadline, level change, 0:00)
    t.view(seat, at=now) # player-private view incl. legal actions and pre-actions
    t.result()           # places and prizes once finished

Time catch-up: before any command is validated, everything due up to its ``at`` happens
first, in time order (level changes, 0:00, an expired action timer or time bank). Those
events are facts of the passing time; if the command is then rejected they are still
applied, and `Rejected.events` carries them so the service can persist them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from electric_domain.tournament import preaction as pa
from electric_domain.tournament import prizes as pz
from electric_domain.tournament import schedule as sch
from electric_domain.tournament import timers as tm
from electric_domain.tournament.config import TournamentConfig
from electric_domain.tournament.events import (
    Act,
    ActionTaken,
    Cause,
    ClearPreAction,
    ClockExpired,
    Command,
    DealHand,
    ElectricModeStarted,
    Event,
    HandEnded,
    HandEvent,
    HandStarted,
    LevelAdvanced,
    PlayerEliminated,
    PreActionChanged,
    PreActionSelected,
    PreActionUnselected,
    SatIn,
    SatOut,
    SelectPreAction,
    SitIn,
    SitOut,
    Tick,
    TimeBankStarted,
    TimedOut,
    Timeout,
    TournamentFinished,
    TournamentStarted,
    TurnStarted,
)
from electric_domain.tournament.fairness import (
    SEED_BYTES,
    commitment,
    draw_multiplier,
    initial_button_index,
)
from electric_domain.tournament.hand_port import HandPort, IllegalMove, Legal, Move


class Rejected(ValueError):
    """A command was refused. ``code`` maps to a gRPC status; ``events`` are time catch-up
    events that were applied before the refusal (persist them)."""

    def __init__(self, code: str, message: str, events: Sequence[Event] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.events: list[Event] = list(events)


INVALID = "INVALID_ARGUMENT"
PRECONDITION = "FAILED_PRECONDITION"


@dataclass(slots=True)
class SeatState:
    player_id: str
    stack: int
    bank_ms: int
    sitting_out: bool = False
    consecutive_timeouts: int = 0
    eliminated: bool = False
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


@dataclass(frozen=True, slots=True)
class Deadline:
    """When the current turn's timer runs out (send Tick/Timeout at ``at``)."""

    seat: int
    at: int
    phase: tm.Phase


@dataclass(frozen=True, slots=True)
class PlayerView:
    """What one player may see (their own hole cards only, until a showdown shows others)."""

    tournament_id: str
    seat: int
    players: tuple[str, ...]
    stacks: tuple[int, ...]
    sitting_out: tuple[bool, ...]
    eliminated: tuple[bool, ...]
    multiplier: int
    prize_pool_cents: int
    level: int
    small_blind: int
    big_blind: int
    ante: int
    clock_remaining_ms: int
    electric_mode: bool
    hand_no: int
    hand_in_progress: bool
    button: int | None
    small_blind_seat: int | None
    big_blind_seat: int | None
    hole_cards: tuple[str, ...]
    shown: tuple[tuple[int, tuple[str, ...]], ...]
    board: tuple[str, ...]
    pot: int
    actor: int | None
    legal: Legal | None
    deadline: Deadline | None
    time_bank_ms: int
    pre_actions: frozenset[pa.PreAction]
    pre_action: pa.Selection | None
    finished: bool
    places: tuple[tuple[int, ...], ...]
    prizes_cents: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Result:
    """Final places (a tuple per seat; several places = shared) and prizes in cents."""

    winner: int
    places: tuple[tuple[int, ...], ...]
    prizes_cents: tuple[int, ...]
    prize_pool_cents: int


def _default_port() -> HandPort:
    from electric_domain.tournament.engine_adapter import HoldemPort

    return HoldemPort()


class Tournament:
    """One Electric Poker sit-and-go. Mutated only by applying events (see `apply`)."""

    def __init__(self, config: TournamentConfig, port: HandPort | None = None) -> None:
        self.config = config
        self.port: HandPort = port if port is not None else _default_port()
        self.state = TournamentState()
        self.history: list[Event] = []
        self._out: list[Event] | None = None

    # ------------------------------------------------------------------------ construction

    @classmethod
    def start(
        cls,
        config: TournamentConfig,
        *,
        tournament_id: str,
        players: Sequence[str],
        buy_in_cents: int,
        multiplier_seed: bytes,
        at: int,
        port: HandPort | None = None,
    ) -> Tournament:
        """Start a filled table: draw the multiplier from the (committed) seed, seat players.

        ``players`` in seat order; the first button is derived from the same seed."""
        if len(players) != config.seats or len(set(players)) != len(players):
            raise Rejected(INVALID, f"need {config.seats} distinct players, got {list(players)}")
        if len(multiplier_seed) != SEED_BYTES:
            raise Rejected(INVALID, f"multiplier seed must be {SEED_BYTES} bytes")
        try:
            tier = config.tier(buy_in_cents)
        except KeyError as exc:
            raise Rejected(INVALID, str(exc)) from exc
        draw = draw_multiplier(multiplier_seed, config.pay_table)
        t = cls(config, port)
        levels = config.levels_for(draw.multiplier)
        t._emit_all(
            [
                TournamentStarted(
                    tournament_id=tournament_id,
                    config_version=config.version,
                    buy_in_cents=buy_in_cents,
                    rake_cents=tier.rake_cents,
                    prize_pool_cents=config.prize_pool_cents(draw.multiplier, buy_in_cents),
                    multiplier=draw.multiplier,
                    multiplier_commitment=commitment(multiplier_seed),
                    multiplier_seed_hex=multiplier_seed.hex(),
                    players=tuple(players),
                    starting_stack=config.starting_stack,
                    levels=levels,
                    level_duration_ms=config.level_duration_ms,
                    first_button=initial_button_index(multiplier_seed, config.seats),
                    time_bank_ms=config.time_bank_ms,
                    at=at,
                ),
                LevelAdvanced(1, *_blinds(config, 0), at=at),
            ]
        )
        return t

    @classmethod
    def replay(
        cls, config: TournamentConfig, events: Iterable[Event], port: HandPort | None = None
    ) -> Tournament:
        """Rebuild a tournament from its events (no commands re-run)."""
        t = cls(config, port)
        for e in events:
            t.apply(e)
        return t

    # ---------------------------------------------------------------------------- commands

    def handle(self, cmd: Command) -> list[Event]:
        """Run a command; returns the new events (already applied). Raises `Rejected`."""
        if self._out is not None:
            raise RuntimeError("re-entrant handle")
        st = self.state
        if not st.seats:
            raise Rejected(PRECONDITION, "tournament not started")
        if st.finished:
            raise Rejected(PRECONDITION, "tournament finished")
        if cmd.at < st.now:
            raise Rejected(INVALID, f"time went backwards: at={cmd.at} < {st.now}")
        if isinstance(cmd, Timeout) and (
            st.turn is None or st.turn.seat != cmd.seat or cmd.at < st.turn.deadline
        ):
            raise Rejected(PRECONDITION, f"no expired turn timer for seat {cmd.seat}")
        out: list[Event] = []
        self._out = out
        try:
            self._catch_up(cmd.at)
            try:
                self._dispatch(cmd)
            except Rejected as exc:
                exc.events = list(out)
                raise
        finally:
            self._out = None
        return out

    def _dispatch(self, cmd: Command) -> None:
        st = self.state
        if isinstance(cmd, Tick):
            return
        if isinstance(cmd, Timeout):  # validated above; the catch-up expired the timer
            return
        if isinstance(cmd, DealHand):
            self._deal(cmd)
            return
        if st.finished:
            raise Rejected(PRECONDITION, "tournament finished")
        self._seat_ok(cmd.seat)
        if isinstance(cmd, Act):
            self._player_act(cmd)
        elif isinstance(cmd, SelectPreAction):
            self._select(cmd)
        elif isinstance(cmd, ClearPreAction):
            if st.seats[cmd.seat].preaction is None:
                raise Rejected(PRECONDITION, "no pre-turn action selected")
            self._emit(PreActionUnselected(cmd.seat, "player", cmd.at))
        elif isinstance(cmd, SitOut):
            self._sit_out(cmd)
        elif isinstance(cmd, SitIn):
            if not st.seats[cmd.seat].sitting_out:
                raise Rejected(PRECONDITION, "not sitting out")
            self._emit(SatIn(cmd.seat, cmd.at))
        else:  # pragma: no cover - exhaustive
            raise Rejected(INVALID, f"unknown command {cmd!r}")

    def _seat_ok(self, seat: int) -> None:
        st = self.state
        if not 0 <= seat < len(st.seats):
            raise Rejected(INVALID, f"no seat {seat}")
        if st.seats[seat].eliminated:
            raise Rejected(PRECONDITION, f"seat {seat} is eliminated")

    def _hand_live(self) -> bool:
        return self.state.hand is not None and not self.state.hand_over

    def _deal(self, cmd: DealHand) -> None:
        st, cfg = self.state, self.config
        if self._hand_live():
            raise Rejected(PRECONDITION, "a hand is in progress")
        if len(cmd.deck_seed) != SEED_BYTES:
            raise Rejected(INVALID, f"deck seed must be {SEED_BYTES} bytes")
        live = [i for i, s in enumerate(st.seats) if not s.eliminated]
        n = len(st.seats)
        if st.positions is None:
            pos = sch.first_positions(st.first_button, live, n)
        else:
            pos = sch.next_positions(st.positions, live, n)
        level0 = st.level - 1
        sb, bb, ante = _blinds(cfg, level0)
        hand_no = st.hand_no + 1
        electric = st.clock_expired
        if electric and not st.electric_mode:
            self._emit(ElectricModeStarted(hand_no, cmd.at))
        stacks = {i: st.seats[i].stack for i in live}
        self._emit(
            HandStarted(
                hand_no=hand_no,
                at=cmd.at,
                button=pos.button,
                small_blind_seat=pos.small_blind,
                big_blind_seat=pos.big_blind,
                level=st.level,
                small_blind=sb,
                big_blind=bb,
                ante=ante,
                electric=electric,
                stacks=tuple(s.stack if not s.eliminated else 0 for s in st.seats),
                deck_commitment=commitment(cmd.deck_seed),
            )
        )
        new_hand, evs = self.port.start(
            stacks=stacks,
            button=pos.button,
            small_blind_seat=pos.small_blind,
            big_blind_seat=pos.big_blind,
            small_blind=sb,
            big_blind=bb,
            ante=ante,
            deck_seed=cmd.deck_seed,
            table_size=n,
        )
        self._emit_hand(evs, new_hand)
        self._progress(cmd.at)

    def _player_act(self, cmd: Act) -> None:
        st = self.state
        if not self._hand_live() or st.turn is None or st.turn.seat != cmd.seat:
            raise Rejected(PRECONDITION, f"not seat {cmd.seat}'s turn")
        try:
            move = Move(cmd.move)
        except ValueError as exc:
            raise Rejected(INVALID, f"unknown move {cmd.move!r}") from exc
        self._do_act(cmd.seat, move, cmd.amount, cmd.at, Cause.PLAYER)
        self._progress(cmd.at)

    def _select(self, cmd: SelectPreAction) -> None:
        st = self.state
        seat = st.seats[cmd.seat]
        if not self._hand_live():
            raise Rejected(PRECONDITION, "no hand in progress")
        if st.electric_hand:
            raise Rejected(PRECONDITION, "Electric Mode: every player is all-in automatically")
        if seat.sitting_out:
            raise Rejected(PRECONDITION, "sitting out: sit in first")
        if not self.port.in_hand(st.hand, cmd.seat):
            raise Rejected(PRECONDITION, "not active in this hand")
        if self.port.actor(st.hand) == cmd.seat:
            raise Rejected(PRECONDITION, "it is your turn: act instead")
        to_call = self.port.to_call(st.hand, cmd.seat)
        offered = pa.available(to_call, self._behind(cmd.seat))
        if cmd.action not in offered:
            raise Rejected(
                PRECONDITION,
                f"pre-turn action {cmd.action.value} not offered "
                f"(to call {to_call}; offered {sorted(a.value for a in offered)})",
            )
        self._emit(PreActionSelected(cmd.seat, cmd.action, to_call, cmd.at))

    def _sit_out(self, cmd: SitOut) -> None:
        st = self.state
        if st.seats[cmd.seat].sitting_out:
            raise Rejected(PRECONDITION, "already sitting out")
        if st.seats[cmd.seat].preaction is not None:
            self._emit(PreActionUnselected(cmd.seat, "sitting_out", cmd.at))
        self._emit(SatOut(cmd.seat, "player", cmd.at))
        if self._hand_live() and st.turn is not None and st.turn.seat == cmd.seat:
            self._auto(
                cmd.seat,
                pa.check_or_fold(self.port.to_call(st.hand, cmd.seat)),
                cmd.at,
                Cause.SITTING_OUT,
            )
            self._progress(cmd.at)

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
                    self._emit(ClockExpired(clock_at))
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
            self._emit(TimeBankStarted(turn.seat, t, t + seat.bank_ms))
            return
        self._emit(TimedOut(turn.seat, t))
        self._auto(
            turn.seat, pa.check_or_fold(self.port.to_call(st.hand, turn.seat)), t, Cause.TIMEOUT
        )
        if (
            not seat.sitting_out
            and seat.consecutive_timeouts >= self.config.sit_out_after_consecutive_timeouts
        ):
            self._emit(SatOut(turn.seat, "timeouts", t))
        self._progress(t)

    # ------------------------------------------------------------------------- hand driving

    def _behind(self, seat: int) -> int:
        return self.port.stacks(self.state.hand).get(seat, 0)

    def _auto(self, seat: int, auto: pa.Auto, at: int, cause: Cause) -> None:
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
            raise Rejected(PRECONDITION, str(exc)) from exc
        chips = move in (Move.RAISE_TO, Move.ALL_IN) or (
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
        self._emit(ActionTaken(seat, move.value, amount, cause, voluntary, bank, at))
        self._emit_hand(evs, new_hand)
        self._sync_preactions(street, at)

    def _sync_preactions(self, street_before: int, at: int) -> None:
        st = self.state
        hand = st.hand
        round_over = self.port.is_over(hand) or self.port.street(hand) != street_before
        for i, s in enumerate(st.seats):
            sel = s.preaction
            if sel is None:
                continue
            if round_over or not self.port.in_hand(hand, i):
                self._emit(PreActionUnselected(i, "round_end", at))
                continue
            new = pa.on_bet_change(sel, self.port.to_call(hand, i))
            if new is None:
                self._emit(PreActionUnselected(i, "bet", at))
            elif new != sel:
                self._emit(PreActionChanged(i, new.action, new.to_call, at))

    def _progress(self, at: int) -> None:
        st = self.state
        port = self.port
        while self._hand_live():
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
                self._emit(PreActionUnselected(seat, "executed", at))
                self._auto(seat, auto, at, Cause.PRE_ACTION)
                continue
            if st.turn is None or st.turn.seat != seat:
                self._emit(TurnStarted(seat, at, at + self.config.action_timer_ms))
            return

    def _end_hand(self, at: int) -> None:
        st = self.state
        after = self.port.stacks(st.hand)
        stacks = tuple(0 if s.eliminated else after.get(i, 0) for i, s in enumerate(st.seats))
        self._emit(HandEnded(st.hand_no, stacks, self.port.deck_seed_hex(st.hand), at))
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
                )
            )

    # ------------------------------------------------------------------------------ events

    def _emit(self, e: Event) -> None:
        self.apply(e)
        if self._out is not None:
            self._out.append(e)

    def _emit_hand(self, events: Sequence[Any], new_hand: Any) -> None:
        """Record engine events; the engine already computed the state they fold to (the
        replay tests check that folding them gives the same state)."""
        st = self.state
        for e in events:
            he = HandEvent(st.hand_no, e)
            self.history.append(he)
            st.events_applied += 1
            if self._out is not None:
                self._out.append(he)
        st.hand = new_hand

    def _emit_all(self, es: Iterable[Event]) -> None:
        for e in es:
            self._emit(e)

    def apply(self, e: Event) -> None:
        """Fold one event into the state (the only place state changes)."""
        st = self.state
        self.history.append(e)
        st.events_applied += 1
        if isinstance(e, HandEvent):
            st.hand = self.port.apply(st.hand, e.event)
            return
        st.now = max(st.now, e.at)
        if isinstance(e, ActionTaken):
            s = st.seats[e.seat]
            s.bank_ms = e.bank_ms_after
            s.voluntary = s.voluntary or e.voluntary_chips
            if e.cause in (Cause.PLAYER, Cause.PRE_ACTION):
                s.consecutive_timeouts = 0
            elif e.cause is Cause.TIMEOUT:
                s.consecutive_timeouts += 1
            st.turn = None
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
            st.hand = self.port.initial()
            st.hand_over = False
            st.hand_level = e.level
            st.hand_blinds = (e.small_blind, e.big_blind, e.ante)
            st.electric_hand = e.electric
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
            s = st.seats[e.seat]
            s.eliminated = True
            s.places = e.places
            s.preaction = None
            if not st.finishes or st.finishes[-1][0].places != e.places:
                st.finishes.append((pz.Finish(e.places, (e.seat,)), e.button))
            else:
                f, b = st.finishes[-1]
                st.finishes[-1] = (pz.Finish(f.places, (*f.seats, e.seat)), b)
        elif isinstance(e, TournamentFinished):
            st.finished = True
            st.winner = e.winner
            for i, s in enumerate(st.seats):
                s.places = e.places[i]
                s.prize_cents = e.prizes_cents[i]
        elif isinstance(e, TournamentStarted):
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
        else:  # pragma: no cover - exhaustive
            raise TypeError(f"unknown event {e!r}")

    # ----------------------------------------------------------------------------- queries

    def deadline(self) -> Deadline | None:
        """The running turn timer, if any (schedule `Tick(at)` or `Timeout` for it)."""
        t = self.state.turn
        return None if t is None else Deadline(t.seat, t.deadline, t.phase)

    def next_wakeup_at(self) -> int | None:
        """Earliest time something happens without a player command (turn deadline, level
        change, 0:00). The service sends `Tick(at)` then."""
        if self.state.finished:
            return None
        cands = [x for x in (self._next_clock_at(),) if x is not None]
        if self.state.turn is not None:
            cands.append(self.state.turn.deadline)
        return min(cands) if cands else None

    def awaiting_deal(self) -> bool:
        """True when the next hand should be dealt (`DealHand`)."""
        return bool(self.state.seats) and not self.state.finished and not self._hand_live()

    def legal_actions(self, seat: int) -> Legal | None:
        st = self.state
        if not self._hand_live() or st.turn is None or st.turn.seat != seat:
            return None
        return self.port.legal(st.hand)

    def pre_actions_available(self, seat: int) -> frozenset[pa.PreAction]:
        st = self.state
        if (
            not self._hand_live()
            or st.electric_hand
            or not 0 <= seat < len(st.seats)
            or st.seats[seat].sitting_out
            or not self.port.in_hand(st.hand, seat)
            or self.port.actor(st.hand) == seat
        ):
            return frozenset()
        return pa.available(self.port.to_call(st.hand, seat), self._behind(seat))

    def result(self) -> Result | None:
        st = self.state
        if not st.finished:
            return None
        return Result(
            st.winner,
            tuple(s.places for s in st.seats),
            tuple(s.prize_cents for s in st.seats),
            st.prize_pool_cents,
        )

    def chips_in_play(self) -> int:
        """Stacks plus the pot (conserved: seats × starting stack)."""
        st = self.state
        if self._hand_live():
            behind = self.port.stacks(st.hand)
            return sum(behind.values()) + self.port.pot(st.hand)
        return sum(s.stack for s in st.seats)

    def view(self, seat: int, at: int) -> PlayerView:
        st = self.state
        live = self._hand_live()
        port = self.port
        hand = st.hand
        lvl = max(st.level, 1)
        sb, bb, ante = _blinds(self.config, lvl - 1)
        behind = port.stacks(hand) if live else {}
        stacks = tuple(behind.get(i, 0) if live else s.stack for i, s in enumerate(st.seats))
        pos = st.positions
        has_hand = hand is not None and st.hand_no > 0
        return PlayerView(
            tournament_id=st.tournament_id,
            seat=seat,
            players=tuple(s.player_id for s in st.seats),
            stacks=stacks,
            sitting_out=tuple(s.sitting_out for s in st.seats),
            eliminated=tuple(s.eliminated for s in st.seats),
            multiplier=st.multiplier,
            prize_pool_cents=st.prize_pool_cents,
            level=lvl,
            small_blind=sb,
            big_blind=bb,
            ante=ante,
            clock_remaining_ms=sch.remaining_ms(at - st.started_at, st.level_ms, st.levels),
            electric_mode=st.electric_mode or st.clock_expired,
            hand_no=st.hand_no,
            hand_in_progress=live,
            button=pos.button if pos else None,
            small_blind_seat=pos.small_blind if pos else None,
            big_blind_seat=pos.big_blind if pos else None,
            hole_cards=port.hole_cards(hand, seat) if has_hand else (),
            shown=tuple(sorted(port.shown(hand).items())) if has_hand else (),
            board=port.board(hand) if has_hand else (),
            pot=port.pot(hand) if live else 0,
            actor=st.turn.seat if st.turn is not None else None,
            legal=self.legal_actions(seat),
            deadline=self.deadline(),
            time_bank_ms=st.seats[seat].bank_ms,
            pre_actions=self.pre_actions_available(seat),
            pre_action=st.seats[seat].preaction,
            finished=st.finished,
            places=tuple(s.places for s in st.seats) if st.finished else (),
            prizes_cents=tuple(s.prize_cents for s in st.seats) if st.finished else (),
        )


def _blinds(cfg: TournamentConfig, level0: int) -> tuple[int, int, int]:
    lv = cfg.blind_levels[level0]
    return lv.small_blind, lv.big_blind, lv.ante
