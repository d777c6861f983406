"""WalletService operator calls through a real gRPC channel (deposit, withdraw, adjust), and
the typed client of ``electric_clients.wallet`` driving a whole buy-in against it."""

from __future__ import annotations

import grpc
import pytest
from electric.wallet.v1 import ledger_pb2, wallet_pb2
from electric_clients.wallet import WalletClient, insufficient_funds
from electric_wallet.store.projections import rebuild_and_compare

from tests.support.auth import token_source
from tests.support.wallet_kit import (
    AUDITOR,
    OPERATOR,
    SERVICE,
    Env,
    balance,
    code_of,
    deposit,
    error_of,
    md,
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


# --------------------------------------------------------------------------- client


async def test_client_helper_buy_in_flow(env: Env) -> None:

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
    async with WalletClient.connect(env.target, token_source("registration")) as w:
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
