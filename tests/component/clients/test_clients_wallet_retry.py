"""The wallet client's channel retries idempotent calls itself (gRPC service-config
``retryPolicy``): a fake WalletService on 127.0.0.1:0 fails the first attempts with retryable
codes, and fails non-retryable codes once."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence

import grpc
import pytest
from electric.common.v1 import errors_pb2, money_pb2
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_clients.channel import service_config
from electric_clients.wallet import WALLET_SERVICE, WalletClient, insufficient_funds
from electric_platform.errors import rich_status


class _Flaky(wallet_pb2_grpc.WalletServiceServicer):
    """Answers GetBalance after failing with ``codes`` in turn; records each attempt."""

    def __init__(self) -> None:
        self.codes: list[grpc.StatusCode] = []
        self.attempts = 0
        self.metadata: list[dict[str, str]] = []

    async def GetBalance(
        self, request: wallet_pb2.GetBalanceRequest, context: grpc.aio.ServicerContext
    ) -> wallet_pb2.GetBalanceResponse:
        self.attempts += 1
        self.metadata.append({k: str(v) for k, v in context.invocation_metadata() or ()})
        if self.codes:
            code = self.codes.pop(0)
            if code is grpc.StatusCode.FAILED_PRECONDITION:
                detail = errors_pb2.InsufficientFunds(
                    available=money_pb2.Money(cents=1), required=money_pb2.Money(cents=9)
                )
                status = rich_status(code, "short", detail)
                await context.abort(status.code, status.details, status.trailing_metadata)
            await context.abort(code, f"attempt {self.attempts}")
        return wallet_pb2.GetBalanceResponse(
            balance=wallet_pb2.Balance(player_id=request.player_id, cash=42)
        )


class _Calls:
    def metadata(self) -> Sequence[tuple[str, str]]:
        return (("authorization", "Bearer t"), ("x-request-id", "r1"))


@pytest.fixture
async def flaky() -> AsyncIterator[tuple[_Flaky, WalletClient]]:
    servicer = _Flaky()
    server = grpc.aio.server()
    wallet_pb2_grpc.add_WalletServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    client = WalletClient.connect(f"127.0.0.1:{port}", _Calls())
    try:
        yield servicer, client
    finally:
        await client.close()
        await server.stop(None)


def test_service_config_names_the_wallet_and_the_codes() -> None:
    config = json.loads(service_config([WALLET_SERVICE]))
    [method] = config["methodConfig"]
    assert method["name"] == [{"service": "electric.wallet.v1.WalletService"}]
    policy = method["retryPolicy"]
    assert policy["maxAttempts"] == 5 and policy["initialBackoff"] == "0.05s"
    assert set(policy["retryableStatusCodes"]) == {"ABORTED", "UNAVAILABLE", "DEADLINE_EXCEEDED"}


@pytest.mark.parametrize("code", [grpc.StatusCode.ABORTED, grpc.StatusCode.UNAVAILABLE])
async def test_retryable_codes_are_retried_by_the_channel(
    flaky: tuple[_Flaky, WalletClient], code: grpc.StatusCode
) -> None:
    servicer, client = flaky
    servicer.codes = [code, code, code]
    balance = await client.balance("al")
    assert balance.cash == 42 and servicer.attempts == 4
    assert all(m["authorization"] == "Bearer t" for m in servicer.metadata)


async def test_gives_up_after_five_attempts(flaky: tuple[_Flaky, WalletClient]) -> None:
    servicer, client = flaky
    servicer.codes = [grpc.StatusCode.ABORTED] * 6
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await client.balance("al")
    assert info.value.code() is grpc.StatusCode.ABORTED and servicer.attempts == 5


async def test_other_codes_fail_at_once_with_their_detail(
    flaky: tuple[_Flaky, WalletClient],
) -> None:
    servicer, client = flaky
    servicer.codes = [grpc.StatusCode.FAILED_PRECONDITION]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await client.balance("al")
    assert servicer.attempts == 1
    detail = insufficient_funds(info.value)
    assert detail is not None and detail.required.cents == 9
