"""What one player (or an observer) may see of a tournament: `PlayerView`.

Privacy (docs/design.md §8), decided here and nowhere else: hole cards appear only for the viewer's
own seat, or for a seat whose cards the engine exposed (showdown order, or every hand once
all-in with no more betting). An observer (``seat=None``) sees nobody's hole cards until
exposed. Legal actions and pre-turn actions are the viewer's own.

A view is the public one (an observer's) plus the viewer's own part (`SeatPrivate`:
`seat_private`), so a table can build the public view once per change and add each seat's
part to it (issue 26); ``player_view(t, seat, at)`` is exactly that sum (a test checks it
over whole tournaments).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from electric_domain.holdem.state import Street
from electric_domain.tournament import preaction as pa
from electric_domain.tournament import schedule as sch
from electric_domain.tournament.hand_port import HandSnapshot, Legal
from electric_domain.tournament.state import Deadline

if TYPE_CHECKING:
    from electric_domain.tournament.aggregate import Tournament


@dataclass(frozen=True, slots=True)
class SeatView:
    """One seat as the viewer sees it. During a hand ``stack`` is the chips behind and
    ``street_bet`` this round's bet; between hands the stack after the last hand.
    ``hole_cards`` is empty unless they are the viewer's own or exposed; they stay visible
    after the hand until the next deal."""

    seat: int
    player_id: str
    stack: int
    street_bet: int
    folded: bool  # folded in the hand in progress (between hands: in the last hand)
    all_in: bool
    has_cards: bool  # still holds cards in the hand in progress (between hands: at its end)
    in_hand: bool  # dealt into the hand in progress and not folded (eligible for the pot)
    hole_cards: tuple[str, ...]
    sitting_out: bool
    eliminated: bool
    bank_ms: int
    places: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PlayerView:
    """What one player may see (their own hole cards only, until a showdown shows others).

    ``seat`` is None for an observer. Hand fields describe the hand in progress or, between
    hands, the last one (``hand_in_progress`` False); pot and bet amounts are 0 then.
    ``street`` is None once betting is over (showdown) or between hands."""

    tournament_id: str
    seat: int | None
    players: tuple[str, ...]
    stacks: tuple[int, ...]
    sitting_out: tuple[bool, ...]
    eliminated: tuple[bool, ...]
    seats: tuple[SeatView, ...]
    multiplier: int
    prize_pool_cents: int
    buy_in_cents: int
    level: int
    small_blind: int
    big_blind: int
    ante: int
    level_ms: int
    level_ends_at: int | None  # None once the clock reached 0:00
    clock_remaining_ms: int
    electric_mode: bool
    hand_no: int
    action_seq: int  # number of the next decision in the hand
    hand_in_progress: bool
    electric_hand: bool
    deck_commitment: str
    button: int | None
    small_blind_seat: int | None
    big_blind_seat: int | None
    hole_cards: tuple[str, ...]
    shown: tuple[tuple[int, tuple[str, ...]], ...]
    board: tuple[str, ...]
    street: Street | None
    pot: int
    collected: int  # chips in the middle from earlier rounds (pot = collected + bets)
    current_bet: int
    actor: int | None
    actor_min_raise_to: int | None
    legal: Legal | None
    deadline: Deadline | None
    time_bank_ms: int
    turn_started_at: int | None  # start of the running timer (action timer or time bank)
    actor_bank_ms: int  # time bank the seat to act has left (0 when nobody is to act)
    action_timer_ms: int
    pre_actions: frozenset[pa.PreAction]
    pre_action: pa.Selection | None
    finished: bool
    places: tuple[tuple[int, ...], ...]
    prizes_cents: tuple[int, ...]

    @property
    def has_hand(self) -> bool:
        """A hand was dealt (the hand fields are meaningful)."""
        return self.hand_no > 0 and self.button is not None


@dataclass(frozen=True, slots=True)
class SeatPrivate:
    """What only the player in ``seat`` sees beside the public view: its own hole cards
    (while it holds them), its legal actions, its time bank and its pre-turn actions."""

    seat: int
    hole_cards: tuple[str, ...]
    legal: Legal | None
    time_bank_ms: int
    pre_actions: frozenset[pa.PreAction]
    pre_action: pa.Selection | None


@dataclass(frozen=True, slots=True)
class Progress:
    """What a player's My Tables row shows of the table (issue 26): the hand number, each
    seat's stack (chips behind during a hand, as in the view; the stack between hands), and
    the running turn's seat and deadline (None between turns). Equal progress: nothing a
    My Tables row shows changed."""

    hand_no: int
    stacks: tuple[int, ...]
    turn_seat: int | None
    turn_deadline: int | None


def progress(t: Tournament) -> Progress:
    """``t``'s :class:`Progress` now (cheap: no view is built)."""
    st = t.state
    live = t.hand_live()
    behind = t.port.stacks(st.hand) if live else {}
    turn = st.turn if live else None
    return Progress(
        hand_no=st.hand_no,
        stacks=tuple(behind.get(i, s.stack) for i, s in enumerate(st.seats)),
        turn_seat=turn.seat if turn is not None else None,
        turn_deadline=turn.deadline if turn is not None else None,
    )


