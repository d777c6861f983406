"""The wallet's PostgreSQL fast path (pipelined lock+read, one-statement projection write
queued with the event append, one-round-trip lock of a resolved transfer's accounts) gives
exactly what the generic SQLAlchemy path gives on SQLite, command for command."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from electric_eventlog import EventStore, create_engine
from electric_wallet import domain as d
from electric_wallet import store
from electric_wallet.handlers import Wallet
from electric_wallet.store.projections import rebuild_and_compare
from sqlalchemy import Engine

pytestmark = pytest.mark.integration


class _Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=7)
        return self.now


def _wallet(engine: Engine) -> Wallet:
    store.migrate(engine)
    w = Wallet(engine, EventStore(engine, producer="wallet"), clock=_Clock())
    w.bootstrap()
    return w


@pytest.fixture
def wallets(fresh_pg_url: str, tmp_path: Path) -> Iterator[tuple[Wallet, Wallet]]:
    pg = create_engine(fresh_pg_url)
    lite = create_engine(f"sqlite:///{tmp_path}/wallet.db")
    try:
        yield _wallet(pg), _wallet(lite)
    finally:
        pg.dispose()
        lite.dispose()


def cash(p: str) -> d.AccountSide:
    return d.AccountSide(d.player_account_id(p, d.AccountKind.PLAYER_CASH))


ESCROW = d.AccountSide("house:tournament_escrow")

SCRIPT: list[Callable[[Wallet], Any]] = [
    lambda w: w.deposit("dep-a", "alice", 10_000, "first"),
    lambda w: w.deposit("dep-b", "bob", 500),
    lambda w: w.adjust("bonus-a", "alice", d.AccountKind.PLAYER_BONUS, 700, "promo"),
    lambda w: w.open_player("carol"),
    lambda w: w.create_transfer(d.TransferRequest("p2p-1", cash("alice"), cash("bob"), 250)),
    # replay: same id, same spec
    lambda w: w.create_transfer(d.TransferRequest("p2p-1", cash("alice"), cash("bob"), 250)),
    lambda w: w.create_transfer(
        d.TransferRequest("buyin-1", d.PlayerFunds("alice"), ESCROW, 10_400, pending=True)
    ),
    lambda w: w.post_transfer("buyin-1", 10_200),
    lambda w: w.post_transfer("buyin-1", 10_200),  # replay
    lambda w: w.create_transfer(
        d.TransferRequest("buyin-2", d.PlayerFunds("bob"), ESCROW, 300, pending=True)
    ),
    lambda w: w.void_transfer("buyin-2", "unregistered"),
    lambda w: w.void_transfer("buyin-2", "unregistered"),  # replay
    lambda w: w.post_transfer("nope"),  # NotFound
    lambda w: w.create_transfer(  # insufficient funds
        d.TransferRequest("big", cash("bob"), cash("carol"), 10**9)
    ),
    lambda w: w.create_transfer(  # same id, other spec
        d.TransferRequest("p2p-1", cash("alice"), cash("bob"), 251)
    ),
    lambda w: w.create_transfer(
        d.TransferRequest(
            "prize-1",
            d.AccountSide("house:prize_reserve"),
            d.PlayerWinnings("alice", stake_transfer_id="buyin-1"),
            999,
        )
    ),
    lambda w: w.withdraw("wd-1", "bob", 100),
]


def _outcome(w: Wallet, step: Callable[[Wallet], Any]) -> str:
    try:
        return repr(step(w))
    except d.WalletError as exc:
        return f"{type(exc).__name__}: {exc}"


def test_postgres_fast_path_matches_the_generic_path(wallets: tuple[Wallet, Wallet]) -> None:
    pg, lite = wallets
    outcomes = [_outcome(pg, step) for step in SCRIPT]
    assert outcomes == [_outcome(lite, step) for step in SCRIPT]
    assert sum("replayed=True" in o for o in outcomes) == 3
    assert [o.split(":")[0] for o in outcomes if not o.startswith(("Result(", "("))] == [
        "NotFound",
        "InsufficientFunds",
        "TransferExists",
    ]
    for player in ("alice", "bob", "carol"):
        assert pg.balance(player) == lite.balance(player)
        pages = [
            [
                (e.account_id, e.transfer_id, e.entry_type, e.amount, e.posted_after)
                for e in w.statement(player_id=player, page_size=500)[0]
            ]
            for w in (pg, lite)
        ]
        assert pages[0] == pages[1]
        assert pages[0] or player == "carol"
    for tid in ("p2p-1", "buyin-1", "buyin-2", "prize-1", "wd-1"):
        assert pg.transfer(tid) == lite.transfer(tid)
    for account in ("house:tournament_escrow", "house:prize_reserve", "operator:cash_in"):
        assert pg.account(account) == lite.account(account)
    assert rebuild_and_compare(pg.engine, pg.events) == []
