"""Tournament aggregate scenarios, each naming the seed 000 rule it covers (``rule=``).

Decks are stacked through the adapter's injectable ``deck_for_seed`` so outcomes are fixed;
every scenario ends by checking that folding the recorded events rebuilds the same state.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from electric_domain.cards import parse_cards
from electric_domain.deck import derive_deck
from electric_domain.holdem import (
    AntePosted,
    BlindPosted,
    BoardDealt,
    Called,
    HoleCardsDealt,
    deal_positions,
)
from electric_domain.tournament.aggregate import Rejected, Tournament
from electric_domain.tournament.config import (
    BuyInTier,
    PayTable,
    PayTableEntry,
    TournamentConfig,
    default_config,
)
from electric_domain.tournament.engine_adapter import HoldemPort
from electric_domain.tournament.events import (
    Act,
    ActionTaken,
    Cause,
    ClearPreAction,
    ClockExpired,
    DealHand,
    ElectricModeStarted,
    Event,
    HandEvent,
    HandStarted,
    LevelAdvanced,
    PlayerEliminated,
    PreActionChanged,
    PreActionUnselected,
    SatOut,
    SelectPreAction,
    SitIn,
    SitOut,
    Tick,
    TimeBankStarted,
    TimedOut,
    Timeout,
    TournamentFinished,
    TurnStarted,
)
from electric_domain.tournament.preaction import PreAction
from electric_domain.tournament.timers import Phase

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

    def deal(self, at: int, hole: dict[int, str] | None = None, board: str = "") -> list[Event]:
        """Deal the next hand; ``hole`` maps table seat -> "AsAh"; ``board`` 5 cards."""
        self.hand_seed += 1
        seed = bytes([self.hand_seed]) * 32
        if hole is not None:
            self.decks[seed] = self._stack(hole, board)
        return self.t.handle(DealHand(at, seed))

    def _stack(self, hole: dict[int, str], board: str) -> tuple[int, ...]:
        st = self.t.state
        live = [i for i, s in enumerate(st.seats) if not s.eliminated]
        n = len(live)
        from electric_domain.tournament.schedule import first_positions, next_positions

        pos = (
            first_positions(st.first_button, live, 3)
            if st.positions is None
            else next_positions(st.positions, live, 3)
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


@pytest.fixture
def table() -> Iterator[Table]:
    tb = Table()
    yield tb
    tb.check_replay()


def test_multiplier_seed_fixture() -> None:
    t = Table().t
    assert (t.state.multiplier, t.state.first_button) == (2, 2)


# ------------------------------------------------------------------ blinds, button, heads-up


def test_three_handed_blind_and_button_order(table: Table) -> None:
    """rule=seed 000 "The Dealer Button"/"The Blinds"/"The Deal and Pre-flop": SB left of the
    button, BB left of SB, pre-flop action starts left of the BB; the button moves clockwise."""
    ev = table.deal(1_000)
    hs = of(ev, HandStarted)[0]
    assert (hs.button, hs.small_blind_seat, hs.big_blind_seat) == (2, 0, 1)
    blinds = hand_events(ev, BlindPosted)
    assert [(b.player, b.amount, b.big) for b in blinds] == [(0, 10, False), (1, 20, True)]
    assert table.actor == 2  # button acts first 3-handed (left of the BB)
    table.act(2, "fold", 2_000)
    table.act(0, "fold", 3_000)
    ev = table.deal(6_000)
    hs = of(ev, HandStarted)[0]
    assert (hs.button, hs.small_blind_seat, hs.big_blind_seat) == (0, 1, 2)
    assert table.actor == 0


def _bust_seat1(table: Table) -> None:
    """Hand 1 (button 2, SB 0, BB 1): 2 folds, 0 shoves AA, 1 calls with 72 and busts."""
    table.deal(1_000, {0: "AsAh", 1: "7c2d", 2: "9h8h"}, "KdQs5c4h3s")
    table.act(2, "fold", 2_000)
    table.act(0, "all_in", 3_000)
    ev = table.act(1, "call", 4_000)
    assert of(ev, PlayerEliminated)[0].seat == 1


def test_heads_up_button_posts_small_blind_and_acts_first(table: Table) -> None:
    """rule=seed 000 "The Dealer Button" (heads-up the button is the SB) + DESIGN §5 heads-up:
    the button acts first pre-flop, the BB first after the flop; no BB twice in a row."""
    _bust_seat1(table)
    ev = table.deal(8_000)
    hs = of(ev, HandStarted)[0]
    assert (hs.button, hs.small_blind_seat, hs.big_blind_seat) == (0, 0, 2)
    blinds = hand_events(ev, BlindPosted)
    # engine players are live seats in order: player 0 = seat 0, player 1 = seat 2
    assert [(b.player, b.amount, b.big) for b in blinds] == [(0, 10, False), (1, 20, True)]
    assert table.actor == 0
    table.act(0, "call", 9_000)
    table.act(2, "check", 10_000)
    assert table.actor == 2  # post-flop the BB (non-button) acts first
    table.act(2, "check", 11_000)
    table.act(0, "check", 12_000)
    table.act(2, "check", 13_000)
    table.act(0, "check", 14_000)
    table.act(2, "check", 15_000)
    table.act(0, "check", 16_000)
    ev = table.deal(20_000)
    hs = of(ev, HandStarted)[0]
    assert (hs.button, hs.small_blind_seat, hs.big_blind_seat) == (2, 2, 0)


# --------------------------------------------------------------------- levels and the clock


def test_levels_advance_on_time_and_antes_post(table: Table) -> None:
    """rule=seed 000 §1 "blinds increase every two minutes" + DESIGN §5 ante schedule."""
    ev = table.t.handle(Tick(120_000))
    assert of(ev, LevelAdvanced) == [LevelAdvanced(2, 15, 30, 0, 120_000)]
    ev = table.deal(125_000)
    assert [(b.amount) for b in hand_events(ev, BlindPosted)] == [15, 30]
    table.act(2, "fold", 126_000)
    table.act(0, "fold", 127_000)
    ev = table.deal(250_000)  # catch-up: level 3 at 240 s happens first
    assert of(ev, LevelAdvanced) == [LevelAdvanced(3, 20, 40, 5, 240_000)]
    assert [a.amount for a in hand_events(ev, AntePosted)] == [5, 5, 5]
    assert [b.amount for b in hand_events(ev, BlindPosted)] == [20, 40]


def test_hand_in_progress_at_zero_finishes_then_electric_mode(table: Table) -> None:
    """rule=seed 000 "Electric Mode": a hand being played when the timer reaches 0:00
    finishes normally; players are forced all-in from the following hand until a winner."""
    table.t.handle(Tick(350_000))
    table.deal(355_000)
    assert table.actor == 2
    table.act(2, "call", 356_000)
    ev = table.act(0, "call", 361_000)  # 0:00 is at 360 s (2x: 3 levels)
    assert of(ev, ClockExpired) == [ClockExpired(360_000)]
    assert table.actor == 1  # still a normal decision: no forced all-in in this hand
    table.act(1, "check", 362_000)
    table.passive(363_000)
    ev = table.deal(366_000)
    assert of(ev, ElectricModeStarted) == [ElectricModeStarted(2, 366_000)]
    assert of(ev, HandStarted)[0].electric
    taken = of(ev, ActionTaken)
    assert taken and all(a.cause is Cause.ELECTRIC for a in taken)
    assert not of(ev, TurnStarted)  # nobody is asked anything in Electric Mode
    at = 366_000
    while not table.t.state.finished:
        at += 5_000
        ev = table.deal(at)
        assert of(ev, HandStarted)[0].electric and not of(ev, TurnStarted)
    res = table.t.result()
    assert res is not None and sum(res.prizes_cents) == 200


def test_first_hand_dealt_at_zero_is_electric() -> None:
    """rule=seed 000 "Electric Mode": Electric Mode starts with the first hand after 0:00."""
    tb = Table()
    ev = tb.deal(360_000)
    assert of(ev, ClockExpired) == [ClockExpired(360_000)]
    assert of(ev, HandStarted)[0].electric
    tb.check_replay()


# ------------------------------------------------------------------------------- timers


@pytest.mark.parametrize(
    ("rule", "script", "expect_bank"),
    [
        ("Action Timer: blinds only (button facing the BB) -> no bank, fold", [], False),
        (
            "Time Bank: blind money is not voluntary (BB facing a raise) -> no bank, fold",
            [(2, "raise_to", 60), (0, "fold", 0)],
            False,
        ),
        (
            "Action Timer: BB with the option times out -> check",
            [(2, "call", 0), (0, "call", 0)],
            False,
        ),
    ],
)
def test_timeout_without_voluntary_chips(
    rule: str, script: list[tuple[int, str, int]], expect_bank: bool, table: Table
) -> None:
    table.deal(1_000)
    at = 1_000
    for seat, move, amount in script:
        at += 1_000
        table.act(seat, move, at, amount)
    turn = table.t.state.turn
    assert turn is not None
    seat = turn.seat
    to_call = table.t.port.to_call(table.t.state.hand, seat)
    ev = table.t.handle(Timeout(seat, turn.deadline))
    assert bool(of(ev, TimeBankStarted)) is expect_bank, rule
    taken = of(ev, ActionTaken)[0]
    assert (taken.seat, taken.cause) == (seat, Cause.TIMEOUT)
    assert taken.move == ("check" if to_call == 0 else "fold"), rule
    assert table.t.state.seats[seat].bank_ms == 10_000


def _to_flop_with_button_call(table: Table) -> None:
    table.deal(1_000)
    table.act(2, "call", 2_000)  # button calls voluntarily
    table.act(0, "call", 3_000)
    table.act(1, "check", 4_000)
    table.act(0, "check", 5_000)
    table.act(1, "raise_to", 6_000, 40)  # bet 40 on the flop
    assert table.actor == 2


def test_time_bank_starts_after_voluntary_investment_and_carries_over(table: Table) -> None:
    """rule=seed 000 "Time Bank": activates when the action timer expires and the player has
    voluntarily invested; 3 s used of 10 s leaves 7 s for the rest of the tournament."""
    _to_flop_with_button_call(table)
    ev = table.t.handle(Tick(16_000))
    assert of(ev, TimeBankStarted) == [TimeBankStarted(2, 16_000, 26_000)]
    assert table.t.deadline() is not None and table.t.deadline().phase is Phase.BANK  # type: ignore[union-attr]
    ev = table.act(2, "call", 19_000)
    assert of(ev, ActionTaken)[0].bank_ms_after == 7_000
    table.passive(20_000)
    table.deal(25_000)
    assert table.t.view(2, 25_000).time_bank_ms == 7_000


def test_time_bank_runs_out_then_check_or_fold(table: Table) -> None:
    """rule=seed 000 "Time Bank": failing to act before the bank expires -> check or fold;
    the bank is then empty for the rest of the tournament."""
    _to_flop_with_button_call(table)
    ev = table.t.handle(Tick(30_000))  # action timer at 16 s, bank until 26 s: both expire
    assert [type(e) for e in ev if isinstance(e, TimeBankStarted | TimedOut)] == [
        TimeBankStarted,
        TimedOut,
    ]
    taken = of(ev, ActionTaken)[0]
    assert (taken.seat, taken.move, taken.cause, taken.bank_ms_after) == (
        2,
        "fold",
        Cause.TIMEOUT,
        0,
    )
    assert table.t.state.seats[2].bank_ms == 0


def test_early_timeout_is_rejected(table: Table) -> None:
    """rule=timeouts are inputs: a Timeout before the deadline changes nothing."""
    table.deal(1_000)
    with pytest.raises(Rejected, match="no expired turn timer"):
        table.t.handle(Timeout(2, 10_999))
    with pytest.raises(Rejected, match="no expired turn timer"):
        table.t.handle(Timeout(0, 11_000))


def test_two_consecutive_timeouts_sit_the_player_out(table: Table) -> None:
    """rule=documented policy (docs/tournament-rules.md): 2 consecutive timeouts -> sitting out."""
    table.deal(1_000)
    ev = table.t.handle(Tick(11_000))  # seat 2 times out (fold)
    assert not of(ev, SatOut)
    table.act(0, "fold", 12_000)
    table.deal(15_000)  # button 0, SB 1, BB 2: seat 0 first, then 1, then 2
    table.act(0, "raise_to", 16_000, 60)
    table.act(1, "fold", 17_000)
    ev = table.t.handle(Tick(27_000))
    assert of(ev, SatOut) == [SatOut(2, "timeouts", 27_000)]
    assert table.t.state.seats[2].sitting_out


# ----------------------------------------------------------------------- pre-turn actions


def _sel(table: Table, seat: int, action: PreAction, at: int) -> list[Event]:
    return table.t.handle(SelectPreAction(seat, action, at))


def test_check_fold_turns_into_fold_after_a_bet(table: Table) -> None:
    """rule=seed 000 §5.b.ii: check/fold becomes fold once a bet is made before the turn."""
    table.deal(1_000)
    _sel(table, 1, PreAction.CHECK_FOLD, 1_100)  # BB: nothing to call yet
    ev = table.act(2, "raise_to", 2_000, 60)
    assert of(ev, PreActionChanged) == [PreActionChanged(1, PreAction.FOLD, 40, 2_000)]
    ev = table.act(0, "fold", 3_000)  # BB's turn: the fold executes at once
    taken = of(ev, ActionTaken)
    assert [(a.seat, a.move, a.cause) for a in taken] == [
        (0, "fold", Cause.PLAYER),
        (1, "fold", Cause.PRE_ACTION),
    ]


def test_check_fold_checks_without_a_bet(table: Table) -> None:
    """rule=seed 000 §5.b.ii: check/fold checks when no bet was made."""
    table.deal(1_000)
    _sel(table, 1, PreAction.CHECK_FOLD, 1_100)
    table.act(2, "call", 2_000)
    ev = table.act(0, "call", 3_000)
    assert [(a.seat, a.move, a.cause) for a in of(ev, ActionTaken)][-1] == (
        1,
        "check",
        Cause.PRE_ACTION,
    )


def test_check_becomes_unselected_after_a_bet(table: Table) -> None:
    """rule=seed 000 §5.b.iii: pre-selected check is unselected when a bet is placed."""
    table.deal(1_000)
    _sel(table, 1, PreAction.CHECK, 1_100)
    ev = table.act(2, "raise_to", 2_000, 60)
    assert of(ev, PreActionUnselected) == [PreActionUnselected(1, "bet", 2_000)]
    table.act(0, "fold", 3_000)
    assert table.actor == 1  # the BB now decides by hand


def test_check_executes_without_a_bet(table: Table) -> None:
    """rule=seed 000 §5.b.iii: check executes at the turn when there is no bet."""
    table.deal(1_000)
    _sel(table, 1, PreAction.CHECK, 1_100)
    table.act(2, "call", 2_000)
    ev = table.act(0, "call", 3_000)
    assert of(ev, ActionTaken)[-1].cause is Cause.PRE_ACTION


@pytest.mark.parametrize(
    ("rule", "button_move", "button_amount", "executes"),
    [
        ("seed 000 §5.b.iv: call executes when the bet is unchanged", "call", 0, True),
        ("seed 000 §5.b.iv: call is unselected when the bet increases", "raise_to", 60, False),
    ],
)
def test_call_pre_action(
    rule: str, button_move: str, button_amount: int, executes: bool, table: Table
) -> None:
    table.deal(1_000)
    _sel(table, 0, PreAction.CALL, 1_100)  # SB: 10 to call
    ev = table.act(2, button_move, 2_000, button_amount)
    if executes:
        taken = of(ev, ActionTaken)[-1]
        assert (taken.seat, taken.move, taken.cause, taken.voluntary_chips) == (
            0,
            "call",
            Cause.PRE_ACTION,
            True,
        ), rule
    else:
        assert of(ev, PreActionUnselected) == [PreActionUnselected(0, "bet", 2_000)], rule
        assert table.actor == 0


def test_all_in_offered_only_when_the_bet_exceeds_the_chips(table: Table) -> None:
    """rule=seed 000 §5.b.v: All In shows only for a bet over the player's chips; it calls
    with the whole stack at the turn."""
    table.deal(1_000)
    table.act(2, "fold", 2_000)
    table.act(0, "fold", 3_000)  # stacks 0:490 1:510 2:500
    table.deal(6_000)  # button 0, SB 1, BB 2
    table.act(0, "call", 7_000)
    table.act(1, "call", 8_000)
    table.act(2, "check", 9_000)  # flop: SB 1 acts first, then 2, then 0
    assert table.t.pre_actions_available(0) == {PreAction.CHECK, PreAction.CHECK_FOLD}
    table.act(1, "all_in", 10_000)  # 490 behind
    assert table.actor == 2
    # seat 0 has 470 behind and faces 490: all-in offered, call not
    assert table.t.pre_actions_available(0) == {PreAction.FOLD, PreAction.ALL_IN}
    with pytest.raises(Rejected, match="not offered"):
        _sel(table, 0, PreAction.CALL, 10_100)
    _sel(table, 0, PreAction.ALL_IN, 10_200)
    ev = table.act(2, "fold", 11_000)
    called = hand_events(ev, Called)
    assert [(c.player, c.amount, c.all_in) for c in called] == [(0, 470, True)]


def test_unselect_before_turn_and_no_selection_on_own_turn(table: Table) -> None:
    """rule=seed 000 §5.b: players can unselect any time before it is their action."""
    table.deal(1_000)
    with pytest.raises(Rejected, match="your turn"):
        _sel(table, 2, PreAction.FOLD, 1_050)
    _sel(table, 0, PreAction.FOLD, 1_100)
    ev = table.t.handle(ClearPreAction(0, 1_200))
    assert of(ev, PreActionUnselected) == [PreActionUnselected(0, "player", 1_200)]
    table.act(2, "call", 2_000)
    assert table.actor == 0  # nothing executed
    with pytest.raises(Rejected, match="no pre-turn action"):
        table.t.handle(ClearPreAction(1, 2_100))


# ----------------------------------------------------------------------------- sitting out


def test_sitting_out_posts_is_dealt_and_check_folds(table: Table) -> None:
    """rule=seed 000 "Sitting Out": still pays blinds/antes and is dealt cards; checks if
    there is no bet, folds facing one; may sit back in."""
    table.t.handle(SitOut(1, 500))
    ev = table.deal(1_000)  # seat 1 is the BB
    assert (1 - 0, 20, True) in [(b.player, b.amount, b.big) for b in hand_events(ev, BlindPosted)]
    assert len(hand_events(ev, HoleCardsDealt)) == 3
    table.act(2, "call", 2_000)
    ev = table.act(0, "call", 3_000)  # BB (sitting out) has no bet to face: checks at once
    last = of(ev, ActionTaken)[-1]
    assert (last.seat, last.move, last.cause) == (1, "check", Cause.SITTING_OUT)
    ev = table.act(0, "raise_to", 4_000, 40)  # flop bet by the SB; the BB is next
    last = of(ev, ActionTaken)[-1]
    assert (last.seat, last.move, last.cause) == (1, "fold", Cause.SITTING_OUT)
    table.act(2, "call", 5_000)
    table.t.handle(SitIn(1, 6_000))
    table.passive(7_000)
    table.deal(10_000)  # button 0, SB 1, BB 2: seat 0 acts first
    table.act(0, "call", 11_000)
    assert table.actor == 1  # seat 1 decides again


def test_sitting_out_on_own_turn_acts_immediately(table: Table) -> None:
    """rule=seed 000 "Sitting Out": automatic check/fold when it is their turn."""
    table.deal(1_000)
    ev = table.t.handle(SitOut(2, 2_000))
    taken = of(ev, ActionTaken)
    assert [(a.seat, a.move, a.cause) for a in taken] == [(2, "fold", Cause.SITTING_OUT)]
    assert table.actor == 0


# ------------------------------------------------------------------ busts, places, prizes


def _prize_cfg() -> TournamentConfig:
    """One multiplier (3x, no rake) paying 150/100/50 of a $100 buy-in: 2nd $100, 3rd $50."""
    pt = PayTable(1, 100, (PayTableEntry(3, 1, 3, (150, 100, 50)),))
    return replace(CFG, rake_bps=0, buy_ins=(BuyInTier(10_000, 0),), pay_table=pt)


def test_seed_example_equal_stacks_bust_together_share_75_each() -> None:
    """rule=seed 000 "Prizes Awarded" example: 2nd pays $100 and 3rd $50; two players who
    started the hand with the same chips bust in it -> $75 each."""
    tb = Table(_prize_cfg())
    tb.deal(1_000, {0: "2c7d", 1: "3h8s", 2: "AsAh"}, "KdQs5c4hJs")
    tb.act(2, "all_in", 2_000)
    tb.act(0, "call", 3_000)
    ev = tb.act(1, "call", 4_000)
    elim = of(ev, PlayerEliminated)
    assert {(e.seat, e.places) for e in elim} == {(0, (2, 3)), (1, (2, 3))}
    fin = of(ev, TournamentFinished)[0]
    assert fin.prizes_cents == (7_500, 7_500, 15_000)
    assert fin.places == ((2, 3), (2, 3), (1,))
    tb.check_replay()


def test_two_busts_with_different_stacks_smaller_finishes_lower() -> None:
    """rule=seed 000 "Prizes Awarded": knocked out in the same hand -> ordered by chips at the
    start of that hand; the smaller stack finishes lower."""
    tb = Table(_prize_cfg())
    tb.deal(1_000)
    tb.act(2, "raise_to", 2_000, 60)
    tb.act(0, "fold", 3_000)
    tb.act(1, "fold", 4_000)  # stacks 0:490 1:480 2:530
    tb.deal(6_000, {0: "2c7d", 1: "3h8s", 2: "AsAh"}, "KdQs5c4hJs")  # button 0, SB 1, BB 2
    tb.act(0, "all_in", 7_000)
    tb.act(1, "call", 8_000)
    ev = tb.act(2, "call", 9_000)
    fin = of(ev, TournamentFinished)[0]
    assert fin.places == ((2,), (3,), (1,))
    assert fin.prizes_cents == (10_000, 5_000, 15_000)
    tb.check_replay()


def test_board_is_dealt_from_the_committed_deck(table: Table) -> None:
    """rule=DESIGN §5 provably fair deck: HandStarted commits, HandEnded reveals the seed."""
    import hashlib

    ev = table.deal(1_000)
    started = of(ev, HandStarted)[0]
    table.act(2, "call", 2_000)
    table.act(0, "call", 3_000)
    ev = table.act(1, "check", 4_000)
    flop = hand_events(ev, BoardDealt)[0]
    ev = table.passive(6_000)
    from electric_domain.tournament.events import HandEnded

    ended = of(ev, HandEnded)[0]
    seed = bytes.fromhex(ended.deck_seed_hex)
    assert hashlib.sha256(seed).hexdigest() == started.deck_commitment
    deck = derive_deck(seed)
    _, board_pos = deal_positions(3)
    assert flop.cards == tuple(deck[p] for p in board_pos[0])


def test_rejections_change_nothing(table: Table) -> None:
    """rule=DESIGN §8: bad input gets a precise error and changes nothing."""
    table.deal(1_000)
    before = len(table.t.history)
    for cmd, code in [
        (Act(0, "call", 1_500), "FAILED_PRECONDITION"),  # not seat 0's turn
        (Act(2, "raise_to", 1_500, 21), "FAILED_PRECONDITION"),  # below the minimum raise
        (Act(2, "dance", 1_500), "INVALID_ARGUMENT"),
        (Act(7, "call", 1_500), "INVALID_ARGUMENT"),
        (DealHand(1_500, bytes(32)), "FAILED_PRECONDITION"),
        (Tick(500), "INVALID_ARGUMENT"),
    ]:
        with pytest.raises(Rejected) as info:
            table.t.handle(cmd)
        assert info.value.code == code
        assert info.value.events == []
    assert len(table.t.history) == before


def test_player_view_is_private_and_complete(table: Table) -> None:
    """rule=DESIGN §1/§8: a player sees only their own hole cards; legal actions only on
    their turn; pre-turn actions and deadlines are exposed for the client."""
    table.deal(1_000, {0: "2c7d", 1: "3h8s", 2: "AsAh"}, "KdQs5c4hJs")
    v2 = table.t.view(2, 1_500)
    assert v2.hole_cards == ("As", "Ah")
    assert v2.legal is not None and v2.legal.call_amount == 20
    assert v2.deadline is not None and v2.deadline.at == 11_000
    assert v2.pre_actions == frozenset()
    v0 = table.t.view(0, 1_500)
    assert v0.hole_cards == ("2c", "7d") and v0.legal is None
    assert v0.pre_actions == {PreAction.FOLD, PreAction.CALL}
    assert "As" not in repr(v0)
    assert (v0.level, v0.small_blind, v0.big_blind, v0.clock_remaining_ms) == (1, 10, 20, 358_500)
    assert v0.stacks == (490, 480, 500) and v0.pot == 30
    table.act(2, "all_in", 2_000)
    table.act(0, "call", 3_000)
    table.act(1, "call", 4_000)  # showdown exposes everyone
    v1 = table.t.view(1, 5_000)
    assert v1.finished and dict(v1.shown)[2] == ("As", "Ah")
    assert v1.prizes_cents == (0, 0, 200)


def test_selection_cleared_when_the_hand_ends_before_the_turn(table: Table) -> None:
    """rule=seed 000 §5.b: a pre-turn action lives until the player's turn in that round;
    if the round/hand ends first it is cleared."""
    table.deal(1_000)
    _sel(table, 1, PreAction.CHECK, 1_100)  # BB
    table.act(2, "fold", 2_000)
    ev = table.act(0, "fold", 3_000)  # BB wins uncontested, never got a turn
    assert of(ev, PreActionUnselected) == [PreActionUnselected(1, "round_end", 3_000)]
    assert table.t.state.seats[1].preaction is None


def test_explicit_timeouts_walk_action_timer_then_bank(table: Table) -> None:
    """rule=seed 000 "Action Timer"/"Time Bank": Timeout inputs, one per expired timer."""
    _to_flop_with_button_call(table)
    ev = table.t.handle(Timeout(2, 16_000))
    assert of(ev, TimeBankStarted) == [TimeBankStarted(2, 16_000, 26_000)]
    with pytest.raises(Rejected):
        table.t.handle(Timeout(2, 25_999))
    ev = table.t.handle(Timeout(2, 26_000))
    assert of(ev, TimedOut) == [TimedOut(2, 26_000)]
    assert of(ev, ActionTaken)[0].move == "fold"
