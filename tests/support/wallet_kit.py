"""Helpers for the wallet tests: a ready :class:`~electric_wallet.handlers.Wallet` on a
database URL without a service host (what ``electric_wallet.app.setup`` wires through the
shared event path, minus the bus), and a WalletService on a real gRPC channel with the
platform's auth and context interceptors (the component tests' ``env``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from electric.wallet.v1 import ledger_pb2, wallet_pb2, wallet_pb2_grpc
from electric_eventlog import EventStore, create_engine
from electric_platform.auth import AuthInterceptor
from electric_platform.server import ContextInterceptor
from electric_wallet import store
from electric_wallet.api import WalletApi
from electric_wallet.handlers import Result, Wallet

from tests.support.auth import KEYSET, bearer


def open_wallet(database_url: str, *, observe: Callable[[Result], None] | None = None) -> Wallet:
    """Engine + migrations + system accounts: a ready wallet (blocking). ``observe`` is told
    the result of every posting command (e.g. ``WalletFlowMetrics(...).observe``)."""
    engine = create_engine(database_url)
    store.migrate(engine)
    wallet = Wallet(engine, EventStore(engine, producer="wallet"), observe=observe)
    wallet.bootstrap()
    return wallet


# --------------------------------------------------------------------------- over gRPC

OK = grpc.StatusCode.OK


def md(role: str, subject: str) -> tuple[tuple[str, str], ...]:
    return bearer(subject, role)


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


@contextlib.asynccontextmanager
async def serve_wallet(database_url: str) -> AsyncIterator[Env]:
    """The wallet's servicer on an aio server at 127.0.0.1:0, and a stub on it."""
    wallet = open_wallet(database_url)
    server = grpc.aio.server(interceptors=[ContextInterceptor("wallet"), AuthInterceptor(KEYSET)])
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
