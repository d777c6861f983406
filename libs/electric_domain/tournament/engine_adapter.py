"""Thin adapter: the tournament's `HandPort` over `electric_domain.holdem` (public API only).

* Table seats that are still alive become engine players ``0..n-1`` in clockwise seat order;
  `DeckEscrowed` records that mapping with the deck commitment and the seed.
* Dealing follows the engine driver's documented deck positions
  (`electric_domain.holdem.deal_positions`): hole cards one at a time clockwise from the
  button's left, two rounds; burn, flop, burn, turn, burn, river.
* Showdown decisions are automatic (the driver's house rule): a hand that can still win is
  shown, one that cannot is mucked; all-in hands are exposed by the engine.

`DeckEscrowed.seed_hex` is secret until the hand ends (docs/design.md §8): the event exists so the
hand can be rebuilt by folding events (the seed is needed to deal later streets); the table
service must persist it but withhold it from publication and from every player view until
the hand's `HandEnded` (which reveals the seed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from electric_domain import holdem as h
from electric_domain.cards import card_str
from electric_domain.deck import commitment, derive_deck
from electric_domain.evaluator import evaluate
from electric_domain.tournament.hand_port import (
    ActionResult,
    HandFact,
    HandSeat,
    HandSnapshot,
    IllegalMove,
    Legal,
    Move,
    Post,
)


@dataclass(frozen=True, slots=True)
class DeckEscrowed:
    """Hand set-up: engine player ``i`` is table seat ``seats[i]``; the deck's commitment
    and (secret until the hand ends) its seed."""

    seats: tuple[int, ...]
    table_size: int
    commitment: str
    seed_hex: str
    #: Table seats whose players show a hand the rules let them muck (Muck Losing Hands off).
    show_beaten: tuple[int, ...] = ()
    #: Table seats whose players show a hand won without a showdown (Muck Winning Hands off).
    show_uncontested: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class WinnerShown:
    """The uncontested winner shows their hand by their setting (Muck Winning Hands off);
    recorded after the engine's HandEnded."""

    seat: int
    cards: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class AdaptedHand:
    """Engine state plus the seat mapping, the deck it deals from and the showdown settings
    (`DeckEscrowed`); ``revealed``: seats shown by `WinnerShown`."""

    seats: tuple[int, ...]
    index: tuple[int, ...]  # table seat -> engine player (-1 when not in the hand)
    deck: tuple[int, ...]
    commitment: str
    seed_hex: str
    state: h.HandState | None
    show_beaten: tuple[int, ...] = ()
    show_uncontested: tuple[int, ...] = ()
    revealed: tuple[int, ...] = ()

    def with_state(self, state: h.HandState | None) -> AdaptedHand:
        return AdaptedHand(
            self.seats,
            self.index,
            self.deck,
            self.commitment,
            self.seed_hex,
            state,
            self.show_beaten,
            self.show_uncontested,
            self.revealed,
        )


_BETTING = h.Phase.BETTING
_COMPLETE = h.Phase.COMPLETE


def _deal_maps(
    n: int, button: int
) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, ...], ...]]:
    hole, board = h.deal_positions(n)
    first = (button + 1) % n
    by_player: list[tuple[int, int]] = [(0, 0)] * n
    for k in range(n):
        by_player[(first + k) % n] = hole[k]
    return tuple(by_player), board


def _auto_command(hand: AdaptedHand, s: h.HandState) -> h.Command | None:
    """The next command that needs no player decision, if any."""
    phase = s.phase
    if phase is h.Phase.FORCED_BETS:
        return h.PostForcedBets()
    if phase is h.Phase.DEAL_HOLE:
        hole, _ = _deal_maps(s.n, s.config.button)
        first = (s.config.button + 1) % s.n
        p = next((first + k) % s.n for k in range(s.n) if not s.hole[(first + k) % s.n])
        a, b = hole[p]
        return h.DealHole(p, (hand.deck[a], hand.deck[b]))
    if phase is h.Phase.DEAL_BOARD:
        _, board = _deal_maps(s.n, s.config.button)
        street = 0 if not s.board else (1 if len(s.board) == 3 else 2)
        return h.DealBoard(tuple(hand.deck[i] for i in board[street]))
    if phase is h.Phase.SHOWDOWN and s.showdown_queue:
        so = h.showdown_options(s)
        assert so is not None
        # A hand that can still win must be shown (seed rule 10); one that cannot is mucked
        # unless the player's Muck Losing Hands setting is off.
        mucks = so.can_muck and hand.seats[so.player] not in hand.show_beaten
        return h.Muck(so.player) if mucks else h.Show(so.player)
    return None


