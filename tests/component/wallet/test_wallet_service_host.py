"""The wallet's composition root on the platform's ServiceHost (what `python -m
electric_wallet` runs): gRPC with auth, the money gauges on /metrics, and the shared event
path's outbox relay and shutdown drain."""

from __future__ import annotations

import asyncio
import urllib.request
from typing import Any

import grpc
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_eventlog import create_engine, unsent_count
from electric_platform.config import load_config
from electric_platform.eventpath import inprocess_bus
from electric_platform.server import ServiceHost
from electric_wallet.app import setup

from tests.support.auth import auth_env, token


async def test_service_host_serves_wallet_and_money_metrics(tmp_path: Any) -> None:
    config = load_config(
        "wallet",
        {
            "ELECTRIC_VAR_DIR": str(tmp_path),
            "ELECTRIC_WALLET_GRPC_PORT": "0",
            "ELECTRIC_WALLET_METRICS_PORT": "0",
            **auth_env(),
        },
    )
    host = ServiceHost(config, setup)
    await host.start()
    try:
        op_token = token("op", "operator")
        async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as channel:
            stub = wallet_pb2_grpc.WalletServiceStub(channel)
            r = await stub.Deposit(
                wallet_pb2.DepositRequest(transfer_id="d1", player_id="zed", amount=1234),
                metadata=(("authorization", f"Bearer {op_token}"),),
            )
            assert r.balance.cash == 1234
            try:
                await stub.GetBalance(wallet_pb2.GetBalanceRequest(player_id="zed"))
                raise AssertionError("unauthenticated call succeeded")
            except grpc.aio.AioRpcError as err:
                assert err.code() == grpc.StatusCode.UNAUTHENTICATED
        url = f"http://127.0.0.1:{host.metrics_port}/metrics"
        text = await asyncio.to_thread(
            lambda: urllib.request.urlopen(url, timeout=5).read().decode()
        )
        assert (
            'electric_wallet_account_posted_cents{account_id="operator:cash_in",'
            'kind="operator_cash_in"} -1234.0' in text
        )
        assert 'electric_wallet_player_funds_cents{kind="player_cash"} 1234.0' in text
    finally:
        await host.stop(0)


async def test_outbox_is_relayed_and_drained_at_shutdown(tmp_path: Any) -> None:
    """Through the shared event path: every committed event reaches the bus (here the
    process's in-process bus) and nothing is left in the outbox once the host stopped, even
    for a command that committed just before the stop."""
    url = f"sqlite:///{tmp_path}/wallet.db"
    config = load_config(
        "wallet",
        {
            "DATABASE_URL": url,
            "ELECTRIC_VAR_DIR": str(tmp_path),
            "ELECTRIC_WALLET_GRPC_PORT": "0",
            "ELECTRIC_WALLET_METRICS_PORT": "-1",
            **auth_env(),
        },
    )
    host = ServiceHost(config, setup)
    await host.start()
    try:
        op_token = token("op", "operator")
        async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as channel:
            stub = wallet_pb2_grpc.WalletServiceStub(channel)
            for n in range(5):
                await stub.Deposit(
                    wallet_pb2.DepositRequest(transfer_id=f"d{n}", player_id="zed", amount=10),
                    metadata=(("authorization", f"Bearer {op_token}"),),
                )
    finally:
        await host.stop(0)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            assert unsent_count(conn, topic="electric.wallet.events") == 0
    finally:
        engine.dispose()
    streams = {m.key.decode() async for m in inprocess_bus().read_topic("electric.wallet.events")}
    assert {f"wallet-transfer-d{n}" for n in range(5)} <= streams
    assert "wallet-account-player:zed:cash" in streams
