"""Action timer / time bank pure rules (seed 000 "Action Timer", "Time Bank")."""

from __future__ import annotations

import pytest
from electric_domain.tournament.timers import (
    Phase,
    bank_activates,
    bank_after_action,
    start_bank,
    start_turn,
)


@pytest.mark.parametrize(
    ("rule", "bank", "voluntary", "activates"),
    [
        ("Time Bank: activates after voluntary investment", 10_000, True, True),
        ("Time Bank: blinds/antes only -> no bank", 10_000, False, False),
        ("Action Timer: zero bank left -> no bank", 0, True, False),
    ],
)
def test_bank_activation(rule: str, bank: int, voluntary: bool, activates: bool) -> None:
    assert bank_activates(bank, voluntary) is activates, rule


def test_bank_usage_is_deducted_and_carried() -> None:
    """rule=seed 000 "Time Bank": use 3 s of 10 s -> 7 s remain for the tournament."""
    t = start_turn(0, 1_000, 10_000)
    assert (t.phase, t.deadline) == (Phase.ACTION, 11_000)
    assert bank_after_action(t, 9_000, 10_000) == 10_000  # acting in the action timer is free
    b = start_bank(t, 11_000, 10_000)
    assert (b.phase, b.deadline) == (Phase.BANK, 21_000)
    assert bank_after_action(b, 14_000, 10_000) == 7_000
    assert bank_after_action(b, 30_000, 10_000) == 0
