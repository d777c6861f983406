"""The live Ultimate Texas Hold'em round: one table, any number of seats, one shared deal.

An event-sourced aggregate: commands in, events out, state = fold over the events. Time is
an input: before a command is validated, everything due up to its ``at`` happens first
(the yellow light, the close of the betting window and the deal, expired decision windows)
— those events stand even if the command is then refused. A service calls
``handle(Tick(at))`` at :meth:`UthRound.next_wakeup_at`.

Phases: ``betting`` (green, then yellow; Ante + automatic Blind, Trips, UNDO, DOUBLE once,
REPEAT) → ``preflop`` → ``flop`` → ``river`` decision windows → ``over``. A window closes when
every seat still deciding has decided, or at its deadline: undecided seats are AUTOCHECKED
(pre-flop, flop) or AUTOFOLDED (river). Seats that played are not asked again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from electric_domain.casino.common.config import CasinoConfig
from electric_domain.casino.common.deal import Deal, category_index, describe, refunds
from electric_domain.casino.common.errors import Rejected, RejectReason
from electric_domain.casino.common.money import totals
from electric_domain.casino.common.round import OVER, CasinoRound
from electric_domain.casino.uth import settlement
from electric_domain.casino.uth.events import (
    AutoChecked,
    AutoFolded,
    BetsPlaced,
    BetsUndone,
    BettingClosed,
    CardsDealt,
    Command,
    Decide,
    Decided,
    DecisionWindowOpened,
    DeckRevealed,
    Double,
    Event,
    LightChanged,
    PlaceBet,
    Placement,
    Repeat,
    RoundEnded,
    RoundOpened,
    RoundVoided,
    SeatSettled,
    SeatTaken,
    Showdown,
    TakeSeat,
    Tick,
    Undo,
    Void,
)
from electric_domain.deck import commitment

BETTING, PREFLOP, FLOP, RIVER = "betting", "preflop", "flop", "river"
ACTIONS = {
    PREFLOP: {"play_4x": 4, "play_3x": 3, "check": 0},
    FLOP: {"play_2x": 2, "check": 0},
    RIVER: {"play_1x": 1, "fold": 0},
}


@dataclass
class SeatState:
    player: str
    actions: list[tuple[str, tuple[Placement, ...]]] = field(default_factory=list)
    play_cents: int = 0
    folded: bool = False
    decided: bool = False  # in the current window
    auto: list[str] = field(default_factory=list)  # "autochecked:preflop", "autofolded"

    def total(self, spot: str) -> int:
        return sum(c for _, ps in self.actions for s, c in ps if s == spot)

    @property
    def doubled(self) -> bool:
        return any(kind == "double" for kind, _ in self.actions)

    @property
    def in_play(self) -> bool:
        return self.total("ante") > 0


@dataclass
class UthState:
    round_id: str = ""
    game_number: str = ""
    seed_hex: str = ""
    commitment: str = ""
    yellow_at: int = 0
    close_at: int = 0
    light: str = "green"
    phase: str = BETTING
    deadline: int | None = None
    previous: dict[str, tuple[Placement, ...]] = field(default_factory=dict)
    seats: list[SeatState] = field(default_factory=list)
    board: tuple[int, ...] = ()
    player_cards: tuple[int, ...] = ()
    dealer_cards: tuple[int, ...] = ()
    settled: dict[int, tuple[object, ...]] = field(default_factory=dict)
    voided: bool = False
    revealed: bool = False


class UthRound(CasinoRound[UthState, Event, Command]):
    """One live UTH round (a `CasinoRound`). Mutated only by :meth:`apply`."""

    def _initial_state(self) -> UthState:
        return UthState()

    @classmethod
    def open(
        cls,
        config: CasinoConfig,
        *,
        round_id: str,
        game_number: str,
        deck_seed: bytes,
        at: int,
        players: Sequence[str] = (),
        previous_bets: Mapping[str, Sequence[Placement]] | None = None,
    ) -> UthRound:
        """Open the betting window (green light) with a committed deck. ``previous_bets``:
        each player's final bets of the last round, for REPEAT."""
        Deal.from_seed(deck_seed)  # validates the seed
        u = config.uth
        r = cls(config)
        prev = tuple(sorted((p, tuple(b)) for p, b in (previous_bets or {}).items()))
        r.apply(
            RoundOpened(
                round_id,
                game_number,
                config.version,
                commitment(deck_seed),
                deck_seed.hex(),
                at + u.green_ms,
                at + u.betting_ms,
                prev,
                at,
            )
        )
        for p in players:
            r.handle(TakeSeat(p, at))
        return r

    # ------------------------------------------------------------------------- commands

    def _is_void(self, cmd: Command) -> bool:
        return isinstance(cmd, Void)

    def _handle(self, cmd: Command) -> None:
        assert not isinstance(cmd, Void)  # (the round's handle voids)
        s = self.state
        self._catch_up(cmd.at)
        if isinstance(cmd, Tick):
            return
        if s.phase == OVER:
            raise Rejected(RejectReason.ROUND_OVER, "the round is over")
        if isinstance(cmd, TakeSeat):
            self._betting_open()
            if any(x.player == cmd.player for x in s.seats):
                raise Rejected(RejectReason.NOT_ALLOWED_NOW, "one seat per player")
            self.apply(SeatTaken(len(s.seats), cmd.player, cmd.at))
        elif isinstance(cmd, PlaceBet | Undo | Double | Repeat):
            self._bet(cmd)
        else:
            self._decide(cmd)

    def _seat(self, seat: int) -> SeatState:
        if not 0 <= seat < len(self.state.seats):
            raise Rejected(RejectReason.UNKNOWN_SEAT, f"no seat {seat}")
        return self.state.seats[seat]

    def _betting_open(self) -> None:
        if self.state.phase != BETTING:
            raise Rejected(RejectReason.NOT_ALLOWED_NOW, "betting is closed (red light)")

    def _check_limits(self, ante: int, trips: int) -> None:
        u = self.config.uth
        if ante and not u.ante_min_cents <= ante <= u.ante_max_cents:
            raise Rejected(RejectReason.BAD_AMOUNT, f"ante {ante} outside the table limits")
        if trips and not u.trips_min_cents <= trips <= u.trips_max_cents:
            raise Rejected(RejectReason.BAD_AMOUNT, f"trips {trips} outside the table limits")
        if trips and not ante:
            raise Rejected(RejectReason.NOT_ALLOWED_NOW, "Trips needs an Ante first")

    def _bet(self, cmd: PlaceBet | Undo | Double | Repeat) -> None:
        self._betting_open()
        seat = self._seat(cmd.seat)
        ante, trips = seat.total("ante"), seat.total("trips")
        if isinstance(cmd, Undo):
            if not seat.actions:
                raise Rejected(RejectReason.NOTHING_TO_UNDO, "no bet to undo")
            self.apply(BetsUndone(cmd.seat, seat.actions[-1][1], cmd.at))
            return
        if isinstance(cmd, PlaceBet):
            if cmd.spot not in ("ante", "trips") or cmd.amount_cents <= 0:
                raise Rejected(RejectReason.BAD_AMOUNT, "bet a positive amount on ante or trips")
            placements: tuple[Placement, ...] = ((cmd.spot, cmd.amount_cents),)
            kind = "place"
        elif isinstance(cmd, Double):
            if seat.doubled:
                raise Rejected(RejectReason.ALREADY_DOUBLED, "DOUBLE only once")
            if not ante:
                raise Rejected(RejectReason.NOT_ALLOWED_NOW, "nothing to double")
            u = self.config.uth  # doubles up to the maximum
            add_a = min(ante, u.ante_max_cents - ante)
            add_t = min(trips, u.trips_max_cents - trips)
            placements = tuple((sp, c) for sp, c in (("ante", add_a), ("trips", add_t)) if c)
            kind = "double"
        else:
            if seat.actions:
                raise Rejected(RejectReason.NOT_ALLOWED_NOW, "REPEAT needs an empty seat")
            placements = self.state.previous.get(seat.player, ())
            if not placements:
                raise Rejected(RejectReason.NOT_ALLOWED_NOW, "no previous bets to repeat")
            kind = "repeat"
        new_a = ante + sum(c for sp, c in placements if sp == "ante")
        new_t = trips + sum(c for sp, c in placements if sp == "trips")
        self._check_limits(new_a, new_t)
        self.apply(BetsPlaced(cmd.seat, kind, placements, cmd.at))

    def _decide(self, cmd: Decide) -> None:
        s = self.state
        seat = self._seat(cmd.seat)
        if s.phase not in ACTIONS or not self._deciding(seat):
            raise Rejected(RejectReason.NOT_ALLOWED_NOW, "no decision for this seat now")
        multiple = ACTIONS[s.phase].get(cmd.action)
        if multiple is None:
            raise Rejected(RejectReason.NOT_ALLOWED_NOW, f"{cmd.action} not allowed at {s.phase}")
        play = multiple * seat.total("ante")
        self.apply(Decided(cmd.seat, s.phase, cmd.action, play, cmd.at))
        if all(not self._deciding(x) for x in s.seats):
            self._advance(cmd.at)

    @staticmethod
    def _active(seat: SeatState) -> bool:
        """Still to decide on some street: in play, has neither played nor folded."""
        return seat.in_play and not seat.folded and seat.play_cents == 0

    def _deciding(self, seat: SeatState) -> bool:
        return self._active(seat) and not seat.decided

    # ----------------------------------------------------------------------------- time

    def next_wakeup_at(self) -> int | None:
        s = self.state
        if s.phase == BETTING:
            return s.yellow_at if s.light == "green" else s.close_at
        return s.deadline if s.phase != OVER else None

    def _catch_up(self, at: int) -> None:
        s = self.state
        while True:
            due = self.next_wakeup_at()
            if due is None or due > at:
                return
            if s.phase == BETTING and s.light == "green":
                self.apply(LightChanged("yellow", s.yellow_at))
            elif s.phase == BETTING:
                self._close(s.close_at)
            else:
                self._expire(due)

    def _close(self, at: int) -> None:
        s = self.state
        self.apply(LightChanged("red", at))
        stakes = tuple(
            (i, x.total("ante"), x.total("trips")) for i, x in enumerate(s.seats) if x.in_play
        )
        self.apply(BettingClosed(stakes, at))
        if not stakes:  # nobody bet: no deal
            self._end(at)
            return
        self.apply(CardsDealt("hole", self._dealt().player, at))
        self._window(PREFLOP, at)

    def _window(self, street: str, at: int) -> None:
        if any(self._active(x) for x in self.state.seats):
            self.apply(DecisionWindowOpened(street, at + self.config.uth.decision_ms, at))
        else:
            self._advance(at, street)

    def _expire(self, at: int) -> None:
        s = self.state
        for i, x in enumerate(s.seats):
            if self._deciding(x):
                if s.phase == RIVER:
                    self.apply(AutoFolded(i, at))
                else:
                    self.apply(AutoChecked(i, s.phase, at))
        self._advance(at)

    def _advance(self, at: int, street: str | None = None) -> None:
        d = self._dealt()
        street = street or self.state.phase
        if street == PREFLOP:
            self.apply(CardsDealt("flop", d.flop, at))
            self._window(FLOP, at)
        elif street == FLOP:
            self.apply(CardsDealt("turn_river", (d.turn, d.river), at))
            self._window(RIVER, at)
        else:
            self._showdown(at)

    def _showdown(self, at: int) -> None:
        s = self.state
        d = self._dealt()
        p_rank, p_text = describe((*d.player, *d.board))
        d_rank, d_text = describe((*d.dealer, *d.board))
        qualifies = category_index(d_rank) >= self.config.uth.dealer_qualifier
        self.apply(Showdown(d.dealer, p_rank, p_text, d_rank, d_text, qualifies, at))
        for i, x in enumerate(s.seats):
            if not x.in_play:
                continue
            results = settlement.settle(
                self.config.uth,
                ante=x.total("ante"),
                trips=x.total("trips"),
                play=x.play_cents,
                folded=x.folded,
                player_rank=p_rank,
                dealer_rank=d_rank,
            )
            staked, returned, house = totals(results)
            self.apply(SeatSettled(i, results, staked, returned, house, at))
        self._end(at)

    def _end(self, at: int) -> None:
        s = self.state
        self.apply(DeckRevealed(s.seed_hex, s.commitment, at))
        self.apply(RoundEnded(at))

    def _void(self, cmd: Command) -> None:
        assert isinstance(cmd, Void)
        s = self.state
        per_seat = tuple(
            (i, refunds({"ante": x.total("ante"), "blind": x.total("ante"),
                         "play": x.play_cents, "trips": x.total("trips")}))
            for i, x in enumerate(s.seats)
            if x.in_play
        )  # fmt: skip
        self.apply(RoundVoided(cmd.reason, per_seat, cmd.at))
        self._end(cmd.at)

    # --------------------------------------------------------------------------- events

    def apply(self, e: Event) -> None:
        """The fold step: the only place state changes."""
        s = self.state
        if isinstance(e, RoundOpened):
            s.round_id, s.game_number = e.round_id, e.game_number
            s.seed_hex, s.commitment = e.deck_seed_hex, e.deck_commitment
            s.yellow_at, s.close_at = e.yellow_at, e.close_at
            s.previous = dict(e.previous_bets)
        elif isinstance(e, SeatTaken):
            s.seats.append(SeatState(e.player))
        elif isinstance(e, BetsPlaced):
            s.seats[e.seat].actions.append((e.kind, e.placements))
        elif isinstance(e, BetsUndone):
            s.seats[e.seat].actions.pop()
        elif isinstance(e, LightChanged):
            s.light = e.light
        elif isinstance(e, BettingClosed):
            s.phase = PREFLOP
        elif isinstance(e, CardsDealt):
            if e.street == "hole":
                s.player_cards = e.cards
            else:
                s.board = (*s.board, *e.cards)
        elif isinstance(e, DecisionWindowOpened):
            s.phase, s.deadline = e.street, e.deadline
            for x in s.seats:
                x.decided = False
        elif isinstance(e, Decided):
            x = s.seats[e.seat]
            x.decided = True
            x.play_cents = e.play_cents
            x.folded = e.action == "fold"
        elif isinstance(e, AutoChecked):
            s.seats[e.seat].decided = True
            s.seats[e.seat].auto.append(f"autochecked:{e.street}")
        elif isinstance(e, AutoFolded):
            s.seats[e.seat].folded = True
            s.seats[e.seat].auto.append("autofolded")
        elif isinstance(e, Showdown):
            s.dealer_cards = e.dealer_cards
        elif isinstance(e, SeatSettled):
            s.settled[e.seat] = e.results
        elif isinstance(e, RoundVoided):
            s.voided = True
            s.settled = {i: r for i, r in e.refunds}
        elif isinstance(e, DeckRevealed):
            s.revealed = True
        elif isinstance(e, RoundEnded):
            s.phase, s.deadline = OVER, None
        self.history.append(e)

    # ---------------------------------------------------------------------------- views

    def light(self, at: int) -> str:
        """The traffic light at ``at`` (green, yellow, red)."""
        s = self.state
        if s.phase != BETTING or at >= s.close_at:
            return "red"
        return "green" if at < s.yellow_at else "yellow"

    def legal(self, seat: int) -> tuple[str, ...]:
        """Decisions open to ``seat`` now."""
        x = self._seat(seat)
        if self.state.phase in ACTIONS and self._deciding(x):
            return tuple(ACTIONS[self.state.phase])
        return ()

    def final_bets(self, seat: int) -> tuple[Placement, ...]:
        """The seat's bets, for the next round's REPEAT."""
        x = self._seat(seat)
        return tuple((sp, c) for sp in ("ante", "trips") if (c := x.total(sp)))
