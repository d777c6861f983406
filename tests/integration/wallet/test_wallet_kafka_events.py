"""The wallet service on real PostgreSQL + Kafka: its events reach `electric.wallet.events`
through event store + outbox + relay, keyed by stream, with the documented stream ids."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import grpc
import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.wallet.v1 import events_pb2, ledger_pb2, wallet_pb2, wallet_pb2_grpc
from electric_eventlog.kafka import KafkaBus
from electric_platform.config import load_config
from electric_platform.server import ServiceHost
from electric_wallet.app import setup

from tests.support.auth import auth_env, bearer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]


async def _topic(bootstrap: str) -> list[Envelope]:
    bus = KafkaBus(bootstrap, client_id="wallet-test-reader")
    out = []
    async for message in bus.read_topic("electric.wallet.events"):
        env = Envelope()
        env.ParseFromString(message.value)
        out.append(env)
    return out


async def test_wallet_events_reach_kafka(
    fresh_pg_url: str, kafka_bootstrap: str, tmp_path: Any
) -> None:
    config = load_config(
        "wallet",
        {
            "DATABASE_URL": fresh_pg_url,
            "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
            **auth_env(),
            "ELECTRIC_VAR_DIR": str(tmp_path),
            "ELECTRIC_WALLET_GRPC_PORT": "0",
            "ELECTRIC_WALLET_METRICS_PORT": "-1",
        },
    )
    host = ServiceHost(config, setup)
    await host.start()
    run = uuid.uuid4().hex[:10]
    player = f"kp-{run}"
    md = bearer("op", "operator")
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as ch:
            stub = wallet_pb2_grpc.WalletServiceStub(ch)
            await stub.Deposit(
                wallet_pb2.DepositRequest(transfer_id=f"dep-{run}", player_id=player, amount=900),
                metadata=md,
            )
            for n in (1, 2):
                await stub.CreateTransfer(
                    wallet_pb2.CreateTransferRequest(
                        spec=ledger_pb2.TransferSpec(
                            transfer_id=f"buy{n}-{run}",
                            debit_player_id=player,
                            credit_account_id="house:tournament_escrow",
                            amount=300,
                            pending=True,
                            code="buy_in",
                        )
                    ),
                    metadata=md,
                )
            await stub.PostTransfer(
                wallet_pb2.PostTransferRequest(transfer_id=f"buy1-{run}"), metadata=md
            )
            await stub.VoidTransfer(
                wallet_pb2.VoidTransferRequest(transfer_id=f"buy2-{run}"), metadata=md
            )
        wanted = {
            (f"wallet-account-player:{player}:cash", 1, "AccountOpened"),
            (f"wallet-transfer-dep-{run}", 1, "TransferPosted"),
            (f"wallet-transfer-buy1-{run}", 1, "TransferPending"),
            (f"wallet-transfer-buy1-{run}", 2, "TransferPosted"),
            (f"wallet-transfer-buy2-{run}", 1, "TransferPending"),
            (f"wallet-transfer-buy2-{run}", 2, "TransferVoided"),
        }
        seen: set[tuple[str, int, str]] = set()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not wanted <= seen:
            for env in await _topic(kafka_bootstrap):
                if run in env.stream_id:
                    assert env.producer == "wallet" and len(env.hash) == 64
                    seen.add((env.stream_id, env.stream_version, env.event_type.rsplit(".")[-1]))
                    if env.event_type.endswith("TransferVoided"):
                        voided = events_pb2.TransferVoided()
                        env.payload.Unpack(voided)
                        assert [leg.amount for leg in voided.released_legs] == [300]
            if not wanted <= seen:
                await asyncio.sleep(0.5)
        assert wanted <= seen, sorted(wanted - seen)
    finally:
        await host.stop(0)
