"""Deterministic rules of the pure ledger: two-phase transfers, idempotency, funds order,
winnings split, account rules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from electric_wallet import domain as d

NOW = datetime(2026, 1, 1, tzinfo=UTC)
CASH, BONUS, PEND = (
    d.AccountKind.PLAYER_CASH,
    d.AccountKind.PLAYER_BONUS,
    d.AccountKind.PLAYER_PENDING_BONUS,
)
ESCROW = d.AccountSide("house:tournament_escrow")


def acct(kind: d.AccountKind, p: str = "al") -> d.AccountSide:
    return d.AccountSide(d.player_account_id(p, kind))


@pytest.fixture
def ledger() -> d.Ledger:
    lg = d.Ledger()
    for aid in d.SYSTEM_ACCOUNTS:
        lg.open_account(aid, NOW)
    lg.open_player("al", NOW)
    lg.create_transfer(
        d.TransferRequest("dep", d.AccountSide("operator:cash_in"), acct(CASH), 300), NOW
    )
    lg.create_transfer(
        d.TransferRequest("bon", d.AccountSide("house:promotions"), acct(BONUS), 200), NOW
    )
    lg.create_transfer(
        d.TransferRequest("pen", d.AccountSide("house:promotions"), acct(PEND), 100), NOW
    )
    return lg


def test_balance_breakdown(ledger: d.Ledger) -> None:
    assert d.balance_breakdown(ledger, "al") == {
        "balance": 500,
        "cash": 300,
        "playable_bonus": 200,
        "pending_bonus": 100,
        "reserved": 0,
    }
    assert ledger.accounts["operator:cash_in"].posted == -300
    ledger.check_invariants()


def test_wager_draws_cash_first_then_bonus(ledger: d.Ledger) -> None:
    t, _ = ledger.create_transfer(
        d.TransferRequest("w", d.PlayerFunds("al"), ESCROW, 450, pending=True), NOW
    )
    assert t.legs == (
        d.Leg("player:al:cash", "house:tournament_escrow", 300),
        d.Leg("player:al:bonus", "house:tournament_escrow", 150),
    )
    b = d.balance_breakdown(ledger, "al")
    assert (b["balance"], b["reserved"], b["pending_bonus"]) == (50, 450, 100)
    with pytest.raises(d.InsufficientFunds) as info:
        ledger.create_transfer(d.TransferRequest("w2", d.PlayerFunds("al"), ESCROW, 51), NOW)
    assert (info.value.available, info.value.requested) == (50, 51)


def test_partial_post_releases_the_rest_bonus_first(ledger: d.Ledger) -> None:
    ledger.create_transfer(
        d.TransferRequest("w", d.PlayerFunds("al"), ESCROW, 450, pending=True), NOW
    )
    t, (ev,) = ledger.post_transfer("w", 350, NOW)
    assert isinstance(ev, d.TransferPosted) and ev.was_pending
    assert ev.legs == (
        d.Leg("player:al:cash", "house:tournament_escrow", 300),
        d.Leg("player:al:bonus", "house:tournament_escrow", 50),
    )
    assert ev.released_legs == (d.Leg("player:al:bonus", "house:tournament_escrow", 100),)
    assert t.state is d.TransferState.POSTED and t.posted_amount == 350
    b = d.balance_breakdown(ledger, "al")
    assert (b["cash"], b["playable_bonus"], b["reserved"]) == (0, 150, 0)
    assert ledger.accounts["house:tournament_escrow"].posted == 350
    ledger.check_invariants()


def test_pending_resolves_once(ledger: d.Ledger) -> None:
    ledger.create_transfer(
        d.TransferRequest("a", d.PlayerFunds("al"), ESCROW, 100, pending=True), NOW
    )
    ledger.create_transfer(
        d.TransferRequest("b", d.PlayerFunds("al"), ESCROW, 100, pending=True), NOW
    )
    ledger.post_transfer("a", None, NOW)
    assert ledger.post_transfer("a", 100, NOW)[1] == []  # same post again: idempotent
    with pytest.raises(d.TransferStateError):
        ledger.post_transfer("a", 50, NOW)
    with pytest.raises(d.TransferStateError):
        ledger.void_transfer("a", "", NOW)  # void after post
    ledger.void_transfer("b", "", NOW)
    assert ledger.void_transfer("b", "", NOW)[1] == []  # void again: idempotent
    with pytest.raises(d.TransferStateError):
        ledger.post_transfer("b", None, NOW)  # post after void
    with pytest.raises(d.TransferStateError):
        ledger.create_transfer(
            d.TransferRequest("c", d.PlayerFunds("al"), ESCROW, 10, pending=True), NOW
        )
        ledger.post_transfer("c", 11, NOW)  # more than reserved
    with pytest.raises(d.NotFound):
        ledger.post_transfer("zzz", None, NOW)
    ledger.check_invariants()


def test_same_key_same_content_replays_different_content_rejected(ledger: d.Ledger) -> None:
    req = d.TransferRequest("k", d.PlayerFunds("al"), ESCROW, 100)
    t, events = ledger.create_transfer(req, NOW)
    assert len(events) == 1
    t2, events2 = ledger.create_transfer(req, NOW)
    assert t2 is t and events2 == []
    with pytest.raises(d.TransferExists, match="different content"):
        ledger.create_transfer(d.TransferRequest("k", d.PlayerFunds("al"), ESCROW, 101), NOW)
    # A replay returns the original even when funds have since run out.
    ledger.create_transfer(d.TransferRequest("drain", d.PlayerFunds("al"), ESCROW, 400), NOW)
    assert ledger.create_transfer(req, NOW) == (t, [])


def test_pending_bonus_cannot_be_spent_or_withdrawn(ledger: d.Ledger) -> None:
    with pytest.raises(d.RuleViolation):
        ledger.create_transfer(d.TransferRequest("x", acct(PEND), ESCROW, 10), NOW)
    with pytest.raises(d.RuleViolation):
        ledger.create_transfer(
            d.TransferRequest("y", acct(BONUS), d.AccountSide("operator:cash_out"), 10), NOW
        )
    with pytest.raises(d.RuleViolation):  # pending bonus of another player
        ledger.open_player("bo", NOW)
        ledger.create_transfer(d.TransferRequest("z", acct(PEND), acct(CASH, "bo"), 10), NOW)
    # Allowed: release to own playable bonus, forfeit to promotions.
    ledger.create_transfer(d.TransferRequest("rel", acct(PEND), acct(BONUS), 60), NOW)
    ledger.create_transfer(
        d.TransferRequest("forf", acct(PEND), d.AccountSide("house:promotions"), 40), NOW
    )
    assert d.balance_breakdown(ledger, "al")["pending_bonus"] == 0
    ledger.check_invariants()


def test_winnings_split_like_the_stake(ledger: d.Ledger) -> None:
    ledger.create_transfer(
        d.TransferRequest("st", d.PlayerFunds("al"), d.AccountSide("house:casino_bankroll"), 400),
        NOW,
    )
    t, _ = ledger.create_transfer(
        d.TransferRequest(
            "win", d.AccountSide("house:casino_bankroll"), d.PlayerWinnings("al", "st"), 801
        ),
        NOW,
    )
    # stake = 300 cash + 100 bonus: bonus share floor(801 * 100 / 400) = 200, cash the rest.
    assert set(t.legs) == {
        d.Leg("house:casino_bankroll", "player:al:cash", 601),
        d.Leg("house:casino_bankroll", "player:al:bonus", 200),
    }
    t2, _ = ledger.create_transfer(
        d.TransferRequest(
            "win2", d.AccountSide("house:casino_bankroll"), d.PlayerWinnings("al"), 5
        ),
        NOW,
    )
    assert t2.legs == (d.Leg("house:casino_bankroll", "player:al:cash", 5),)
    assert ledger.accounts["house:casino_bankroll"].posted == 400 - 806  # may go negative
    with pytest.raises(d.NotFound):
        ledger.create_transfer(
            d.TransferRequest(
                "w3", d.AccountSide("house:casino_bankroll"), d.PlayerWinnings("al", "nope"), 5
            ),
            NOW,
        )
    ledger.check_invariants()


def test_non_negative_house_accounts(ledger: d.Ledger) -> None:
    for aid in ("house:rake", "house:tournament_escrow"):
        with pytest.raises(d.InsufficientFunds):
            ledger.create_transfer(
                d.TransferRequest(f"t-{aid}", d.AccountSide(aid), acct(CASH), 1), NOW
            )


@pytest.mark.parametrize(
    "req",
    [
        d.TransferRequest("", d.PlayerFunds("al"), ESCROW, 1),
        d.TransferRequest("x y", d.PlayerFunds("al"), ESCROW, 1),
        d.TransferRequest("x", d.PlayerFunds("al"), ESCROW, 0),
        d.TransferRequest("x", d.PlayerFunds("al"), ESCROW, d.MAX_AMOUNT + 1),
        d.TransferRequest("x", d.PlayerFunds("a:l"), ESCROW, 1),
        d.TransferRequest("x", d.AccountSide("house:nope"), ESCROW, 1),
        d.TransferRequest("x", ESCROW, ESCROW, 1),
        d.TransferRequest("x", d.PlayerFunds("al"), d.PlayerWinnings("al"), 1),
        d.TransferRequest("x", d.PlayerFunds("al"), ESCROW, 1, code="UPPER"),
        d.TransferRequest("x", d.PlayerFunds("al"), ESCROW, 1, memo="m" * 513),
        d.TransferRequest("x", ESCROW, d.PlayerWinnings("al", "st"), 1, pending=True),
    ],
)
def test_invalid_requests(ledger: d.Ledger, req: d.TransferRequest) -> None:
    with pytest.raises(d.InvalidArgument):
        ledger.create_transfer(req, NOW)


def test_account_naming_scheme() -> None:
    assert d.player_account_ids("p-1") == (
        "player:p-1:cash",
        "player:p-1:bonus",
        "player:p-1:pending_bonus",
    )
    assert d.parse_account_id("player:p-1:bonus") == (BONUS, "p-1")
    assert d.parse_account_id("house:rake") == (d.AccountKind.HOUSE_RAKE, "")
    assert d.parse_account_id("player:p:savings") is None
    assert d.parse_account_id("player::cash") is None
