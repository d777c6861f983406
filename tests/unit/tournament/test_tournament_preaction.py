"""Pre-turn actions, every transition (seed 000 §5.b i–v)."""

from __future__ import annotations

import pytest
from electric_domain.tournament.preaction import (
    Auto,
    PreAction,
    Selection,
    available,
    check_or_fold,
    on_bet_change,
    resolve,
)

F, CF, C, CALL, AI, BET = (
    PreAction.FOLD,
    PreAction.CHECK_FOLD,
    PreAction.CHECK,
    PreAction.CALL,
    PreAction.ALL_IN,
    PreAction.BET,
)


@pytest.mark.parametrize(
    ("rule", "to_call", "stack", "offered"),
    [
        (
            "5.b/5.b.i: no bet -> fold (always offered), check/fold, check, bet",
            0,
            500,
            {F, CF, C, BET},
        ),
        ("5.b.iv: bet the stack covers -> fold, call", 40, 500, {F, CALL}),
        ("5.b.iv: bet equal to the stack -> call (not over the chips)", 500, 500, {F, CALL}),
        ("5.b.v: bet over the player's chips -> all-in offered", 501, 500, {F, AI}),
    ],
)
def test_available(rule: str, to_call: int, stack: int, offered: set[PreAction]) -> None:
    assert available(to_call, stack) == offered, rule


@pytest.mark.parametrize(
    ("rule", "sel", "new_to_call", "after"),
    [
        ("5.b.i fold stays fold after a raise", Selection(F, 20), 40, Selection(F, 40)),
        (
            "5.b.ii check/fold turns into fold once a bet is made",
            Selection(CF, 0),
            40,
            Selection(F, 40),
        ),
        ("5.b.ii check/fold unchanged without a bet", Selection(CF, 0), 0, Selection(CF, 0)),
        ("5.b.iii check becomes unselected after a bet", Selection(C, 0), 40, None),
        ("5.b.iii check stays without a bet", Selection(C, 0), 0, Selection(C, 0)),
        ("5.b bet becomes unselected after a bet (like check)", Selection(BET, 0), 40, None),
        ("5.b bet stays without a bet", Selection(BET, 0), 0, Selection(BET, 0)),
        ("5.b.i fold with nothing to call stays fold", Selection(F, 0), 40, Selection(F, 40)),
        ("5.b.iv call unselected when the bet increases", Selection(CALL, 40), 120, None),
        (
            "5.b.iv call stays when the bet is unchanged",
            Selection(CALL, 40),
            40,
            Selection(CALL, 40),
        ),
        (
            "5.b.v all-in stays selected after a re-raise",
            Selection(AI, 600),
            900,
            Selection(AI, 900),
        ),
    ],
)
def test_on_bet_change(
    rule: str, sel: Selection, new_to_call: int, after: Selection | None
) -> None:
    assert on_bet_change(sel, new_to_call) == after, rule


@pytest.mark.parametrize(
    ("rule", "sel", "to_call", "auto"),
    [
        ("5.b.i fold folds at the turn", Selection(F, 40), 40, Auto.FOLD),
        ("5.b.i fold folds even with nothing to call", Selection(F, 0), 0, Auto.FOLD),
        ("5.b bet bets with no bet before the turn", Selection(BET, 0), 0, Auto.BET),
        ("5.b.ii check/fold checks with no bet", Selection(CF, 0), 0, Auto.CHECK),
        ("5.b.ii check/fold folds with a bet", Selection(CF, 0), 20, Auto.FOLD),
        ("5.b.iii check checks", Selection(C, 0), 0, Auto.CHECK),
        ("5.b.iv call calls the current bet", Selection(CALL, 40), 40, Auto.CALL),
        ("5.b.v all-in calls with the whole stack", Selection(AI, 900), 900, Auto.CALL),
    ],
)
def test_resolve(rule: str, sel: Selection, to_call: int, auto: Auto) -> None:
    assert resolve(sel, to_call) is auto, rule


@pytest.mark.parametrize(("to_call", "auto"), [(0, Auto.CHECK), (1, Auto.FOLD)])
def test_check_or_fold(to_call: int, auto: Auto) -> None:
    """rule=seed 000 "Action Timer"/"Sitting Out": check if no bet, else fold."""
    assert check_or_fold(to_call) is auto
