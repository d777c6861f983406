"""Every WalletService RPC through a real gRPC channel (aio server on 127.0.0.1:0, platform
auth and context interceptors, SQLite store): happy paths and each error status."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from electric.common.v1 import errors_pb2
from electric.wallet.v1 import ledger_pb2, wallet_pb2, wallet_pb2_grpc
from electric_eventlog import ConcurrencyError
from electric_platform.auth import AuthInterceptor, issue_token
from electric_platform.errors import error_detail
from electric_platform.server import ContextInterceptor
from electric_wallet.api import WalletApi
from electric_wallet.client import WalletClient, insufficient_funds
from electric_wallet.handlers import Wallet
from electric_wallet.projections import rebuild_and_compare
from electric_wallet.service import open_wallet

SECRET = "wallet-test-secret-0123456789abcdef0123"
OK = grpc.StatusCode.OK


def md(role: str, subject: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {issue_token(subject, role, SECRET)}"),)


OPERATOR = md("operator", "op-1")
SERVICE = md("service", "registration")
AUDITOR = md("auditor", "aud-1")
ALICE = md("player", "alice")
BOB = md("player", "bob")


@dataclass
class Env:
    wallet: Wallet
    stub: wallet_pb2_grpc.WalletServiceStub
    target: str


@pytest.fixture
async def env(tmp_path: Any) -> AsyncIterator[Env]:
    wallet = open_wallet(f"sqlite:///{tmp_path}/wallet.db")
    server = grpc.aio.server(interceptors=[ContextInterceptor("wallet"), AuthInterceptor(SECRET)])
    wallet_pb2_grpc.add_WalletServiceServicer_to_server(WalletApi(wallet), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield Env(wallet, wallet_pb2_grpc.WalletServiceStub(channel), f"127.0.0.1:{port}")
    finally:
        await channel.close()
        await server.stop(None)
        wallet.engine.dispose()


async def code_of(call: Awaitable[Any]) -> grpc.StatusCode:
    try:
        await call
    except grpc.aio.AioRpcError as err:
        return err.code()
    return OK


async def error_of(call: Awaitable[Any]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    return info.value


async def deposit(env: Env, player: str, amount: int, tid: str = "") -> None:
    await env.stub.Deposit(
        wallet_pb2.DepositRequest(
            transfer_id=tid or f"dep-{player}-{amount}", player_id=player, amount=amount
        ),
        metadata=OPERATOR,
    )


def spec(tid: str, amount: int, **kw: Any) -> wallet_pb2.CreateTransferRequest:
    return wallet_pb2.CreateTransferRequest(
        spec=ledger_pb2.TransferSpec(transfer_id=tid, amount=amount, **kw)
    )


async def balance(env: Env, player: str) -> wallet_pb2.Balance:
    return (
        await env.stub.GetBalance(wallet_pb2.GetBalanceRequest(player_id=player), metadata=OPERATOR)
    ).balance


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
    big.page.page_size = 501
    assert (
        await code_of(env.stub.ListTransactions(big, metadata=ALICE))
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


# --------------------------------------------------------------------------- transfers


async def test_create_transfer_pending_immediate_and_retries(env: Env) -> None:
    await deposit(env, "alice", 1000)
    req = spec(
        "buyin-1",
        600,
        debit_player_id="alice",
        credit_account_id="house:tournament_escrow",
        pending=True,
        code="buy_in",
    )
    r = await env.stub.CreateTransfer(req, metadata=SERVICE)
    assert r.transfer.state == ledger_pb2.TRANSFER_STATE_PENDING and not r.replayed
    assert (await balance(env, "alice")).balance == 400
    assert (await balance(env, "alice")).reserved == 600
    again = await env.stub.CreateTransfer(req, metadata=SERVICE)
    assert again.replayed and again.transfer == r.transfer
    assert (await balance(env, "alice")).balance == 400
    # Same key, different content: ALREADY_EXISTS, nothing changes.
    other = spec(
        "buyin-1",
        601,
        debit_player_id="alice",
        credit_account_id="house:tournament_escrow",
        pending=True,
        code="buy_in",
    )
    err = await error_of(env.stub.CreateTransfer(other, metadata=SERVICE))
    assert err.code() == grpc.StatusCode.ALREADY_EXISTS and "different content" in (
        err.details() or ""
    )
    info = errors_pb2.ErrorInfo()
    assert error_detail(err, info) and info.reason == errors_pb2.ERROR_REASON_DUPLICATE_REQUEST
    # Immediate transfer by an operator.
    r = await env.stub.CreateTransfer(
        spec(
            "move-1",
            50,
            debit_account_id="player:alice:cash",
            credit_account_id="house:casino_bankroll",
            code="wager",
        ),
        metadata=OPERATOR,
    )
    assert r.transfer.state == ledger_pb2.TRANSFER_STATE_POSTED
    assert (await balance(env, "alice")).balance == 350


async def test_create_transfer_errors_change_nothing(env: Env) -> None:
    await deposit(env, "alice", 100)
    await env.stub.Adjust(
        wallet_pb2.AdjustRequest(
            transfer_id="pb",
            player_id="alice",
            amount=500,
            reason="promo",
            account_kind=ledger_pb2.ACCOUNT_KIND_PLAYER_PENDING_BONUS,
        ),
        metadata=OPERATOR,
    )
    before = await balance(env, "alice")
    # Insufficient funds, with the detail.
    err = await error_of(
        env.stub.CreateTransfer(
            spec(
                "big",
                101,
                debit_player_id="alice",
                credit_account_id="house:tournament_escrow",
                pending=True,
            ),
            metadata=SERVICE,
        )
    )
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    detail = insufficient_funds(err)
    assert detail is not None
    assert (detail.account_id, detail.available.cents, detail.required.cents) == (
        "player:alice",
        100,
        101,
    )
    # Pending bonus cannot be spent.
    err = await error_of(
        env.stub.CreateTransfer(
            spec(
                "pb-spend",
                10,
                debit_account_id="player:alice:pending_bonus",
                credit_account_id="house:casino_bankroll",
            ),
            metadata=SERVICE,
        )
    )
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert insufficient_funds(err) is None
    # Unknown account.
    assert (
        await code_of(
            env.stub.CreateTransfer(
                spec("ghost", 10, debit_player_id="ghost", credit_account_id="house:rake"),
                metadata=SERVICE,
            )
        )
        == grpc.StatusCode.NOT_FOUND
    )
    # Bad input.
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    for bad in (
        wallet_pb2.CreateTransferRequest(),
        spec("neg", -5, debit_player_id="alice", credit_account_id="house:rake"),
        spec("zero", 0, debit_player_id="alice", credit_account_id="house:rake"),
        spec("", 5, debit_player_id="alice", credit_account_id="house:rake"),
        spec("x", 5, credit_account_id="house:rake"),
        spec("x", 5, debit_player_id="alice", credit_account_id="house:nope"),
        spec("x", 5, debit_account_id="player:alice:cash", credit_account_id="player:alice:cash"),
        spec("x", 5, debit_player_id="alice", credit_account_id="house:rake", code="Bad Code"),
    ):
        assert await code_of(env.stub.CreateTransfer(bad, metadata=SERVICE)) == invalid, bad
    # Wrong roles.
    ok_spec = spec("fine", 5, debit_player_id="alice", credit_account_id="house:rake")
    for who in (ALICE, AUDITOR):
        assert (
            await code_of(env.stub.CreateTransfer(ok_spec, metadata=who))
            == grpc.StatusCode.PERMISSION_DENIED
        )
    assert await balance(env, "alice") == before
    assert rebuild_and_compare(env.wallet.engine, env.wallet.events) == []


async def test_post_transfer(env: Env) -> None:
    await deposit(env, "alice", 1000)
    await env.stub.CreateTransfer(
        spec(
            "b1",
            500,
            debit_player_id="alice",
            credit_account_id="house:tournament_escrow",
            pending=True,
        ),
        metadata=SERVICE,
    )
    post = wallet_pb2.PostTransferRequest(transfer_id="b1", amount=300)
    assert (
        await code_of(
            env.stub.PostTransfer(
                wallet_pb2.PostTransferRequest(transfer_id="b1", amount=501), metadata=SERVICE
            )
        )
        == grpc.StatusCode.FAILED_PRECONDITION
    )
    r = await env.stub.PostTransfer(post, metadata=SERVICE)
    assert r.transfer.state == ledger_pb2.TRANSFER_STATE_POSTED
    assert r.transfer.posted_amount == 300 and not r.replayed
    b = await balance(env, "alice")
    assert (b.cash, b.reserved) == (700, 0)  # the other 200 went back
    again = await env.stub.PostTransfer(post, metadata=OPERATOR)
    assert again.replayed and again.transfer.posted_amount == 300
    assert (
        await code_of(
            env.stub.PostTransfer(
                wallet_pb2.PostTransferRequest(transfer_id="b1", amount=200), metadata=SERVICE
            )
        )
        == grpc.StatusCode.FAILED_PRECONDITION
    )
    # Post after void is rejected.
    await env.stub.CreateTransfer(
        spec(
            "b2",
            100,
            debit_player_id="alice",
            credit_account_id="house:tournament_escrow",
            pending=True,
        ),
        metadata=SERVICE,
    )
    await env.stub.VoidTransfer(wallet_pb2.VoidTransferRequest(transfer_id="b2"), metadata=SERVICE)
    err = await error_of(
        env.stub.PostTransfer(wallet_pb2.PostTransferRequest(transfer_id="b2"), metadata=SERVICE)
    )
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION and "voided" in (err.details() or "")
    # Single-phase transfers cannot be posted.
    await env.stub.CreateTransfer(
        spec("imm", 1, debit_player_id="alice", credit_account_id="house:rake"), metadata=SERVICE
    )
    assert (
        await code_of(
            env.stub.PostTransfer(
                wallet_pb2.PostTransferRequest(transfer_id="imm"), metadata=SERVICE
            )
        )
        == grpc.StatusCode.FAILED_PRECONDITION
    )
    assert (
        await code_of(
            env.stub.PostTransfer(
                wallet_pb2.PostTransferRequest(transfer_id="nope"), metadata=SERVICE
            )
        )
        == grpc.StatusCode.NOT_FOUND
    )
    assert (
        await code_of(
            env.stub.PostTransfer(
                wallet_pb2.PostTransferRequest(transfer_id="b1", amount=-1), metadata=SERVICE
            )
        )
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    assert (
        await code_of(
            env.stub.PostTransfer(wallet_pb2.PostTransferRequest(transfer_id=""), metadata=SERVICE)
        )
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    for who in (ALICE, AUDITOR):
        assert (
            await code_of(env.stub.PostTransfer(post, metadata=who))
            == grpc.StatusCode.PERMISSION_DENIED
        )


async def test_void_transfer(env: Env) -> None:
    await deposit(env, "alice", 1000)
    await env.stub.CreateTransfer(
        spec(
            "b1",
            400,
            debit_player_id="alice",
            credit_account_id="house:tournament_escrow",
            pending=True,
        ),
        metadata=SERVICE,
    )
    void = wallet_pb2.VoidTransferRequest(transfer_id="b1", reason="unregistered")
    r = await env.stub.VoidTransfer(void, metadata=SERVICE)
    assert r.transfer.state == ledger_pb2.TRANSFER_STATE_VOIDED and not r.replayed
    assert (await balance(env, "alice")).balance == 1000
    assert (await env.stub.VoidTransfer(void, metadata=SERVICE)).replayed
    await env.stub.CreateTransfer(
        spec(
            "b2",
            400,
            debit_player_id="alice",
            credit_account_id="house:tournament_escrow",
            pending=True,
        ),
        metadata=SERVICE,
    )
    await env.stub.PostTransfer(wallet_pb2.PostTransferRequest(transfer_id="b2"), metadata=SERVICE)
    err = await error_of(
        env.stub.VoidTransfer(wallet_pb2.VoidTransferRequest(transfer_id="b2"), metadata=SERVICE)
    )
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    info = errors_pb2.ErrorInfo()
    assert error_detail(err, info) and info.reason == errors_pb2.ERROR_REASON_WRONG_STATE
    assert (
        await code_of(
            env.stub.VoidTransfer(
                wallet_pb2.VoidTransferRequest(transfer_id="zz"), metadata=SERVICE
            )
        )
        == grpc.StatusCode.NOT_FOUND
    )
    assert (
        await code_of(
            env.stub.VoidTransfer(
                wallet_pb2.VoidTransferRequest(transfer_id="b1", reason="x" * 600), metadata=SERVICE
            )
        )
        == grpc.StatusCode.INVALID_ARGUMENT
    )
    assert (
        await code_of(env.stub.VoidTransfer(void, metadata=ALICE))
        == grpc.StatusCode.PERMISSION_DENIED
    )


async def test_get_transfer(env: Env) -> None:
    await deposit(env, "alice", 10, tid="dep-x")
    r = await env.stub.GetTransfer(
        wallet_pb2.GetTransferRequest(transfer_id="dep-x"), metadata=AUDITOR
    )
    assert r.transfer.spec.amount == 10 and r.transfer.spec.code == "deposit"
    assert r.transfer.HasField("created_at") and r.transfer.HasField("resolved_at")
    assert (
        await code_of(
            env.stub.GetTransfer(
                wallet_pb2.GetTransferRequest(transfer_id="nope"), metadata=SERVICE
            )
        )
        == grpc.StatusCode.NOT_FOUND
    )
    assert (
        await code_of(
            env.stub.GetTransfer(wallet_pb2.GetTransferRequest(transfer_id="dep-x"), metadata=ALICE)
        )
        == grpc.StatusCode.PERMISSION_DENIED
    )
    assert (
        await code_of(env.stub.GetTransfer(wallet_pb2.GetTransferRequest(), metadata=SERVICE))
        == grpc.StatusCode.INVALID_ARGUMENT
    )


# --------------------------------------------------------------------------- operator


async def test_deposit(env: Env) -> None:
    req = wallet_pb2.DepositRequest(transfer_id="d1", player_id="carol", amount=2500, memo="psp-9")
    r = await env.stub.Deposit(req, metadata=OPERATOR)
    assert r.balance.cash == 2500 and not r.replayed
    r = await env.stub.Deposit(req, metadata=OPERATOR)
    assert r.replayed and r.balance.cash == 2500
    changed = wallet_pb2.DepositRequest(transfer_id="d1", player_id="carol", amount=2501)
    assert (
        await code_of(env.stub.Deposit(changed, metadata=OPERATOR))
        == grpc.StatusCode.ALREADY_EXISTS
    )
    for who in (SERVICE, AUDITOR, md("player", "carol")):
        assert (
            await code_of(env.stub.Deposit(req, metadata=who)) == grpc.StatusCode.PERMISSION_DENIED
        )
    for bad in (
        wallet_pb2.DepositRequest(transfer_id="d2", player_id="carol", amount=0),
        wallet_pb2.DepositRequest(transfer_id="d2", player_id="", amount=5),
        wallet_pb2.DepositRequest(transfer_id="", player_id="carol", amount=5),
        wallet_pb2.DepositRequest(transfer_id="d2", player_id="carol", amount=10**16),
    ):
        assert (
            await code_of(env.stub.Deposit(bad, metadata=OPERATOR))
            == grpc.StatusCode.INVALID_ARGUMENT
        )
    assert (await balance(env, "carol")).cash == 2500


async def test_withdraw(env: Env) -> None:
    await deposit(env, "alice", 1000)
    await env.stub.Adjust(
        wallet_pb2.AdjustRequest(
            transfer_id="bn",
            player_id="alice",
            amount=500,
            reason="promo",
            account_kind=ledger_pb2.ACCOUNT_KIND_PLAYER_BONUS,
        ),
        metadata=OPERATOR,
    )
    req = wallet_pb2.WithdrawRequest(transfer_id="w1", player_id="alice", amount=400)
    r = await env.stub.Withdraw(req, metadata=OPERATOR)
    assert r.balance.cash == 600 and r.balance.playable_bonus == 500
    assert (await env.stub.Withdraw(req, metadata=OPERATOR)).replayed
    # Bonus cannot be withdrawn: 601 > cash although balance is 1100.
    err = await error_of(
        env.stub.Withdraw(
            wallet_pb2.WithdrawRequest(transfer_id="w2", player_id="alice", amount=601),
            metadata=OPERATOR,
        )
    )
    assert err.code() == grpc.StatusCode.FAILED_PRECONDITION
    detail = insufficient_funds(err)
    assert detail is not None and detail.account_id == "player:alice:cash"
    assert detail.available.cents == 600
    assert (
        await code_of(
            env.stub.Withdraw(
                wallet_pb2.WithdrawRequest(transfer_id="w3", player_id="ghost", amount=1),
                metadata=OPERATOR,
            )
        )
        == grpc.StatusCode.NOT_FOUND
    )
    assert (
        await code_of(env.stub.Withdraw(req, metadata=SERVICE)) == grpc.StatusCode.PERMISSION_DENIED
    )
    assert (
        await code_of(
            env.stub.Withdraw(
                wallet_pb2.WithdrawRequest(transfer_id="w4", player_id="alice", amount=-3),
                metadata=OPERATOR,
            )
        )
        == grpc.StatusCode.INVALID_ARGUMENT
    )


async def test_adjust(env: Env) -> None:
    await deposit(env, "alice", 100)
    up = wallet_pb2.AdjustRequest(
        transfer_id="a1",
        player_id="alice",
        amount=50,
        reason="goodwill",
        account_kind=ledger_pb2.ACCOUNT_KIND_PLAYER_CASH,
    )
    r = await env.stub.Adjust(up, metadata=OPERATOR)
    assert r.balance.cash == 150
    down = wallet_pb2.AdjustRequest(
        transfer_id="a2",
        player_id="alice",
        amount=-120,
        reason="chargeback",
        account_kind=ledger_pb2.ACCOUNT_KIND_PLAYER_CASH,
    )
    assert (await env.stub.Adjust(down, metadata=OPERATOR)).balance.cash == 30
    too_much = wallet_pb2.AdjustRequest(
        transfer_id="a3",
        player_id="alice",
        amount=-31,
        reason="x",
        account_kind=ledger_pb2.ACCOUNT_KIND_PLAYER_CASH,
    )
    assert (
        await code_of(env.stub.Adjust(too_much, metadata=OPERATOR))
        == grpc.StatusCode.FAILED_PRECONDITION
    )
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    for bad in (
        wallet_pb2.AdjustRequest(
            transfer_id="a4",
            player_id="alice",
            amount=5,
            reason="r",
            account_kind=ledger_pb2.ACCOUNT_KIND_HOUSE_RAKE,
        ),
        wallet_pb2.AdjustRequest(transfer_id="a4", player_id="alice", amount=5, reason="r"),
        wallet_pb2.AdjustRequest(
            transfer_id="a4",
            player_id="alice",
            amount=0,
            reason="r",
            account_kind=ledger_pb2.ACCOUNT_KIND_PLAYER_CASH,
        ),
        wallet_pb2.AdjustRequest(
            transfer_id="a4",
            player_id="alice",
            amount=5,
            reason=" ",
            account_kind=ledger_pb2.ACCOUNT_KIND_PLAYER_CASH,
        ),
    ):
        assert await code_of(env.stub.Adjust(bad, metadata=OPERATOR)) == invalid
    ghost = wallet_pb2.AdjustRequest(
        transfer_id="a5",
        player_id="ghost",
        amount=5,
        reason="r",
        account_kind=ledger_pb2.ACCOUNT_KIND_PLAYER_CASH,
    )
    assert await code_of(env.stub.Adjust(ghost, metadata=OPERATOR)) == grpc.StatusCode.NOT_FOUND
    assert await code_of(env.stub.Adjust(up, metadata=AUDITOR)) == grpc.StatusCode.PERMISSION_DENIED
    assert (await balance(env, "alice")).cash == 30


async def test_lost_races_become_aborted(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    await deposit(env, "alice", 100)

    def always_conflict(*_a: Any, **_k: Any) -> None:
        raise ConcurrencyError("wallet-transfer-x", 0, 1)

    monkeypatch.setattr(env.wallet.events, "append", always_conflict)
    env.wallet.max_attempts = 3
    err = await error_of(
        env.stub.CreateTransfer(
            spec("r1", 5, debit_player_id="alice", credit_account_id="house:rake"), metadata=SERVICE
        )
    )
    assert err.code() == grpc.StatusCode.ABORTED
    info = errors_pb2.ErrorInfo()
    assert error_detail(err, info) and info.reason == errors_pb2.ERROR_REASON_VERSION_CONFLICT
    assert env.wallet.retries == 2
    monkeypatch.undo()
    assert (await balance(env, "alice")).cash == 100


# --------------------------------------------------------------------------- client


async def test_client_helper_buy_in_flow(env: Env) -> None:
    from electric_platform.auth import TokenSource

    await deposit(env, "alice", 1000)
    await env.stub.Adjust(
        wallet_pb2.AdjustRequest(
            transfer_id="bn",
            player_id="alice",
            amount=300,
            reason="promo",
            account_kind=ledger_pb2.ACCOUNT_KIND_PLAYER_BONUS,
        ),
        metadata=OPERATOR,
    )
    async with WalletClient.connect(env.target, TokenSource(SECRET, "registration")) as w:
        t = await w.reserve("buyin-e1", "alice", 1200)
        assert [(leg.debit_account_id, leg.amount) for leg in t.legs] == [
            ("player:alice:cash", 1000),
            ("player:alice:bonus", 200),
        ]
        assert (await w.reserve("buyin-e1", "alice", 1200)) == t  # retry
        posted = await w.post("buyin-e1")
        assert posted.posted_amount == 1200
        await w.move("rake-e1", "house:tournament_escrow", "house:rake", 100, code="rake")
        await w.move("net-e1", "house:tournament_escrow", "house:prize_reserve", 1100, code="net")
        prize = await w.credit_prize("prize-e1", "alice", 600, stake_transfer_id="buyin-e1")
        # Stake was 1000 cash + 200 bonus: 1/6 of the winnings go back to bonus.
        assert sorted((leg.credit_account_id, leg.amount) for leg in prize.legs) == [
            ("player:alice:bonus", 100),
            ("player:alice:cash", 500),
        ]
        b = await w.balance("alice")
        assert (b.cash, b.playable_bonus, b.balance) == (500, 200, 700)
        assert (await w.account("house:tournament_escrow")).posted == 0
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await w.reserve("buyin-e2", "alice", 10_000)
        detail = insufficient_funds(info.value)
        assert detail is not None and detail.available.cents == 700
        t2 = await w.reserve("buyin-e3", "alice", 100)
        assert (await w.void("buyin-e3", "unregistered")).state == ledger_pb2.TRANSFER_STATE_VOIDED
        assert (await w.get_transfer(t2.spec.transfer_id)).state == ledger_pb2.TRANSFER_STATE_VOIDED
    assert rebuild_and_compare(env.wallet.engine, env.wallet.events) == []
