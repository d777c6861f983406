"""The wallet's repository on both backends (``backend_engine``: SQLite, then PostgreSQL
with the ``integration`` marker): a scripted day of money movements, then the queries the
API and the metrics read (statement pages, system balances, player funds) against the
ledger loaded back, and the projections against a fold of the events."""

from __future__ import annotations

from electric_eventlog import EventStore
from electric_wallet import domain as d
from electric_wallet import store
from electric_wallet.handlers import Wallet
from electric_wallet.store.projections import rebuild_and_compare, rebuild_projections
from sqlalchemy import Engine

ESCROW = d.AccountSide("house:tournament_escrow")
RAKE = d.AccountSide("house:rake")


def _cash(player: str) -> d.AccountSide:
    return d.AccountSide(d.player_account_id(player, d.AccountKind.PLAYER_CASH))


def _day(wallet: Wallet) -> None:
    wallet.deposit("dep-a", "alice", 10_000)
    wallet.deposit("dep-b", "bob", 2_000)
    wallet.adjust("promo-a", "alice", d.AccountKind.PLAYER_BONUS, 1_000, "welcome")
    wallet.create_transfer(
        d.TransferRequest("buy-a", d.PlayerFunds("alice"), ESCROW, 10_500, pending=True)
    )
    wallet.post_transfer("buy-a", 10_400)  # 100 released back to alice
    wallet.create_transfer(
        d.TransferRequest("buy-b", d.PlayerFunds("bob"), ESCROW, 1_500, pending=True)
    )
    wallet.void_transfer("buy-b", "unregistered")
    wallet.create_transfer(d.TransferRequest("rake-a", ESCROW, RAKE, 400, code="rake"))
    wallet.create_transfer(
        d.TransferRequest("win-a", ESCROW, d.PlayerWinnings("alice", "buy-a"), 5_200)
    )
    wallet.withdraw("out-b", "bob", 700)


def test_repository_queries_and_projections_agree_on_both_backends(
    backend_engine: Engine,
) -> None:
    store.migrate(backend_engine)
    store.migrate(backend_engine)  # idempotent
    wallet = Wallet(backend_engine, EventStore(backend_engine, producer="wallet"))
    assert wallet.bootstrap() == len(d.SYSTEM_ACCOUNTS)
    _day(wallet)

    with backend_engine.connect() as conn:
        ids = [*d.SYSTEM_ACCOUNTS, *d.player_account_ids("alice"), *d.player_account_ids("bob")]
        ledger = store.load(conn, ids)
        system = store.system_balances(conn)
        funds = dict(store.player_funds(conn))
    ledger.check_invariants()
    assert {aid for aid, *_ in system} == set(d.SYSTEM_ACCOUNTS)
    for aid, kind, posted, reserved in system:
        account = ledger.accounts[aid]
        assert (kind, posted, reserved) == (account.kind, account.posted, account.reserved)
    for kind in d.PLAYER_KINDS:
        want = sum(a.posted for a in ledger.accounts.values() if a.kind is kind)
        assert funds.get(kind, 0) == want
    # The buy-in drew all 10,000 cash then 500 bonus; posting 10,400 kept cash first
    # (10,000 + 400 bonus, 100 bonus released). The winnings follow that split:
    # 5,200 * 400 // 10,400 = 200 to bonus, 5,000 to cash.
    assert wallet.balance("alice") == {
        "balance": 10_000 + 1_000 - 10_400 + 5_200,
        "cash": 5_000,
        "playable_bonus": 800,
        "pending_bonus": 0,
        "reserved": 0,
    }

    # Pages of two lines walk the whole statement, newest first, with no gap or repeat.
    whole, token = wallet.statement(player_id="alice", page_size=100)
    assert token == ""
    paged: list[d.Entry] = []
    token = ""
    while True:
        page, token = wallet.statement(player_id="alice", page_size=2, page_token=token)
        paged += page
        if not token:
            break
    assert paged == whole
    assert [e.entry_id for e in whole] == sorted((e.entry_id for e in whole), reverse=True)
    escrow, _ = wallet.statement(account_id="house:tournament_escrow", page_size=100)
    assert {e.transfer_id for e in escrow} == {"buy-a", "buy-b", "rake-a", "win-a"}

    events = EventStore(backend_engine, producer="wallet")
    assert rebuild_and_compare(backend_engine, events) == []
    fold = rebuild_projections(backend_engine, events)
    assert {aid: fold.ledger.accounts[aid] for aid in ids} == {
        aid: ledger.accounts[aid] for aid in ids
    }
    assert rebuild_and_compare(backend_engine, events) == []
