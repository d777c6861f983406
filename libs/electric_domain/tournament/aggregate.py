"""The Electric Poker tournament aggregate: commands in, events out, state = fold of events.

Deterministic given the configuration, the multiplier seed, the deck seeds and the sequence
of commands (each carrying its time ``at`` in ms). Nothing here reads a clock or does I/O.

Flow for a service::

    t = Tournament.start(cfg, tournament_id=..., players=(...), buy_in_cents=500,
                         multiplier_seed=seed, at=now)          # events: t.history
    events = t.handle(DealHand(at=now, deck_seed=os.urandom(32)))
    events = t.handle(Act(seat=1, move=Move.CALL, at=now))
    t.next_wakeup_at()   # schedule Tick(at) then (turn deadline, level change, 0:00)
    t.view(seat, at=now) # player-private view incl. legal actions and pre-actions
    t.result()           # places and prizes once finished

Time catch-up: before any command is validated, everything due up to its ``at`` happens
first, in time order (level changes, 0:00, an expired action timer or time bank). Those
events are facts of the passing time; if the command is then rejected they are still
applied, and ``Rejected.events`` carries them so the service can persist them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from electric_domain.holdem.moves import Move
from electric_domain.tournament import preaction as pa
from electric_domain.tournament import schedule as sch
from electric_domain.tournament.config import TournamentConfig
from electric_domain.tournament.errors import (
    InvalidCommand,
    NotAllowedNow,
    Rejected,
    RejectReason,
    StaleCommand,
)
from electric_domain.tournament.events import (
    Act,
    Cause,
    ClearPreAction,
    Command,
    DealHand,
    ElectricModeStarted,
    Event,
    HandEvent,
    HandStarted,
    LevelAdvanced,
    PreActionSelected,
    SatIn,
    SatOut,
    SelectPreAction,
    SitIn,
    SitOut,
    SitOutReason,
    Tick,
    Timeout,
    TournamentStarted,
    UnselectReason,
)
from electric_domain.tournament.fairness import (
    SEED_BYTES,
    commitment,
    draw_multiplier,
    initial_button_index,
)
from electric_domain.tournament.fold import apply_event
from electric_domain.tournament.hand_flow import HandFlow, _blinds
from electric_domain.tournament.hand_port import HandFact, HandPort, Legal
from electric_domain.tournament.state import (
    Deadline,
    Result,
    SeatState,
    TournamentState,
)
from electric_domain.tournament.view import (
    PlayerView,
    Progress,
    SeatPrivate,
    SeatView,
    player_view,
    progress,
    seat_private,
)

__all__ = [
    "Deadline",
    "InvalidCommand",
    "NotAllowedNow",
    "PlayerView",
    "RejectReason",
    "Rejected",
    "Result",
    "SeatState",
    "SeatView",
    "Tournament",
    "TournamentState",
]


def _default_port() -> HandPort:
    from electric_domain.tournament.engine_adapter import HoldemPort

    return HoldemPort()


class Tournament(HandFlow):
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
        multiplier: int | None = None,
        first_button: int | None = None,
    ) -> Tournament:
        """Start a filled table and seat the players (``players`` in seat order).

        ``multiplier`` and ``first_button`` (a seat index) are the values the registrar drew
        from the committed ``multiplier_seed`` (one owner per fact: a service passes what it
        consumed). Left out (simulations, tests) they are drawn here from the same seed."""
        if len(players) != config.seats or len(set(players)) != len(players):
            raise InvalidCommand(
                RejectReason.BAD_START,
                f"need {config.seats} distinct players, got {list(players)}",
            )
        if len(multiplier_seed) != SEED_BYTES:
            raise InvalidCommand(
                RejectReason.BAD_START, f"multiplier seed must be {SEED_BYTES} bytes"
            )
        try:
            tier = config.tier(buy_in_cents)
        except KeyError as exc:
            raise InvalidCommand(RejectReason.BAD_START, str(exc)) from exc
        if multiplier is None:
            multiplier = draw_multiplier(multiplier_seed, config.pay_table).multiplier
        if first_button is None:
            first_button = initial_button_index(multiplier_seed, config.seats)
        try:
            config.pay_table.entry(multiplier)
        except KeyError as exc:
            raise InvalidCommand(RejectReason.BAD_START, str(exc)) from exc
        if not 0 <= first_button < config.seats:
            raise InvalidCommand(RejectReason.BAD_START, f"no seat {first_button} for the button")
        t = cls(config, port)
        levels = config.levels_for(multiplier)
        t._emit_all(
            [
                TournamentStarted(
                    tournament_id=tournament_id,
                    config_version=config.version,
                    buy_in_cents=buy_in_cents,
                    rake_cents=tier.rake_cents,
                    prize_pool_cents=config.prize_pool_cents(multiplier, buy_in_cents),
                    multiplier=multiplier,
                    multiplier_commitment=commitment(multiplier_seed),
                    multiplier_seed_hex=multiplier_seed.hex(),
                    players=tuple(players),
                    starting_stack=config.starting_stack,
                    levels=levels,
                    level_duration_ms=config.level_duration_ms,
                    first_button=first_button,
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
            raise NotAllowedNow(RejectReason.NOT_STARTED, "tournament not started")
        if st.finished:
            raise NotAllowedNow(RejectReason.FINISHED, "tournament finished")
        if cmd.at < st.now:
            raise InvalidCommand(
                RejectReason.TIME_WENT_BACKWARDS, f"time went backwards: at={cmd.at} < {st.now}"
            )
        if isinstance(cmd, Timeout) and (
            st.turn is None or st.turn.seat != cmd.seat or cmd.at < st.turn.deadline
        ):
            raise NotAllowedNow(
                RejectReason.NO_EXPIRED_TIMER, "no expired turn timer for that seat"
            )
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
            raise NotAllowedNow(RejectReason.FINISHED, "tournament finished")
        if isinstance(cmd, Act | SelectPreAction):
            self._answers(cmd.hand_no, cmd.action_seq)
        elif isinstance(cmd, ClearPreAction):
            self._answers(cmd.hand_no, None)
        self._seat_ok(cmd.seat)
        if isinstance(cmd, Act):
            self._player_act(cmd)
        elif isinstance(cmd, SelectPreAction):
            self._select(cmd)
        elif isinstance(cmd, ClearPreAction):
            if st.seats[cmd.seat].preaction is None:
                raise NotAllowedNow(RejectReason.NO_PRE_ACTION, "no pre-turn action selected")
            self._unselect(cmd.seat, UnselectReason.PLAYER, cmd.at)
        elif isinstance(cmd, SitOut):
            self._sit_out(cmd)
        elif isinstance(cmd, SitIn):
            if not st.seats[cmd.seat].sitting_out:
                raise NotAllowedNow(RejectReason.NOT_SITTING_OUT, "not sitting out")
            self._emit(SatIn(cmd.seat, cmd.at))
        else:  # pragma: no cover - exhaustive
            raise InvalidCommand(RejectReason.UNKNOWN_COMMAND, f"unknown command {cmd!r}")

    def _answers(self, hand_no: int | None, action_seq: int | None) -> None:
        """Refuse a command that answers another hand (or action) than the current one."""
        st = self.state
        if hand_no is None:
            return
        if hand_no != st.hand_no or (action_seq is not None and action_seq != st.next_action_seq):
            raise StaleCommand(
                requested_hand=hand_no,
                requested_seq=action_seq,
                current_hand=st.hand_no,
                current_seq=st.next_action_seq,
            )

    def _seat_ok(self, seat: int) -> None:
        st = self.state
        if not 0 <= seat < len(st.seats):
            raise InvalidCommand(RejectReason.NO_SUCH_SEAT, "no such seat at this table")
        if st.seats[seat].eliminated:
            raise NotAllowedNow(RejectReason.ELIMINATED, "that player is out of the tournament")

    def _deal(self, cmd: DealHand) -> None:
        st, cfg = self.state, self.config
        if self.hand_live():
            raise NotAllowedNow(RejectReason.HAND_IN_PROGRESS, "a hand is in progress")
        if len(cmd.deck_seed) != SEED_BYTES:
            raise InvalidCommand(
                RejectReason.BAD_DECK_SEED, f"deck seed must be {SEED_BYTES} bytes"
            )
        live = [i for i, s in enumerate(st.seats) if not s.eliminated]
        n = len(st.seats)
        if st.positions is None:
            pos = sch.first_positions(st.first_button, live, n)
        else:
            pos = sch.next_positions(st.positions, live, n, self.config.button_rule)
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
            show_beaten=frozenset(
                i for i, x in enumerate(cmd.settings) if i in stacks and not x.muck_losing
            ),
            show_uncontested=frozenset(
                i for i, x in enumerate(cmd.settings) if i in stacks and not x.muck_winning
            ),
        )
        self._emit_hand(evs, new_hand)
        self._progress(cmd.at)

    def _player_act(self, cmd: Act) -> None:
        st = self.state
        if not self.hand_live() or st.turn is None or st.turn.seat != cmd.seat:
            raise NotAllowedNow(RejectReason.NOT_YOUR_TURN, "not your turn")
        try:
            move = Move(cmd.move)  # a no-op for a Move; callers without types may send text
        except ValueError as exc:
            raise InvalidCommand(RejectReason.UNKNOWN_MOVE, "unknown action") from exc
        legal = self.port.legal(st.hand)
        if move.takes_amount and legal.min_raise_to is not None:
            lo, hi = legal.min_raise_to, legal.max_raise_to or legal.min_raise_to
            if not lo <= cmd.amount <= hi:  # a malformed amount: it can never succeed as sent
                raise InvalidCommand(
                    RejectReason.AMOUNT_OUT_OF_RANGE,
                    f"amount {cmd.amount} outside the legal range {lo}..{hi} "
                    "(total street bet after the action)",
                )
        self._do_act(cmd.seat, move, cmd.amount, cmd.at, Cause.PLAYER)
        self._progress(cmd.at)

    def _select(self, cmd: SelectPreAction) -> None:
        st = self.state
        seat = st.seats[cmd.seat]
        if not self.hand_live():
            raise NotAllowedNow(RejectReason.NO_HAND, "no hand in progress")
        if st.electric_hand:
            raise NotAllowedNow(
                RejectReason.ELECTRIC_HAND, "Electric Mode: every player is all-in automatically"
            )
        if seat.sitting_out:
            raise NotAllowedNow(RejectReason.SITTING_OUT, "sitting out: sit in first")
        if not self.port.in_hand(st.hand, cmd.seat):
            raise NotAllowedNow(RejectReason.NOT_IN_HAND, "not active in this hand")
        if self.port.actor(st.hand) == cmd.seat:
            raise NotAllowedNow(RejectReason.NOT_IN_HAND, "it is your turn: act instead")
        to_call = self.port.to_call(st.hand, cmd.seat)
        offered = pa.available(to_call, self._behind(cmd.seat))
        if cmd.action not in offered:
            raise NotAllowedNow(
                RejectReason.PRE_ACTION_NOT_OFFERED,
                f"pre-turn action {pa.label(cmd.action)} not offered now "
                f"(to call {to_call}; offered: {pa.labels(offered)})",
            )
        self._emit(PreActionSelected(cmd.seat, cmd.action, to_call, cmd.at, st.hand_no))

    def _sit_out(self, cmd: SitOut) -> None:
        st = self.state
        if st.seats[cmd.seat].sitting_out:
            raise NotAllowedNow(RejectReason.SITTING_OUT, "already sitting out")
        if st.seats[cmd.seat].preaction is not None:
            self._unselect(cmd.seat, UnselectReason.SITTING_OUT, cmd.at)
        self._emit(SatOut(cmd.seat, SitOutReason.PLAYER, cmd.at))
        if self.hand_live() and st.turn is not None and st.turn.seat == cmd.seat:
            self._auto(
                cmd.seat,
                pa.check_or_fold(self.port.to_call(st.hand, cmd.seat)),
                cmd.at,
                Cause.SITTING_OUT,
            )
            self._progress(cmd.at)

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
        apply_event(st, self.port, e)

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
        return bool(self.state.seats) and not self.state.finished and not self.hand_live()

    def legal_actions(self, seat: int) -> Legal | None:
        st = self.state
        if not self.hand_live() or st.turn is None or st.turn.seat != seat:
            return None
        return self.port.legal(st.hand)

    def pre_actions_available(self, seat: int) -> frozenset[pa.PreAction]:
        st = self.state
        if (
            not self.hand_live()
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
        if self.hand_live():
            behind = self.port.stacks(st.hand)
            return sum(behind.values()) + self.port.pot(st.hand)
        return sum(s.stack for s in st.seats)

    def view(self, seat: int | None, at: int) -> PlayerView:
        """``seat``'s private view at ``at`` (None: an observer); see `view.player_view`."""
        return player_view(self, seat, at)

    def progress(self) -> Progress:
        """What a My Tables row shows of this table now (`view.progress`)."""
        return progress(self)

    def seat_private(self, seat: int) -> SeatPrivate:
        """``seat``'s own part of its view, beside the public one (``view(None, at)``)."""
        return seat_private(self, seat)

    def hand_facts(self, events: Sequence[Event]) -> list[HandFact | None]:
        """The engine events among ``events`` (a batch this aggregate just emitted, so of
        its current hand) in table terms, in order (see `HandPort.facts`)."""
        engine = [e.event for e in events if isinstance(e, HandEvent)]
        if not engine:
            return []
        return self.port.facts(self.state.hand, engine)