def _winner_shown(hand: AdaptedHand, s: h.HandState) -> WinnerShown | None:
    """The uncontested winner's voluntary show, when their setting asks for it."""
    if s.phase is not _COMPLETE or not hand.show_uncontested or hand.revealed:
        return None
    live = [i for i in range(s.n) if not s.folded[i]]
    if len(live) != 1 or s.shown[live[0]]:
        return None
    seat = hand.seats[live[0]]
    if seat not in hand.show_uncontested:
        return None
    return WinnerShown(seat, tuple(s.hole[live[0]]))


class HoldemPort:
    """`HandPort` implementation over the hold'em engine.

    ``deck_for_seed`` maps a seed to its 52-card order (default: the deck module's
    `derive_deck`); tests inject stacked decks through it."""

    def __init__(self, deck_for_seed: Callable[[bytes], tuple[int, ...]] = derive_deck) -> None:
        self._deck_for_seed = deck_for_seed

    def initial(self) -> Any:
        return None

    def start(
        self,
        *,
        stacks: Mapping[int, int],
        button: int,
        small_blind_seat: int,
        big_blind_seat: int,
        small_blind: int,
        big_blind: int,
        ante: int,
        deck_seed: bytes,
        table_size: int,
        show_beaten: frozenset[int] = frozenset(),
        show_uncontested: frozenset[int] = frozenset(),
    ) -> tuple[Any, list[Any]]:
        seats = tuple(sorted(s for s, x in stacks.items() if x > 0))
        idx = {s: i for i, s in enumerate(seats)}
        config = h.HandConfig(
            stacks=tuple(stacks[s] for s in seats),
            button=idx[button],
            small_blind=small_blind,
            big_blind=big_blind,
            ante=ante,
        )
        if (config.small_blind_player, config.big_blind_player) != (
            idx[small_blind_seat],
            idx[big_blind_seat],
        ):
            raise ValueError("blind seats disagree with the engine's button convention")
        escrow = DeckEscrowed(
            seats,
            table_size,
            commitment(deck_seed),
            deck_seed.hex(),
            tuple(sorted(show_beaten & set(seats))),
            tuple(sorted(show_uncontested & set(seats))),
        )
        hand = self.apply(None, escrow)
        events: list[Any] = [escrow, h.HandStarted(config)]
        hand = self.apply(hand, events[1])
        hand, more = self.advance(hand)
        return hand, events + more

    def apply(self, hand: Any, event: Any) -> Any:
        if type(event) is DeckEscrowed:
            index = [-1] * event.table_size
            for i, s in enumerate(event.seats):
                index[s] = i
            return AdaptedHand(
                event.seats,
                tuple(index),
                self._deck_for_seed(bytes.fromhex(event.seed_hex)),
                event.commitment,
                event.seed_hex,
                None,
                event.show_beaten,
                event.show_uncontested,
            )
        a: AdaptedHand = hand
        if type(event) is WinnerShown:
            return dataclasses.replace(a, revealed=(*a.revealed, event.seat))
        return a.with_state(h.apply(a.state, event))

    def advance(self, hand: Any) -> tuple[Any, list[Any]]:
        a: AdaptedHand = hand
        s = a.state
        assert s is not None
        out: list[Any] = []
        while True:
            cmd = _auto_command(a, s)
            if cmd is None:
                shown = _winner_shown(a, s)
                if shown is not None:
                    out.append(shown)
                if not out:
                    return a, out
                b = a.with_state(s)
                if shown is not None:
                    b = dataclasses.replace(b, revealed=(shown.seat,))
                return b, out
            s, evs = h.step(s, cmd)
            out.extend(evs)

    def act(self, hand: Any, seat: int, move: Move, amount: int) -> tuple[Any, list[Any]]:
        a: AdaptedHand = hand
        s = a.state
        assert s is not None
        p = a.index[seat]
        la = h.legal_actions(s)
        if la is None or la.player != p:
            raise IllegalMove("not your turn")
        try:
            if move is Move.FOLD and not la.can_fold:
                # Fold is always offered (seed 000: the big blind too); the engine's own
                # rule refuses a fold with nothing to call, so it is recorded as a plain
                # Folded by the engine's table-rule entry point.
                s2, evs = h.step_fold_anyway(s, p)
            else:
                s2, evs = h.step(s, h.command_for(move, p, amount))
        except h.CommandRejected as exc:
            raise IllegalMove(exc.reason) from exc
        return a.with_state(s2), evs

    def actor(self, hand: Any) -> int | None:
        a: AdaptedHand = hand
        s = a.state
        if s is None or s.phase is not _BETTING or not s.to_act:
            return None
        return a.seats[s.to_act[0]]

    def legal(self, hand: Any) -> Legal:
        a: AdaptedHand = hand
        assert a.state is not None
        la = h.legal_actions(a.state)
        if la is None:
            raise IllegalMove("no betting decision is pending")
        return Legal(
            seat=a.seats[la.player],
            can_fold=True,  # fold is always offered (see `act`)
            can_check=la.can_check,
            call_amount=la.call_amount,
            min_raise_to=la.min_raise_to if la.can_raise else None,
            max_raise_to=la.max_raise_to if la.can_raise else None,
            stack=la.stack,
            is_bet=la.is_bet,
            street_bet=la.player_bet,
        )

    def to_call(self, hand: Any, seat: int) -> int:
        a: AdaptedHand = hand
        s = a.state
        p = a.index[seat]
        if s is None or p < 0:
            return 0
        return max(s.bets) - s.bets[p]

    def street(self, hand: Any) -> int:
        a: AdaptedHand = hand
        s = a.state
        if s is None:
            return -10
        return s.street * 2 + (1 if s.phase is _BETTING else 0)

    def is_over(self, hand: Any) -> bool:
        a: AdaptedHand = hand
        return a.state is not None and a.state.phase is _COMPLETE

    def stacks(self, hand: Any) -> dict[int, int]:
        a: AdaptedHand = hand
        s = a.state
        if s is None:
            return {}
        return {seat: s.stacks[i] for i, seat in enumerate(a.seats)}

    def in_hand(self, hand: Any, seat: int) -> bool:
        a: AdaptedHand = hand
        s = a.state
        if s is None or s.phase is _COMPLETE:
            return False
        p = a.index[seat]
        return p >= 0 and not s.folded[p] and s.stacks[p] > 0

    def hole_cards(self, hand: Any, seat: int) -> tuple[str, ...]:
        a: AdaptedHand = hand
        p = a.index[seat] if seat < len(a.index) else -1
        if a.state is None or p < 0:
            return ()
        return tuple(card_str(c) for c in a.state.hole[p])

    def board(self, hand: Any) -> tuple[str, ...]:
        a: AdaptedHand = hand
        return () if a.state is None else tuple(card_str(c) for c in a.state.board)

    def pot(self, hand: Any) -> int:
        a: AdaptedHand = hand
        return 0 if a.state is None else a.state.pot_total

    def shown(self, hand: Any) -> Mapping[int, tuple[str, ...]]:
        a: AdaptedHand = hand
        s = a.state
        if s is None:
            return {}
        return {
            a.seats[i]: tuple(card_str(c) for c in s.hole[i])
            for i in range(s.n)
            if s.shown[i] or a.seats[i] in a.revealed
        }

    def deck_commitment(self, hand: Any) -> str:
        a: AdaptedHand = hand
        return a.commitment

    def deck_seed_hex(self, hand: Any) -> str:
        a: AdaptedHand = hand
        return a.seed_hex

    def action_result(self, hand: Any, seat: int, events: Sequence[Any]) -> ActionResult:
        a: AdaptedHand = hand
        s = a.state
        assert s is not None
        p = a.index[seat]
        before = s.bets[p]
        street = h.Street(s.street)
        for e in events:
            if type(e) is h.Called and e.player == p:
                return ActionResult(e.amount, before + e.amount, e.all_in, street)
            if (type(e) is h.BetPlaced or type(e) is h.Raised) and e.player == p:
                return ActionResult(e.to - before, e.to, e.all_in, street)
        return ActionResult(0, before, False, street)

    def snapshot(self, hand: Any) -> HandSnapshot:
        a: AdaptedHand = hand
        s = a.state
        assert s is not None
        seats = {
            seat: HandSeat(s.stacks[i], s.bets[i], s.folded[i], bool(s.hole[i]))
            for i, seat in enumerate(a.seats)
        }
        betting_over = s.phase is h.Phase.SHOWDOWN or s.phase is _COMPLETE
        return HandSnapshot(
            seats=seats,
            street=None if betting_over else h.Street(max(0, min(s.street, 3))),
            board=tuple(card_str(c) for c in s.board),
            current_bet=max(s.bets),
            pot_total=s.pot_total,
            shown=self.shown(a),
        )

    def facts(self, hand: Any, events: Sequence[Any]) -> list[HandFact | None]:
        return hand_facts(hand, events)

    def describe(self, event: Any) -> Sequence[str]:
        return (repr(event),)


