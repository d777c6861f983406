"""WalletService reads through a real gRPC channel (aio server on 127.0.0.1:0, platform
auth and context interceptors, SQLite store): balances, accounts, the statement, opening a
player's accounts — happy paths and each error status."""

from __future__ import annotations

import grpc
from electric.wallet.v1 import ledger_pb2, wallet_pb2

from tests.support.wallet_kit import (
    ALICE,
    AUDITOR,
    BOB,
    OPERATOR,
    SERVICE,
    Env,
    code_of,
    deposit,
)

# --------------------------------------------------------------------------- reads


async def test_get_balance(env: Env) -> None:
    await deposit(env, "alice", 1000)
    await env.stub.Adjust(
        wallet_pb2.AdjustRequest(
            transfer_id="bonus-1",
            player_id="alice",
            amount=300,
            reason="welcome",
            account_kind=ledger_pb2.ACCOUNT_KIND_PLAYER_BONUS,
        ),
        metadata=OPERATOR,
    )
    await env.stub.Adjust(
        wallet_pb2.AdjustRequest(
            transfer_id="bonus-2",
            player_id="alice",
            amount=200,
            reason="locked",
            account_kind=ledger_pb2.ACCOUNT_KIND_PLAYER_PENDING_BONUS,
        ),
        metadata=OPERATOR,
    )
    own = await env.stub.GetBalance(wallet_pb2.GetBalanceRequest(player_id="alice"), metadata=ALICE)
    b = own.balance
    assert (b.balance, b.cash, b.playable_bonus, b.pending_bonus, b.reserved) == (
        1300,
        1000,
        300,
        200,
        0,
    )
    for who in (SERVICE, OPERATOR, AUDITOR):
        r = await env.stub.GetBalance(wallet_pb2.GetBalanceRequest(player_id="alice"), metadata=who)
        assert r.balance == b
    # Empty player id: a player's own wallet; for other roles it is malformed.
    own_default = await env.stub.GetBalance(wallet_pb2.GetBalanceRequest(), metadata=ALICE)
    assert own_default.balance == b
    assert (
        await code_of(env.stub.GetBalance(wallet_pb2.GetBalanceRequest(), metadata=OPERATOR))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    req = wallet_pb2.GetBalanceRequest(player_id="alice")
    assert (
        await code_of(env.stub.GetBalance(req, metadata=BOB)) == grpc.StatusCode.PERMISSION_DENIED
    )
    assert await code_of(env.stub.GetBalance(req)) == grpc.StatusCode.UNAUTHENTICATED
    nobody = wallet_pb2.GetBalanceRequest(player_id="nobody")
    assert (
        await code_of(env.stub.GetBalance(nobody, metadata=OPERATOR)) == grpc.StatusCode.NOT_FOUND
    )
    bad = wallet_pb2.GetBalanceRequest(player_id="a:b")
    assert (
        await code_of(env.stub.GetBalance(bad, metadata=OPERATOR))
        == grpc.StatusCode.INVALID_ARGUMENT
    )


async def test_get_account(env: Env) -> None:
    await deposit(env, "alice", 700)
    r = await env.stub.GetAccount(
        wallet_pb2.GetAccountRequest(account_id="operator:cash_in"), metadata=AUDITOR
    )
    assert r.account.posted == -700 and r.account.kind == ledger_pb2.ACCOUNT_KIND_OPERATOR_CASH_IN
    r = await env.stub.GetAccount(
        wallet_pb2.GetAccountRequest(account_id="player:alice:cash"), metadata=SERVICE
    )
    assert (r.account.posted, r.account.available, r.account.player_id) == (700, 700, "alice")
    assert (
        await code_of(
            env.stub.GetAccount(
                wallet_pb2.GetAccountRequest(account_id="house:rake"), metadata=ALICE
            )
        )
        == grpc.StatusCode.PERMISSION_DENIED
    )
    assert (
        await code_of(
            env.stub.GetAccount(
                wallet_pb2.GetAccountRequest(account_id="player:bob:cash"), metadata=OPERATOR
            )
        )
        == grpc.StatusCode.NOT_FOUND
    )
    assert (
        await code_of(
            env.stub.GetAccount(
                wallet_pb2.GetAccountRequest(account_id="house:nope"), metadata=OPERATOR
            )
        )
        == grpc.StatusCode.INVALID_ARGUMENT
    )


async def test_list_transactions_pages_through_everything(env: Env) -> None:
    for i in range(7):
        await deposit(env, "alice", 100 + i, tid=f"d{i}")
    await deposit(env, "bob", 5)
    seen: list[int] = []
    token = ""
    pages = 0
    while True:
        req = wallet_pb2.ListTransactionsRequest(player_id="alice")
        req.page.page_size = 3
        req.page.page_token = token
        r = await env.stub.ListTransactions(req, metadata=ALICE)
        pages += 1
        seen += [e.amount for e in r.entries]
        assert all(e.account_id == "player:alice:cash" for e in r.entries)
        assert all(e.entry_type == wallet_pb2.ENTRY_TYPE_CREDIT for e in r.entries)
        token = r.page.next_page_token
        if not token:
            break
    assert pages == 3
    assert seen == [106, 105, 104, 103, 102, 101, 100]  # newest first, nothing twice
    # Operators and auditors read any player's and any account's statement.
    r = await env.stub.ListTransactions(
        wallet_pb2.ListTransactionsRequest(account_id="operator:cash_in"), metadata=AUDITOR
    )
    assert [e.amount for e in r.entries][:2] == [-5, -106]
    assert r.entries[0].posted_after == -(sum(range(100, 107)) + 5)
    r = await env.stub.ListTransactions(
        wallet_pb2.ListTransactionsRequest(player_id="bob"), metadata=OPERATOR
    )
    assert [e.amount for e in r.entries] == [5]


async def test_list_transactions_errors(env: Env) -> None:
    await deposit(env, "alice", 100)
    denied = grpc.StatusCode.PERMISSION_DENIED
    req = wallet_pb2.ListTransactionsRequest(player_id="alice")
    assert await code_of(env.stub.ListTransactions(req, metadata=BOB)) == denied
    acct = wallet_pb2.ListTransactionsRequest(account_id="player:alice:cash")
    assert await code_of(env.stub.ListTransactions(acct, metadata=ALICE)) == denied
    both = wallet_pb2.ListTransactionsRequest(player_id="alice", account_id="house:rake")
    assert (
        await code_of(env.stub.ListTransactions(both, metadata=OPERATOR))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    bad_token = wallet_pb2.ListTransactionsRequest(player_id="alice")
    bad_token.page.page_token = "not-a-token"
    assert (
        await code_of(env.stub.ListTransactions(bad_token, metadata=ALICE))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    big = wallet_pb2.ListTransactionsRequest(player_id="alice")
    big.page.page_size = 501  # the one page-size rule: served as the maximum
    assert len((await env.stub.ListTransactions(big, metadata=ALICE)).entries) == 1
    negative = wallet_pb2.ListTransactionsRequest(player_id="alice")
    negative.page.page_size = -1
    assert (
        await code_of(env.stub.ListTransactions(negative, metadata=ALICE))
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    ghost = wallet_pb2.ListTransactionsRequest(player_id="ghost")
    assert (
        await code_of(env.stub.ListTransactions(ghost, metadata=OPERATOR))
        == grpc.StatusCode.NOT_FOUND
    )


async def test_open_player_accounts(env: Env) -> None:
    req = wallet_pb2.OpenPlayerAccountsRequest(player_id="alice")
    r = await env.stub.OpenPlayerAccounts(req, metadata=ALICE)
    assert r.opened and r.balance.balance == 0
    r = await env.stub.OpenPlayerAccounts(req, metadata=SERVICE)
    assert not r.opened
    assert (
        await code_of(env.stub.OpenPlayerAccounts(req, metadata=BOB))
        == grpc.StatusCode.PERMISSION_DENIED
    )
    assert (
        await code_of(env.stub.OpenPlayerAccounts(req, metadata=AUDITOR))
        == grpc.StatusCode.PERMISSION_DENIED
    )
    assert (
        await code_of(
            env.stub.OpenPlayerAccounts(
                wallet_pb2.OpenPlayerAccountsRequest(player_id=""), metadata=OPERATOR
            )
        )
        == grpc.StatusCode.INVALID_ARGUMENT
    )
