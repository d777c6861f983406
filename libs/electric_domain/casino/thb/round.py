"""The Texas Hold'em Bonus round: an event-sourced aggregate for one player and one deal.

Commands in, events out, state = fold over the events; deterministic given the config, the
deck seed and the commands (each with its time ``at``). Flow::

    r = ThbRound.start(cfg, round_id="r1", game_number=..., ante_cents=500,
                       deck_seed=seed, at=now)   # RoundStarted, HoleCardsDealt
    r.handle(CallFlop(at=...))    # FlopCalled, BoardDealt(flop)   (or Fold → settled)
    r.handle(Bet(at=...))         # StreetBet(turn), BoardDealt(turn)
    r.handle(Check(at=...))       # StreetChecked(river), BoardDealt(river), Showdown,
                                  # Settled, DeckRevealed
NEW GAME starts a round with any ante; REPEAT BETS starts one with :func:`repeat_ante` of the
finished round. THB is a single-player RNG game: no decision timers (an unfinished round is
resumable, docs/design.md §6).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from electric_domain.casino.common.config import CasinoConfig
from electric_domain.casino.common.deal import Deal, describe, refunds
from electric_domain.casino.common.errors import Rejected, RejectReason
from electric_domain.casino.common.money import BetResult, totals
from electric_domain.casino.common.round import OVER, CasinoRound
from electric_domain.casino.thb import settlement
from electric_domain.casino.thb.events import (
    Bet,
    BoardDealt,
    CallFlop,
    Check,
    Command,
    DeckRevealed,
    Event,
    FlopCalled,
    Fold,
    Folded,
    HoleCardsDealt,
    RoundStarted,
    RoundVoided,
    Settled,
    Showdown,
    StreetBet,
    StreetChecked,
    Void,
)
from electric_domain.casino.thb.nicknames import nickname
from electric_domain.deck import commitment

PREFLOP, TURN_DECISION, RIVER_DECISION = "preflop", "turn", "river"


@dataclass
class ThbState:
    """Everything the events say; equal states mean identical rounds."""

    round_id: str = ""
    game_number: str = ""
    ante_cents: int = 0
    bets: dict[str, int] = field(default_factory=dict)
    seed_hex: str = ""
    commitment: str = ""
    player_cards: tuple[int, ...] = ()
    board: tuple[int, ...] = ()
    dealer_cards: tuple[int, ...] = ()
    phase: str = PREFLOP
    folded: bool = False
    voided: bool = False
    winner: str = ""
    results: tuple[BetResult, ...] = ()
    revealed: bool = False
    nickname: str | None = None


class ThbRound(CasinoRound[ThbState, Event, Command]):
    """One THB round (a `CasinoRound`). Mutated only by :meth:`apply`."""

    def _initial_state(self) -> ThbState:
        return ThbState()

    @classmethod
    def start(
        cls,
        config: CasinoConfig,
        *,
        round_id: str,
        game_number: str,
        ante_cents: int,
        deck_seed: bytes,
        at: int,
    ) -> ThbRound:
        """DEAL: validate the Ante against the limits, commit to the deck, deal hole cards."""
        t = config.thb
        if not t.ante_min_cents <= ante_cents <= t.ante_max_cents:
            raise Rejected(
                RejectReason.BAD_AMOUNT,
                f"ante {ante_cents} outside {t.ante_min_cents}..{t.ante_max_cents} cents",
            )
        deal = Deal.from_seed(deck_seed)
        r = cls(config)
        r._emit(
            RoundStarted(
                round_id,
                game_number,
                config.version,
                ante_cents,
                commitment(deck_seed),
                deck_seed.hex(),
                at,
            )
        )
        r._emit(HoleCardsDealt(deal.player, nickname(*deal.player), at))
        return r

    # ------------------------------------------------------------------------- commands

    def _is_void(self, cmd: Command) -> bool:
        return isinstance(cmd, Void)

    def _void(self, cmd: Command) -> None:
        assert isinstance(cmd, Void)
        s = self.state
        self._emit(RoundVoided(cmd.reason, refunds(s.bets), cmd.at))
        self._emit(DeckRevealed(s.seed_hex, s.commitment, cmd.at))

    def _handle(self, cmd: Command) -> None:
        assert not isinstance(cmd, Void)  # (the round's handle voids)
        s = self.state
        if s.phase == OVER:
            raise Rejected(RejectReason.ROUND_OVER, "the round is over")
        allowed = {
            PREFLOP: (Fold, CallFlop),
            TURN_DECISION: (Check, Bet),
            RIVER_DECISION: (Check, Bet),
        }[s.phase]
        if not isinstance(cmd, allowed):
            raise Rejected(
                RejectReason.NOT_ALLOWED_NOW, f"{type(cmd).__name__} not allowed at {s.phase}"
            )
        deal = self._dealt()
        t = self.config.thb
        if isinstance(cmd, Fold):
            self._emit(Folded(cmd.at))
            self._finish(cmd.at)
        elif isinstance(cmd, CallFlop):
            self._emit(FlopCalled(t.flop_multiple * s.ante_cents, cmd.at))
            self._board("flop", deal.flop, cmd.at)
        else:
            street = "turn" if s.phase == TURN_DECISION else "river"
            multiple = t.turn_multiple if street == "turn" else t.river_multiple
            if isinstance(cmd, Bet):
                self._emit(StreetBet(street, multiple * s.ante_cents, cmd.at))
            else:
                self._emit(StreetChecked(street, cmd.at))
            self._board(street, (deal.turn,) if street == "turn" else (deal.river,), cmd.at)
            if street == "river":
                self._finish(cmd.at)

    def _board(self, street: str, cards: tuple[int, ...], at: int) -> None:
        seen = (*self.state.player_cards, *self.state.board, *cards)
        self._emit(BoardDealt(street, cards, describe(seen)[1], at))

    def _finish(self, at: int) -> None:
        s = self.state
        deal = self._dealt()
        t = self.config.thb
        if s.folded:
            results = settlement.settle(t, ante=s.ante_cents, flop=0, turn=0, river=0, folded=True)
        else:
            p_rank, p_text = describe((*deal.player, *deal.board))
            d_rank, d_text = describe((*deal.dealer, *deal.board))
            winner = "player" if p_rank > d_rank else "dealer" if d_rank > p_rank else "tie"
            self._emit(Showdown(deal.dealer, p_rank, p_text, d_rank, d_text, winner, at))
            results = settlement.settle(
                t,
                ante=s.ante_cents,
                flop=s.bets.get("flop", 0),
                turn=s.bets.get("turn", 0),
                river=s.bets.get("river", 0),
                folded=False,
                player_rank=p_rank,
                dealer_rank=d_rank,
            )
        staked, returned, house = totals(results)
        self._emit(Settled(results, staked, returned, house, at))
        self._emit(DeckRevealed(s.seed_hex, s.commitment, at))

    # --------------------------------------------------------------------------- events

    def _emit(self, e: Event) -> None:
        self.apply(e)

    def apply(self, e: Event) -> None:
        """The fold step: the only place state changes."""
        s = self.state
        if isinstance(e, RoundStarted):
            s.round_id, s.game_number, s.ante_cents = e.round_id, e.game_number, e.ante_cents
            s.seed_hex, s.commitment = e.deck_seed_hex, e.deck_commitment
            s.bets = {"ante": e.ante_cents}
        elif isinstance(e, HoleCardsDealt):
            s.player_cards, s.nickname = e.player_cards, e.nickname
        elif isinstance(e, Folded):
            s.folded, s.phase = True, OVER
        elif isinstance(e, FlopCalled):
            s.bets = {**s.bets, "flop": e.amount_cents}
        elif isinstance(e, StreetBet):
            s.bets = {**s.bets, e.street: e.amount_cents}
        elif isinstance(e, BoardDealt):
            s.board = (*s.board, *e.cards)
            s.phase = {"flop": TURN_DECISION, "turn": RIVER_DECISION, "river": OVER}[e.street]
        elif isinstance(e, Showdown):
            s.dealer_cards, s.winner = e.dealer_cards, e.winner
        elif isinstance(e, Settled):
            s.results, s.phase = e.results, OVER
        elif isinstance(e, RoundVoided):
            s.results, s.voided, s.phase = e.results, True, OVER
        elif isinstance(e, DeckRevealed):
            s.revealed = True
        self.history.append(e)

    # ---------------------------------------------------------------------------- views

    def legal(self) -> tuple[str, ...]:
        """Buttons the game shows now."""
        return {
            PREFLOP: ("fold", "call_flop"),
            TURN_DECISION: ("check", "bet_turn"),
            RIVER_DECISION: ("check", "bet_river"),
            OVER: ("new_game", "repeat_bets"),
        }[self.state.phase]


def repeat_ante(previous: ThbRound) -> int:
    """REPEAT BETS: the Ante of the finished round, to start the next one with."""
    if not previous.finished:
        raise Rejected(RejectReason.NOT_ALLOWED_NOW, "the round is not over")
    return previous.state.ante_cents