_BOARD_AFTER = {1: 3, 2: 4, 3: 5}


def _best(hole: Sequence[int], board: Sequence[int]) -> tuple[tuple[int, ...], int, str]:
    """Best five, category value and description of a shown hand (empty before the whole
    board is known or for unknown cards)."""
    cards = [*hole, *board]
    if len(board) != 5 or len(hole) != 2 or any(not 0 <= c < 52 for c in cards):
        return ((), -1, "")
    v = evaluate(cards)
    return (
        v.best_five,
        int(v.category),
        v.description,
    )  # cards on the board once street 1 (flop) .. 3 is dealt


def hand_facts(hand: AdaptedHand, events: Sequence[Any]) -> list[HandFact | None]:
    """Engine events of the current hand in table terms (see `HandPort.facts`).

    ``hand`` is the state after ``events``. Streets only add cards, so the board after a
    street is a prefix of the final board; posts all happen in the batch that starts the
    hand, so a post is all-in when the posts so far take the starting stack; a hand is
    shown with some live hand all-in when a live player has nothing behind besides what
    the pots paid them."""
    s = hand.state
    assert s is not None
    seats = hand.seats
    posted = [0] * s.n
    out: list[HandFact | None] = []
    for ev in events:
        t = type(ev)
        if t is DeckEscrowed:
            out.append(None)
        elif t is h.AntePosted or t is h.BlindPosted:
            p = ev.player
            posted[p] += ev.amount
            post = (
                Post.ANTE if t is h.AntePosted else (Post.BIG_BLIND if ev.big else Post.SMALL_BLIND)
            )
            out.append(
                HandFact(
                    t.__name__,
                    seats[p],
                    amount=ev.amount,
                    all_in=posted[p] == s.config.stacks[p],
                    post=post,
                )
            )
        elif t is h.HoleCardsDealt:
            out.append(HandFact(t.__name__, seats[ev.player], cards=tuple(ev.cards)))
        elif t is h.BoardDealt:
            out.append(
                HandFact(
                    t.__name__,
                    cards=tuple(ev.cards),
                    board=s.board[: _BOARD_AFTER[ev.street]],
                    street=h.Street(ev.street),
                )
            )
        elif t is h.HandShown:
            all_in = any(not s.folded[i] and s.stacks[i] - s.winnings[i] == 0 for i in range(s.n))
            out.append(
                HandFact(
                    t.__name__,
                    seats[ev.player],
                    cards=tuple(ev.cards),
                    all_in=all_in,
                    hands=(_best(ev.cards, s.board),),
                )
            )
        elif t is WinnerShown:
            out.append(
                HandFact(
                    "WinnerShown", ev.seat, cards=tuple(ev.cards), hands=(_best(ev.cards, s.board),)
                )
            )
        elif t is h.HandMucked:
            out.append(HandFact(t.__name__, seats[ev.player]))
        elif t is h.UncalledBetReturned:
            out.append(HandFact(t.__name__, seats[ev.player], amount=ev.amount))
        elif t is h.PotAwarded:
            out.append(
                HandFact(
                    t.__name__,
                    amount=ev.amount,
                    index=ev.index,
                    winners=tuple(
                        (seats[p], share) for p, share in zip(ev.winners, ev.shares, strict=True)
                    ),
                    hands=tuple(
                        _best(s.hole[p], s.board) if s.shown[p] else ((), -1, "")
                        for p in ev.winners
                    ),
                )
            )
        else:
            out.append(HandFact(t.__name__))
    return out
