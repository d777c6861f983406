"""Tournament aggregate scenarios for pre-turn actions and sitting out (seed 000 §5.b and
the documented sit-out policy), each naming the rule it covers (``rule=``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from electric_domain.holdem import (
    BlindPosted,
    Called,
    HoleCardsDealt,
)
from electric_domain.holdem.moves import Move
from electric_domain.tournament.errors import (
    Rejected,
)
from electric_domain.tournament.events import (
    Act,
    ActionTaken,
    Cause,
    ClearPreAction,
    Event,
    PreActionChanged,
    PreActionUnselected,
    SelectPreAction,
    SitIn,
    SitOut,
    UnselectReason,
)
from electric_domain.tournament.preaction import PreAction

from tests.support.tournament_table import Table, hand_events, of


@pytest.fixture
def table() -> Iterator[Table]:
    tb = Table()
    yield tb
    tb.check_replay()


# ----------------------------------------------------------------------- pre-turn actions


def _sel(table: Table, seat: int, action: PreAction, at: int) -> list[Event]:
    return table.t.handle(SelectPreAction(seat, action, at))


def test_check_fold_turns_into_fold_after_a_bet(table: Table) -> None:
    """rule=seed 000 §5.b.ii: check/fold becomes fold once a bet is made before the turn."""
    table.deal(1_000)
    _sel(table, 1, PreAction.CHECK_FOLD, 1_100)  # BB: nothing to call yet
    ev = table.act(2, "raise_to", 2_000, 60)
    assert of(ev, PreActionChanged) == [PreActionChanged(1, PreAction.FOLD, 40, 2_000, 1)]
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
    assert of(ev, PreActionUnselected) == [
        PreActionUnselected(1, UnselectReason.BET, 2_000, PreAction.CHECK, 1)
    ]
    table.act(0, "fold", 3_000)
    assert table.actor == 1  # the BB now decides by hand


def test_check_executes_without_a_bet(table: Table) -> None:
    """rule=seed 000 §5.b.iii: check executes at the turn when there is no bet."""
    table.deal(1_000)
    _sel(table, 1, PreAction.CHECK, 1_100)
    table.act(2, "call", 2_000)
    ev = table.act(0, "call", 3_000)
    assert of(ev, ActionTaken)[-1].cause is Cause.PRE_ACTION


def test_fold_is_always_offered_and_the_big_blind_can_fold(table: Table) -> None:
    """rule=seed 000 §5.b.i / issue 11: fold is always offered, the big blind too — as a
    pre-turn action with nothing to call and as a decision on the big blind's option."""
    table.deal(1_000)  # button 2, SB 0, BB 1
    assert PreAction.FOLD in table.t.pre_actions_available(1)
    table.act(2, "call", 2_000)
    table.act(0, "call", 3_000)
    assert table.actor == 1
    legal = table.t.legal_actions(1)
    assert legal is not None and legal.can_check and legal.can_fold
    ev = table.act(1, "fold", 4_000)  # folding the free option is accepted
    assert [(a.seat, a.move) for a in of(ev, ActionTaken)] == [(1, "fold")]


def test_fold_pre_action_folds_even_with_nothing_to_call(table: Table) -> None:
    """rule=seed 000 §5.b.i: "the player will automatically fold their hand once it becomes
    their action" — also when checking would be free."""
    table.deal(1_000)
    _sel(table, 1, PreAction.FOLD, 1_100)  # the big blind
    table.act(2, "call", 2_000)
    ev = table.act(0, "call", 3_000)
    assert [(a.seat, a.move, a.cause) for a in of(ev, ActionTaken)][-1] == (
        1,
        "fold",
        Cause.PRE_ACTION,
    )


def test_bet_pre_action_bets_the_minimum_without_a_bet(table: Table) -> None:
    """rule=seed 000 §5.b ("bet" pre-selected): bets the minimum (the big blind) at the turn
    when nobody bet before it."""
    table.deal(1_000)
    table.act(2, "call", 2_000)
    table.act(0, "call", 3_000)
    table.act(1, "check", 4_000)  # flop: SB (0) first, then BB (1), then button (2)
    _sel(table, 1, PreAction.BET, 4_100)
    ev = table.act(0, "check", 5_000)
    last = of(ev, ActionTaken)[-1]
    assert (last.seat, last.move, last.cause, last.amount) == (1, "bet", Cause.PRE_ACTION, 20)


def test_bet_pre_action_is_unselected_by_a_bet(table: Table) -> None:
    """rule=seed 000 §5.b (bet, decided like §5.b.iii check): a bet before the turn
    unselects it; the player decides by hand."""
    table.deal(1_000)
    table.act(2, "call", 2_000)
    table.act(0, "call", 3_000)
    table.act(1, "check", 4_000)
    _sel(table, 1, PreAction.BET, 4_100)
    ev = table.act(0, "bet", 5_000, 40)
    assert of(ev, PreActionUnselected) == [
        PreActionUnselected(1, UnselectReason.BET, 5_000, PreAction.BET, 1)
    ]
    assert table.actor == 1


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
        assert of(ev, PreActionUnselected) == [
            PreActionUnselected(0, UnselectReason.BET, 2_000, PreAction.CALL, 1)
        ], rule
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
    assert table.t.pre_actions_available(0) == {
        PreAction.FOLD,
        PreAction.CHECK,
        PreAction.CHECK_FOLD,
        PreAction.BET,
    }
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
    assert of(ev, PreActionUnselected) == [
        PreActionUnselected(0, UnselectReason.PLAYER, 1_200, PreAction.FOLD, 1)
    ]
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
    ev = table.act(0, "bet", 4_000, 40)  # flop bet by the SB; the BB is next
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


def test_selection_cleared_when_the_hand_ends_before_the_turn(table: Table) -> None:
    """rule=seed 000 §5.b: a pre-turn action lives until the player's turn in that round;
    if the round/hand ends first it is cleared."""
    table.deal(1_000)
    _sel(table, 1, PreAction.CHECK, 1_100)  # BB
    table.act(2, "fold", 2_000)
    ev = table.act(0, "fold", 3_000)  # BB wins uncontested, never got a turn
    assert of(ev, PreActionUnselected) == [
        PreActionUnselected(1, UnselectReason.ROUND_END, 3_000, PreAction.CHECK, 1)
    ]
    assert table.t.state.seats[1].preaction is None


def test_refusals_use_the_seed_names_and_no_seat_numbers(table: Table) -> None:
    """Issue 11 gap 5: messages never use internal names (enum values such as
    ``check_fold``) nor the domain's 0-based seat numbers."""
    table.deal(1_000)
    table.act(2, "raise_to", 2_000, 60)  # seat 1 (BB) now faces a bet: check not offered
    with pytest.raises(Rejected) as info:
        _sel(table, 1, PreAction.CHECK_FOLD, 2_100)
    text = str(info.value)
    assert "check/fold" in text and "check_fold" not in text and "all_in" not in text
    assert "offered: fold, call" in text
    with pytest.raises(Rejected) as info:
        table.t.handle(Act(2, Move.FOLD, 2_200))
    assert str(info.value).endswith("not your turn")
    assert "seat" not in str(info.value)
