"""Payout's pure rules (electric_domain.payout): the table's published prizes are paid as
they are, and the audit re-check against the pay table holds any disagreement."""

from __future__ import annotations

import pytest
from electric_domain.payout import (
    Held,
    PlaceResult,
    PrizeCheck,
    Settled,
    Terms,
    check_prizes,
    prize_transfer_id,
    published_awards,
    settle,
)
from electric_domain.tournament import default_config

CFG = default_config()
TERMS = Terms(50_000, 100, "test-ties-v1", 3, (7000, 2000, 1000))


def _places(prizes: dict[int, int | None], tied: bool = False) -> list[PlaceResult]:
    k = 2 if tied else 1
    return [
        PlaceResult(1, 1, "ava", "e1", 1, 0, prizes.get(1)),
        PlaceResult(2, 2, "bo", "e2", k, 4, prizes.get(2)),
        PlaceResult(2 if tied else 3, 3, "cy", "e3", k, 4, prizes.get(3)),
    ]


def test_published_prizes_that_check_out_are_awarded_as_published() -> None:
    outcome = settle(CFG, TERMS, _places({1: 35_000, 2: 10_000, 3: 5_000}), {})
    assert isinstance(outcome, Settled)
    assert [(a.place, a.player_id, a.amount_cents, a.tied_count) for a in outcome.awards] == [
        (1, "ava", 35_000, 1),
        (2, "bo", 10_000, 1),
        (3, "cy", 5_000, 1),
    ]


def test_tied_players_share_and_the_odd_cent_goes_left_of_the_button() -> None:
    terms = Terms(50_013, 100, "test-ties-v1", 3, (7000, 2000, 1000))
    # Button at seat 2 in hand 4: seat 3 is first left of it and gets the odd cent.
    places = _places({1: 35_010, 2: 7_501, 3: 7_502}, tied=True)
    outcome = settle(CFG, terms, places, {4: 2})
    assert isinstance(outcome, Settled)
    assert {(a.player_id, a.place, a.tied_count) for a in outcome.awards} == {
        ("ava", 1, 1),
        ("bo", 2, 2),
        ("cy", 2, 2),
    }
    # The same amounts with the button elsewhere disagree with the rule: held.
    assert isinstance(settle(CFG, terms, places, {4: 3}), Held)


def test_a_wrong_seat_prize_holds_the_tournament() -> None:
    outcome = settle(CFG, TERMS, _places({1: 10_000, 2: 35_000, 3: 5_000}), {})
    assert isinstance(outcome, Held)
    seats = {
        (d.seat, d.published_cents, d.expected_cents)
        for d in outcome.discrepancies
        if d.check is PrizeCheck.SEAT_PRIZE
    }
    assert seats == {(1, 10_000, 35_000), (2, 35_000, 10_000)}


@pytest.mark.parametrize(
    ("prizes", "kwargs", "check"),
    [
        ({1: 35_000, 2: 10_000}, {}, PrizeCheck.MISSING_PRIZE),
        ({1: 35_001, 2: 10_000, 3: 5_000}, {}, PrizeCheck.TOTAL),
        ({1: 35_000, 2: 10_000, 3: 5_000}, {"result_pool_cents": 40_000}, PrizeCheck.PRIZE_POOL),
        ({1: 35_000, 2: 10_000, 3: 5_000}, {"result_multiplier": 10}, PrizeCheck.MULTIPLIER),
    ],
)
def test_each_check_can_fail(
    prizes: dict[int, int | None], kwargs: dict[str, int], check: PrizeCheck
) -> None:
    found = check_prizes(CFG, TERMS, _places(prizes), {}, **kwargs)
    assert check in {d.check for d in found}


def test_an_unknown_pay_table_is_a_check_failure() -> None:
    terms = Terms(50_000, 7, "unknown-v9", 3, ())
    found = check_prizes(CFG, terms, _places({1: 50_000, 2: 0, 3: 0}), {})
    assert [d.check for d in found] == [PrizeCheck.PAY_TABLE]


def test_the_configured_pay_table_is_used_when_its_version_matches() -> None:
    entry = CFG.pay_table.entry(100)
    terms = Terms(10_000, 100, CFG.version, 3, (1, 1, 1))  # published shares are ignored
    total = sum(entry.shares)
    want = [10_000 * s // total for s in entry.shares] + [0] * (3 - len(entry.shares))
    want[0] += 10_000 - sum(want)
    prizes = {seat: want[seat - 1] for seat in (1, 2, 3)}
    assert check_prizes(CFG, terms, _places(prizes), {}) == []


def test_zero_prizes_are_not_awarded_and_transfer_ids_fit_the_wallet() -> None:
    awards = published_awards(_places({1: 50_000, 2: 0, 3: 0}))
    assert [a.player_id for a in awards] == ["ava"]
    assert prize_transfer_id("t1", "bo", 2) == "prize-t1-2-bo"
    long_id = prize_transfer_id("t" * 40, "p" * 200, 1)
    assert len(long_id) <= 128 and long_id.startswith("prize-" + "t" * 40 + "-1-")
