"""Hypothesis invariants through the store (handlers + event store + projections) on SQLite:
the same operations give the same outcomes as the pure ledger, money is conserved, no
player account goes negative, and the projections equal a fold of the stored events."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from electric_eventlog import EventStore, create_engine
from electric_wallet import domain as d
from electric_wallet import store
from electric_wallet.handlers import Wallet
from electric_wallet.store.projections import rebuild_and_compare, rebuild_projections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select
from test_wallet_ledger_props import LedgerDriver
from wallet_ops import Op, ops, run_ops

NOW = datetime(2026, 1, 1, tzinfo=UTC)


class StoreDriver:
    def __init__(self, wallet: Wallet) -> None:
        self.wallet = wallet

    def open_player(self, player_id: str) -> None:
        self.wallet.open_player(player_id)

    def create(self, req: d.TransferRequest) -> bool:
        return self.wallet.create_transfer(req).replayed

    def post(self, transfer_id: str, amount: int | None) -> bool:
        return self.wallet.post_transfer(transfer_id, amount).replayed

    def void(self, transfer_id: str) -> bool:
        return self.wallet.void_transfer(transfer_id, "test").replayed


_TEMPLATE: dict[str, Path] = {}


def make_wallet(path: Path) -> Wallet:
    """A migrated, bootstrapped wallet on a new SQLite file (copied from a template made
    once, since running the migrations per example would dominate the test's time)."""
    if "db" not in _TEMPLATE:
        tmp = tempfile.mkdtemp()
        atexit.register(shutil.rmtree, tmp, True)
        tpl = Path(tmp) / "template.db"
        engine = create_engine(f"sqlite:///{tpl}")
        store.migrate(engine)
        Wallet(engine, EventStore(engine, producer="wallet"), clock=lambda: NOW).bootstrap()
        engine.dispose()  # the last connection to close checkpoints the WAL into the file
        _TEMPLATE["db"] = tpl
    shutil.copy(_TEMPLATE["db"], path)
    engine = create_engine(f"sqlite:///{path}")
    return Wallet(engine, EventStore(engine, producer="wallet"), clock=lambda: NOW)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(ops, max_size=40))
def test_store_matches_pure_ledger_and_events(seq: list[Op]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        wallet = make_wallet(Path(tmp) / "w.db")
        try:
            got = run_ops(StoreDriver(wallet), seq)
            model = LedgerDriver()
            want = run_ops(model, seq)
            assert got == want
            assert rebuild_and_compare(wallet.engine, wallet.events) == []
            with wallet.engine.connect() as conn:
                rows = list(conn.execute(select(store.accounts)))
                total = conn.execute(select(func.sum(store.accounts.c.posted))).scalar()
            assert total == 0
            for r in rows:
                a = store.account_from_row(r)
                assert a == model.ledger.accounts[a.account_id]
                if a.kind in d.PLAYER_KINDS:
                    assert a.available >= 0
            # Rebuilding the tables from events changes nothing.
            rebuild_projections(wallet.engine, wallet.events)
            assert rebuild_and_compare(wallet.engine, wallet.events) == []
        finally:
            wallet.engine.dispose()
