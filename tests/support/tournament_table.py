"""A three-seat tournament with stacked decks, for the tournament aggregate's tests.

``Table.deal(at, hole, board)`` stacks the next hand's deck through the hand port's
injectable ``deck_for_seed``, so outcomes are fixed; ``check_replay`` checks that folding
the recorded events rebuilds the same state.
"""

from __future__ import annotations

from typing import Any

from electric_domain.cards import parse_cards
from electric_domain.deck import derive_deck
from electric_domain.holdem import (
    deal_positions,
)
from electric_domain.tournament.aggregate import Tournament
from electric_domain.tournament.config import (
    TournamentConfig,
    default_config,
)
from electric_domain.tournament.engine_adapter import HoldemPort
from electric_domain.tournament.events import (
    Act,
    DealHand,
    Event,
    HandEvent,
    ShowSettings,
)

CFG = default_config()
MULT_SEED = bytes(32)  # draws 2x, first button = seat 2 (checked below)


class Table:
    """A tournament with stacked decks: ``deck(k, ...)`` stacks the k-th DealHand."""

    def __init__(self, cfg: TournamentConfig = CFG) -> None:
        self.decks: dict[bytes, tuple[int, ...]] = {}
        port = HoldemPort(deck_for_seed=lambda s: self.decks.get(s) or derive_deck(s))
        self.cfg = cfg
        self.t = Tournament.start(
            cfg,
            tournament_id="t",
            players=("p0", "p1", "p2"),
            buy_in_cents=cfg.buy_ins[0].buy_in_cents,
            multiplier_seed=MULT_SEED,
            at=0,
            port=port,
        )
        self.hand_seed = 0

    def deal(
        self,
        at: int,
        hole: dict[int, str] | None = None,
        board: str = "",
        settings: tuple[ShowSettings, ...] = (),
    ) -> list[Event]:
        """Deal the next hand; ``hole`` maps table seat -> "AsAh"; ``board`` 5 cards;
        ``settings`` the seats' showdown settings (default: muck what may be mucked)."""
        self.hand_seed += 1
        seed = bytes([self.hand_seed]) * 32
        if hole is not None:
            self.decks[seed] = self._stack(hole, board)
        return self.t.handle(DealHand(at, seed, settings))

    def _stack(self, hole: dict[int, str], board: str) -> tuple[int, ...]:
        st = self.t.state
        live = [i for i, s in enumerate(st.seats) if not s.eliminated]
        n = len(live)
        from electric_domain.tournament.schedule import first_positions, next_positions

        pos = (
            first_positions(st.first_button, live, 3)
            if st.positions is None
            else next_positions(st.positions, live, 3, self.cfg.button_rule)
        )
        button_idx = live.index(pos.button)
        hole_pos, board_pos = deal_positions(n)
        deck: list[int | None] = [None] * 52
        first = (button_idx + 1) % n
        for k in range(n):
            idx = (first + k) % n
            a, b = hole_pos[k]
            deck[a], deck[b] = parse_cards(hole[live[idx]])
        bcards = parse_cards(board)
        flat = [p for street in board_pos for p in street]
        for p, c in zip(flat, bcards, strict=False):
            deck[p] = c
        rest = iter(c for c in range(52) if c not in deck)
        return tuple(c if c is not None else next(rest) for c in deck)

    def act(self, seat: int, move: str, at: int, amount: int = 0) -> list[Event]:
        return self.t.handle(Act(seat, move, at, amount))

    def passive(self, at: int) -> list[Event]:
        """Check or call until the hand ends (or someone else must decide)."""
        ev: list[Event] = []
        while self.actor is not None:
            seat = self.actor
            la = self.t.legal_actions(seat)
            assert la is not None
            ev += self.act(seat, "check" if la.can_check else "call", at)
        return ev

    @property
    def actor(self) -> int | None:
        turn = self.t.state.turn
        return None if turn is None else turn.seat

    def check_replay(self) -> None:
        again = Tournament.replay(self.cfg, self.t.history, self.t.port)
        assert again.state == self.t.state


def hand_events(events: list[Event], kind: type) -> list[Any]:
    return [e.event for e in events if isinstance(e, HandEvent) and isinstance(e.event, kind)]


def of(events: list[Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]
