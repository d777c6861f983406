"""Hypothesis invariants of the pure ledger."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

from electric_wallet import domain as d
from hypothesis import given, settings
from hypothesis import strategies as st
from wallet_ops import Op, ops, run_ops

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class LedgerDriver:
    """Runs ops on a pure ledger, checking after every step that the invariants hold, that
    a rejection changed nothing and that folding the events so far gives the same state."""

    def __init__(self) -> None:
        self.ledger = d.Ledger()
        self.events: list[d.Event] = []
        for aid in d.SYSTEM_ACCOUNTS:
            self.events += self.ledger.open_account(aid, NOW)

    def _do(self, fn, *args):  # type: ignore[no-untyped-def]
        before = copy.deepcopy(self.ledger)
        try:
            _, events = fn(*args, NOW)
        except d.WalletError:
            assert self.ledger == before, "a rejected command changed the ledger"
            raise
        self.events += events
        self.check()
        return not events

    def check(self) -> None:
        self.ledger.check_invariants()
        rebuilt = d.Ledger()
        rebuilt.apply_all(self.events)
        assert rebuilt == self.ledger

    def open_player(self, player_id: str) -> None:
        self.events += self.ledger.open_player(player_id, NOW)

    def create(self, req: d.TransferRequest) -> bool:
        return bool(self._do(self.ledger.create_transfer, req))

    def post(self, transfer_id: str, amount: int | None) -> bool:
        return bool(self._do(self.ledger.post_transfer, transfer_id, amount))

    def void(self, transfer_id: str) -> bool:
        return bool(self._do(self.ledger.void_transfer, transfer_id, "test"))


@settings(max_examples=300, deadline=None)
@given(st.lists(ops, max_size=60))
def test_ledger_invariants_hold_after_any_sequence(seq: list[Op]) -> None:
    drv = LedgerDriver()
    outcomes = run_ops(drv, seq)
    drv.check()
    # Every player account is non-negative including reservations; money is conserved.
    for a in drv.ledger.accounts.values():
        if a.kind in d.PLAYER_KINDS:
            assert a.available >= 0 and a.posted >= 0
    # Spending pending bonus is never allowed, whatever the balance.
    for kind, outcome in outcomes:
        if kind == "spend_pending":
            assert outcome in ("RuleViolation", "NotFound")


@settings(max_examples=150, deadline=None)
@given(st.lists(ops, max_size=40))
def test_retrying_every_transfer_is_a_no_op(seq: list[Op]) -> None:
    drv = LedgerDriver()
    run_ops(drv, seq)
    snapshot = copy.deepcopy(drv.ledger)
    for t in list(drv.ledger.transfers.values()):
        got, events = drv.ledger.create_transfer(t.request, NOW)
        assert events == [] and got is t
        if t.request.pending and t.state is d.TransferState.POSTED:
            assert drv.ledger.post_transfer(t.transfer_id, t.posted_amount, NOW)[1] == []
        if t.state is d.TransferState.VOIDED:
            assert drv.ledger.void_transfer(t.transfer_id, "again", NOW)[1] == []
    assert drv.ledger == snapshot
