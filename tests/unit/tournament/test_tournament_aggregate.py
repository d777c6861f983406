"""Tournament aggregate scenarios, each naming the seed 000 rule it covers (``rule=``).

Decks are stacked through the adapter's injectable ``deck_for_seed`` so outcomes are fixed;
every scenario ends by checking that folding the recorded events rebuilds the same state.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from electric_domain.deck import derive_deck
from electric_domain.holdem import (
    AntePosted,
    BlindPosted,
    BoardDealt,
    Move,
    Street,
    deal_positions,
)
from electric_domain.tournament.config import (
    BuyInTier,
    PayTable,
    PayTableEntry,
    TournamentConfig,
)
from electric_domain.tournament.errors import (
    InvalidCommand,
    NotAllowedNow,
    Rejected,
    RejectReason,
    StaleCommand,
)
from electric_domain.tournament.events import (
    Act,
    ActionTaken,
    Cause,
    ClearPreAction,
    ClockExpired,
    DealHand,
    ElectricModeStarted,
    HandStarted,
    LevelAdvanced,
    PlayerEliminated,
    SatOut,
    SelectPreAction,
    Tick,
    TimeBankStarted,
    TimedOut,
    Timeout,
    TimeoutKind,
    TournamentFinished,
    TurnStarted,
)
from electric_domain.tournament.preaction import PreAction
from electric_domain.tournament.timers import Phase

from tests.support.tournament_table import CFG, Table, hand_events, of


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
    """rule=seed 000 §1 "blinds increase every two minutes" + docs/design.md §5 ante schedule."""
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
    assert of(ev, ClockExpired) == [ClockExpired(360_000, hand_no=1)]  # during hand 1
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
    assert of(ev, ClockExpired) == [ClockExpired(360_000, hand_no=0)]  # between hands
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
    table.act(1, "bet", 6_000, 40)  # bet 40 on the flop
    assert table.actor == 2


def test_time_bank_starts_after_voluntary_investment_and_carries_over(table: Table) -> None:
    """rule=seed 000 "Time Bank": activates when the action timer expires and the player has
    voluntarily invested; 3 s used of 10 s leaves 7 s for the rest of the tournament."""
    _to_flop_with_button_call(table)
    ev = table.t.handle(Tick(16_000))
    assert of(ev, TimeBankStarted) == [TimeBankStarted(2, 16_000, 26_000, 1, 6)]
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
    """rule=docs/design.md §8: bad input gets a precise error and changes nothing."""
    table.deal(1_000)
    before = len(table.t.history)
    cases: list[tuple[Any, type[Rejected], RejectReason]] = [
        (Act(0, Move.CALL, 1_500), NotAllowedNow, RejectReason.NOT_YOUR_TURN),
        (Act(2, Move.RAISE_TO, 1_500, 21), InvalidCommand, RejectReason.AMOUNT_OUT_OF_RANGE),
        (Act(2, Move.RAISE_TO, 1_500, 501), InvalidCommand, RejectReason.AMOUNT_OUT_OF_RANGE),
        (Act(2, Move.CALL, 1_500, hand_no=2), NotAllowedNow, RejectReason.STALE_COMMAND),
        (
            Act(2, Move.CALL, 1_500, hand_no=1, action_seq=9),
            NotAllowedNow,
            RejectReason.STALE_COMMAND,
        ),
        (
            SelectPreAction(0, PreAction.FOLD, 1_500, hand_no=0),
            NotAllowedNow,
            RejectReason.STALE_COMMAND,
        ),
        (ClearPreAction(0, 1_500, hand_no=3), NotAllowedNow, RejectReason.STALE_COMMAND),
        (Act(2, Move.BET, 1_500, 60), NotAllowedNow, RejectReason.ILLEGAL_MOVE),  # a raise
        (Act(2, "dance", 1_500), InvalidCommand, RejectReason.UNKNOWN_MOVE),
        (Act(7, Move.CALL, 1_500), InvalidCommand, RejectReason.NO_SUCH_SEAT),
        (DealHand(1_500, bytes(32)), NotAllowedNow, RejectReason.HAND_IN_PROGRESS),
        (Tick(500), InvalidCommand, RejectReason.TIME_WENT_BACKWARDS),
    ]
    for cmd, kind, reason in cases:
        with pytest.raises(kind) as info:
            table.t.handle(cmd)
        assert info.value.reason is reason
        assert info.value.events == []
    assert len(table.t.history) == before


def test_a_command_answering_the_current_hand_and_action_runs(table: Table) -> None:
    """The hand and action a command answers are checked against the table's, and the
    refusal names both (the client redraws from it)."""
    table.deal(1_000)
    st = table.t.state
    with pytest.raises(StaleCommand) as info:
        table.t.handle(
            Act(2, Move.CALL, 1_500, hand_no=st.hand_no, action_seq=st.next_action_seq + 1)
        )
    assert (info.value.requested_hand, info.value.requested_seq) == (
        st.hand_no,
        st.next_action_seq + 1,
    )
    assert (info.value.current_hand, info.value.current_seq) == (st.hand_no, st.next_action_seq)
    assert "stale command: it answers hand 1 action" in str(info.value)
    events = table.t.handle(
        Act(2, Move.CALL, 1_500, hand_no=st.hand_no, action_seq=st.next_action_seq)
    )
    assert events


def test_player_view_is_private_and_complete(table: Table) -> None:
    """rule=docs/design.md §1/§8: a player sees only their own hole cards; legal actions only on
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


def test_explicit_timeouts_walk_action_timer_then_bank(table: Table) -> None:
    """rule=seed 000 "Action Timer"/"Time Bank": Timeout inputs, one per expired timer."""
    _to_flop_with_button_call(table)
    ev = table.t.handle(Timeout(2, 16_000))
    assert of(ev, TimeBankStarted) == [TimeBankStarted(2, 16_000, 26_000, 1, 6)]
    with pytest.raises(NotAllowedNow):
        table.t.handle(Timeout(2, 25_999))
    ev = table.t.handle(Timeout(2, 26_000))
    assert of(ev, TimedOut) == [TimedOut(2, 26_000, TimeoutKind.TIME_BANK, 1, 6)]
    taken = of(ev, ActionTaken)[0]
    assert taken.move is Move.FOLD and taken.action_seq == 6 and taken.street is Street.FLOP
