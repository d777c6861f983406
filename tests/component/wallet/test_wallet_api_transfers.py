"""WalletService transfers through a real gRPC channel: create (pending or posted, retried),
post, void, get — happy paths, each error status, and lost races answered ABORTED."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from electric.common.v1 import errors_pb2
from electric.wallet.v1 import ledger_pb2, wallet_pb2
from electric_clients.errors import error_detail
from electric_clients.wallet import insufficient_funds
from electric_eventlog import ConcurrencyError
from electric_wallet.store.projections import rebuild_and_compare

from tests.support.wallet_kit import (
    ALICE,
    AUDITOR,
    OPERATOR,
    SERVICE,
    Env,
    balance,
    code_of,
    deposit,
    error_of,
    spec,
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