def seat_private(t: Tournament, seat: int) -> SeatPrivate:
    """``seat``'s own part of its view (module doc); it does not depend on the time."""
    st = t.state
    mine = st.seats[seat]
    return SeatPrivate(
        seat=seat,
        hole_cards=_own_cards(t, seat),
        legal=t.legal_actions(seat),
        time_bank_ms=mine.bank_ms,
        pre_actions=t.pre_actions_available(seat),
        pre_action=mine.preaction,
    )


def _own_cards(t: Tournament, seat: int) -> tuple[str, ...]:
    """The cards ``seat`` holds in the current (or last) hand; () when it holds none."""
    hand = t.state.hand
    if hand is None or t.state.hand_no <= 0:
        return ()
    return t.port.hole_cards(hand, seat)


def player_view(t: Tournament, seat: int | None, at: int) -> PlayerView:
    """``seat``'s view of ``t`` at ``at`` (``seat`` None: an observer)."""
    st = t.state
    port = t.port
    hand = st.hand
    live = t.hand_live()
    if st.finished:
        at = min(at, st.now)  # a finished table's clocks stop at the finish
    lvl = max(st.level, 1)
    lv = t.config.blind_levels[lvl - 1]
    has_hand = hand is not None and st.hand_no > 0
    snap: HandSnapshot | None = port.snapshot(hand) if has_hand else None
    shown = dict(snap.shown) if snap is not None else {}
    seats = tuple(_seat_view(t, i, seat, snap, shown, live) for i in range(len(st.seats)))
    pos = st.positions
    turn = st.turn if live else None
    actor_legal = t.legal_actions(turn.seat) if turn is not None else None
    mine = st.seats[seat] if seat is not None else None
    return PlayerView(
        tournament_id=st.tournament_id,
        seat=seat,
        players=tuple(s.player_id for s in st.seats),
        stacks=tuple(v.stack for v in seats),
        sitting_out=tuple(s.sitting_out for s in st.seats),
        eliminated=tuple(s.eliminated for s in st.seats),
        seats=seats,
        multiplier=st.multiplier,
        prize_pool_cents=st.prize_pool_cents,
        buy_in_cents=st.buy_in_cents,
        level=lvl,
        small_blind=lv.small_blind,
        big_blind=lv.big_blind,
        ante=lv.ante,
        level_ms=st.level_ms,
        level_ends_at=(
            None if st.clock_expired or st.finished else st.started_at + st.level * st.level_ms
        ),
        clock_remaining_ms=sch.remaining_ms(at - st.started_at, st.level_ms, st.levels),
        electric_mode=st.electric_mode or st.clock_expired,
        hand_no=st.hand_no,
        action_seq=st.next_action_seq,
        hand_in_progress=live,
        electric_hand=st.electric_hand,
        deck_commitment=st.deck_commitment,
        button=pos.button if pos else None,
        small_blind_seat=pos.small_blind if pos else None,
        big_blind_seat=pos.big_blind if pos else None,
        hole_cards=port.hole_cards(hand, seat) if has_hand and seat is not None else (),
        shown=tuple(sorted(shown.items())),
        board=snap.board if snap is not None else (),
        street=snap.street if snap is not None and live else None,
        pot=snap.pot_total if snap is not None and live else 0,
        collected=(
            snap.pot_total - sum(h.street_bet for h in snap.seats.values())
            if snap is not None and live
            else 0
        ),
        current_bet=snap.current_bet if snap is not None and live else 0,
        actor=st.turn.seat if st.turn is not None else None,
        actor_min_raise_to=actor_legal.min_raise_to if actor_legal is not None else None,
        legal=t.legal_actions(seat) if seat is not None else None,
        deadline=t.deadline() if live else None,
        time_bank_ms=mine.bank_ms if mine is not None else 0,
        turn_started_at=st.turn.started_at if live and st.turn is not None else None,
        actor_bank_ms=st.seats[st.turn.seat].bank_ms if live and st.turn is not None else 0,
        action_timer_ms=t.config.action_timer_ms,
        pre_actions=t.pre_actions_available(seat) if seat is not None else frozenset(),
        pre_action=mine.preaction if mine is not None else None,
        finished=st.finished,
        places=tuple(s.places for s in st.seats) if st.finished else (),
        prizes_cents=tuple(s.prize_cents for s in st.seats) if st.finished else (),
    )


def _seat_view(
    t: Tournament,
    i: int,
    viewer: int | None,
    snap: HandSnapshot | None,
    shown: dict[int, tuple[str, ...]],
    live: bool,
) -> SeatView:
    s = t.state.seats[i]
    hs = snap.seats.get(i) if snap is not None else None
    cards: tuple[str, ...] = ()
    if hs is not None and hs.has_cards and (i == viewer or i in shown):
        cards = _own_cards(t, i) if i == viewer else shown[i]
    playing = live and hs is not None
    # Folded / has-cards describe the hand in progress or, between hands, the last one (the
    # hand-end view keeps who folded and who held cards to the end).
    folded = hs is not None and hs.folded
    return SeatView(
        seat=i,
        player_id=s.player_id,
        stack=hs.behind if playing and hs is not None else s.stack,
        street_bet=hs.street_bet if playing and hs is not None else 0,
        folded=folded,
        all_in=playing and hs is not None and not hs.folded and hs.behind == 0,
        has_cards=hs is not None and not hs.folded and hs.has_cards,
        in_hand=playing and not folded,
        hole_cards=cards,
        sitting_out=s.sitting_out,
        eliminated=s.eliminated,
        bank_ms=s.bank_ms,
        places=s.places,
    )
