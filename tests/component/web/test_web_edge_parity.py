"""A browser call through the edge (web/edge) behaves exactly as a native gRPC call: given the
same token, the same request and the same deadline, it gets the same response bytes, or the
same status code, message and error details (type and bytes of every ``google.rpc.Status``
detail the services put in ``grpc-status-details-bin``).

Each case is called five ways against the four real services in this process: natively
(grpcio), through the edge with connect-python over Connect and over gRPC-Web, and through
the edge with plain HTTP POSTs in both protocols (the exact bytes a browser's ``fetch``
receives). Also: deadlines reach the service and end calls and streams the same way, the
edge serves exactly the methods the protos mark ``EXPOSURE_PUBLIC``, and internal methods
are unimplemented there even for an operator while natively an operator reaches them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import jwt
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from electric.common.v1 import access_pb2, pagination_pb2
from electric.payout.v1 import payout_pb2
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.table.v1 import table_pb2
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from google.protobuf.message import Message

from tests.support.fuzz_values import Rpc, discover_rpcs
from tests.support.platform_kit import Platform, embedded_platform
from tests.support.web_answers import Answer, native, raw_post, through_client
from tests.support.web_edge import Edge, browser_edge, public_paths, rpc_named

pytestmark = pytest.mark.timeout(180)

PROTOCOLS = (ProtocolType.CONNECT, ProtocolType.GRPC_WEB)
#: A table id no table has: a WatchTable for it waits (for the table to appear).
NO_TABLE = "00000000-0000-4000-8000-000000000000"


def expired_token(platform: Platform, subject: str) -> str:
    """A player token signed by the issuer that expired an hour ago."""
    now = int(time.time())
    key = platform.issuer_key
    claims = {
        "sub": subject,
        "role": "player",
        "iat": now - 7200,
        "exp": now - 3600,
        "iss": "electric",
        "aud": "electric",
    }
    return jwt.encode(claims, key.private, algorithm="EdDSA", headers={"kid": key.kid})


async def five_ways(
    platform: Platform, edge: Edge, rpc: Rpc, request: Message, token: str | None
) -> dict[str, Answer]:
    """The same call natively, through connect-python (Connect, gRPC-Web) and as raw HTTP."""
    body = request.SerializeToString()
    return {
        "native": await native(platform, rpc, request, token),
        "connect": await through_client(edge, rpc, request, token, ProtocolType.CONNECT),
        "grpc-web": await through_client(edge, rpc, request, token, ProtocolType.GRPC_WEB),
        "raw-connect": await asyncio.to_thread(
            raw_post, edge.url, rpc.path, body, token=token, protocol="connect"
        ),
        "raw-grpc-web": await asyncio.to_thread(
            raw_post, edge.url, rpc.path, body, token=token, protocol="grpc-web"
        ),
    }


def assert_same(name: str, answers: dict[str, Answer], expected_code: str) -> None:
    reference = answers["native"]
    assert reference.code == expected_code, (name, reference.status)
    for way, answer in answers.items():
        assert answer.status == reference.status, (name, way, answer.status, reference.status)
        # Raw HTTP sees the bytes as the service sent them; connect-python re-serializes.
        assert answer.body == reference.body, (name, way)


async def seeded(platform: Platform) -> list[str]:
    """alice funded and waiting at a table with one entry; bob has no money. The tiers."""
    wallet = wallet_pb2_grpc.WalletServiceStub(platform.channel("wallet"))
    reg = registration_pb2_grpc.RegistrationServiceStub(platform.channel("registration"))
    await wallet.Deposit(
        wallet_pb2.DepositRequest(transfer_id="seed-alice", player_id="alice", amount=10_000),
        metadata=platform.md("ops", "operator"),
    )
    lobby = await reg.ListLobby(registration_pb2.ListLobbyRequest(), metadata=platform.md("a"))
    tiers = [tier.tier_id for tier in lobby.tiers]
    await reg.Register(
        registration_pb2.RegisterRequest(request_id="seed-alice", tier_id=tiers[0], entries=1),
        metadata=platform.md("alice"),
    )
    return tiers


@pytest.fixture
async def platform_and_edge(tmp_path: Path) -> AsyncIterator[tuple[Platform, Edge]]:
    async with embedded_platform(tmp_path) as platform, browser_edge(platform.targets) as edge:
        yield platform, edge


async def test_reads_answer_the_same_bytes_both_ways(
    platform_and_edge: tuple[Platform, Edge],
) -> None:
    platform, edge = platform_and_edge
    await seeded(platform)
    alice = platform.token("alice", "player")
    reads: list[tuple[str, Message]] = [
        ("RegistrationService/ListLobby", registration_pb2.ListLobbyRequest()),
        ("WalletService/GetBalance", wallet_pb2.GetBalanceRequest()),
        ("WalletService/GetBalance", wallet_pb2.GetBalanceRequest(player_id="alice")),
        (
            "RegistrationService/ListMyTables",
            registration_pb2.ListMyTablesRequest(include_finished=True),
        ),
        ("RegistrationService/GetPlayerSettings", registration_pb2.GetPlayerSettingsRequest()),
        ("WalletService/ListTransactions", wallet_pb2.ListTransactionsRequest()),
        ("PayoutService/ListWinnings", payout_pb2.ListWinningsRequest()),
    ]
    for name, request in reads:
        answers = await five_ways(platform, edge, rpc_named(name), request, alice)
        assert_same(name, answers, "ok")
        assert answers["native"].body or name == "PayoutService/ListWinnings", name
    tables = registration_pb2.ListMyTablesResponse.FromString(
        (
            await native(
                platform,
                rpc_named("RegistrationService/ListMyTables"),
                registration_pb2.ListMyTablesRequest(),
                alice,
            )
        ).body
    )
    assert len(tables.tables) == 1  # the read shows real content, not an empty default


async def test_failures_carry_the_same_status_message_and_details(
    platform_and_edge: tuple[Platform, Edge],
) -> None:
    platform, edge = platform_and_edge
    tiers = await seeded(platform)
    alice = platform.token("alice", "player")
    bob = platform.token("bob", "player")
    cases: list[tuple[str, str, Message, str | None, str, str]] = [
        # (case, rpc, request, token, expected code, expected detail type or "")
        ("missing token", "WalletService/GetBalance", wallet_pb2.GetBalanceRequest(), None,
         "unauthenticated", ""),
        ("expired token", "WalletService/GetBalance", wallet_pb2.GetBalanceRequest(),
         expired_token(platform, "alice"), "unauthenticated", ""),
        ("garbage token", "RegistrationService/ListLobby", registration_pb2.ListLobbyRequest(),
         "not-a-jwt", "unauthenticated", ""),
        ("acting for another player", "WalletService/GetBalance",
         wallet_pb2.GetBalanceRequest(player_id="bob"), alice, "permission_denied", ""),
        ("another player's tables", "RegistrationService/ListMyTables",
         registration_pb2.ListMyTablesRequest(player_id="bob"), alice, "permission_denied", ""),
        ("entries out of range", "RegistrationService/Register",
         registration_pb2.RegisterRequest(request_id="r-range", tier_id=tiers[0], entries=99),
         alice, "invalid_argument", "electric.common.v1.BadRequest"),
        ("forged page token", "WalletService/ListTransactions",
         wallet_pb2.ListTransactionsRequest(page=pagination_pb2.PageRequest(page_token="xx!")),
         alice, "invalid_argument", ""),
        ("unknown tier", "RegistrationService/Register",
         registration_pb2.RegisterRequest(request_id="r-tier", tier_id="no-such", entries=1),
         alice, "not_found", "electric.common.v1.ResourceInfo"),
        ("unknown tournament", "PayoutService/GetPayouts",
         payout_pb2.GetPayoutsRequest(tournament_id=NO_TABLE), alice, "not_found", ""),
        ("unknown table", "TableService/GetTable",
         table_pb2.GetTableRequest(table_id=NO_TABLE), alice, "not_found", ""),
        ("no money", "RegistrationService/Register",
         registration_pb2.RegisterRequest(request_id="r-bob", tier_id=tiers[0], entries=1),
         bob, "failed_precondition", "electric.common.v1.InsufficientFunds"),
    ]  # fmt: skip
    for case, name, request, token, code, detail in cases:
        answers = await five_ways(platform, edge, rpc_named(name), request, token)
        assert_same(case, answers, code)
        assert answers["native"].message, case
        if detail:
            assert [t for t, _ in answers["native"].details] == [detail], case
    # The refusals changed nothing: bob still has no entry, alice still one.
    reg = registration_pb2_grpc.RegistrationServiceStub(platform.channel("registration"))
    for player, entries in (("bob", 0), ("alice", 1)):
        mine = await reg.ListMyTables(
            registration_pb2.ListMyTablesRequest(), metadata=platform.md(player)
        )
        assert sum(len(t.my_entries) for t in mine.tables) == entries, player


async def _stream_end(stream: AsyncIterator[Any]) -> tuple[int, str]:
    received = 0
    try:
        async for _ in stream:
            received += 1
    except ConnectError as err:
        return received, err.code.value
    return received, "ok"


async def _native_stream_end(call: Any) -> tuple[int, str]:
    received = 0
    try:
        async for _ in call:
            received += 1
    except grpc.aio.AioRpcError as err:
        return received, err.code().name.lower()
    return received, "ok"


async def test_stream_deadlines_end_streams_the_same_way(
    platform_and_edge: tuple[Platform, Edge],
) -> None:
    platform, edge = platform_and_edge
    await seeded(platform)
    token = platform.token("alice", "player")
    md = (("authorization", f"Bearer {token}"),)
    reg = registration_pb2_grpc.RegistrationServiceStub(platform.channel("registration"))
    watch_table = platform.channel("table").unary_stream(
        rpc_named("TableService/WatchTable").path,
        table_pb2.WatchTableRequest.SerializeToString,
        table_pb2.WatchTableResponse.FromString,
    )
    my_tables = registration_pb2.WatchMyTablesRequest()
    waiting = table_pb2.WatchTableRequest(table_id=NO_TABLE)
    # Six streams start at once on a possibly loaded machine: the deadline leaves time for
    # My Tables' snapshot to arrive before it (a 1.5 s deadline did not always).
    seconds = 5.0
    started = time.monotonic()
    outcomes = await asyncio.gather(
        _native_stream_end(reg.WatchMyTables(my_tables, metadata=md, timeout=seconds)),
        _native_stream_end(watch_table(waiting, metadata=md, timeout=seconds)),
        *(
            _stream_end(
                edge.stream(name, request, token=token, timeout_ms=int(seconds * 1000), protocol=p)
            )
            for p in PROTOCOLS
            for name, request in (
                ("RegistrationService/WatchMyTables", my_tables),
                ("TableService/WatchTable", waiting),
            )
        ),
    )
    took = time.monotonic() - started
    native_my, native_table, *browser = outcomes
    # Native: My Tables sends its snapshot, then both streams end at the deadline; a
    # WatchTable of a table that does not exist sends nothing.
    assert native_my[1] == native_table[1] == "deadline_exceeded", outcomes
    assert native_my[0] >= 1 and native_table[0] == 0, outcomes
    for i, (received, code) in enumerate(browser):
        assert code == "deadline_exceeded", (i, outcomes, edge.log_tail())
        if i % 2 == 0:  # My Tables: at least its snapshot, as natively
            assert received >= 1, (i, outcomes)
        else:  # the waiting WatchTable: nothing, as natively
            assert received == 0, (i, outcomes)
    assert took < 40, took


async def test_a_unary_deadline_reaches_the_service(tmp_path: Path) -> None:
    """The service sees the browser's deadline (a stand-in wallet records its time left),
    and a tiny deadline ends the call with DEADLINE_EXCEEDED both ways."""
    seen: list[float | None] = []

    async def get_balance(request: bytes, context: grpc.aio.ServicerContext[Any, Any]) -> bytes:
        seen.append(context.time_remaining())
        return wallet_pb2.GetBalanceResponse().SerializeToString()

    handler = grpc.method_handlers_generic_handler(
        "electric.wallet.v1.WalletService",
        {"GetBalance": grpc.unary_unary_rpc_method_handler(get_balance)},
    )
    probe = grpc.aio.server()
    probe.add_generic_rpc_handlers((handler,))
    port = probe.add_insecure_port("127.0.0.1:0")
    await probe.start()
    try:
        async with embedded_platform(tmp_path) as platform:
            targets = {**platform.targets, "wallet": f"127.0.0.1:{port}"}
            async with browser_edge(targets) as edge:
                rpc = rpc_named("WalletService/GetBalance")
                token = platform.token("alice", "player")
                for protocol in PROTOCOLS:
                    answer = await through_client(
                        edge, rpc, wallet_pb2.GetBalanceRequest(), token, protocol, 7_000
                    )
                    assert answer.code == "ok"
                for header in ({"Connect-Timeout-Ms": "7000"}, {}):
                    answer = await asyncio.to_thread(
                        raw_post, edge.url, rpc.path, b"", token=token, headers=header
                    )
                    assert answer.code == "ok"
                # connect, grpc-web, raw connect with a deadline, raw connect without one
                assert len(seen) == 4, seen
                for remaining in seen[:3]:
                    assert remaining is not None and 0 < remaining <= 7.0, seen
                assert seen[3] is None or seen[3] > 3600, seen  # no deadline: none invented

                # A deadline that cannot be met: DEADLINE_EXCEEDED natively and through the
                # edge, where only the deadline header (no client timer) can end the call.
                register = rpc_named("RegistrationService/Register")
                tiers = await seeded(platform)
                request = registration_pb2.RegisterRequest(
                    request_id="r-late", tier_id=tiers[0], entries=1
                )
                bob = platform.token("bob", "player")
                late = await native(platform, register, request, bob, timeout=0.001)
                assert late.code == "deadline_exceeded"
                for way, deadline in (
                    ("connect", {"Connect-Timeout-Ms": "1"}),
                    ("grpc-web", {"Grpc-Timeout": "1m"}),
                ):
                    answer = await asyncio.to_thread(
                        raw_post,
                        edge.url,
                        register.path,
                        request.SerializeToString(),
                        token=bob,
                        protocol=way,
                        headers=deadline,
                    )
                    assert answer.code == "deadline_exceeded", (way, answer.status)
    finally:
        await probe.stop(0)


def exposure(rpc: Rpc) -> int:
    return int(rpc.method.GetOptions().Extensions[access_pb2.exposure])


def test_the_edge_serves_exactly_the_public_methods() -> None:
    rpcs = discover_rpcs()
    unset = [r.name for r in rpcs if not r.method.GetOptions().HasExtension(access_pb2.exposure)]
    assert not unset, f"RPCs without an explicit exposure: {unset}"
    unspecified = [r.name for r in rpcs if exposure(r) == access_pb2.EXPOSURE_UNSPECIFIED]
    assert not unspecified, unspecified
    public = {r.path for r in rpcs if exposure(r) == access_pb2.EXPOSURE_PUBLIC}
    assert set(public_paths()) == public
    assert len(public) == 31
    assert "/electric.wallet.v1.WalletService/Deposit" not in public


async def test_internal_methods_are_unimplemented_at_the_edge_even_for_an_operator(
    platform_and_edge: tuple[Platform, Edge],
) -> None:
    platform, edge = platform_and_edge
    operator = platform.token("ops", "operator")
    internal = [r for r in discover_rpcs() if exposure(r) == access_pb2.EXPOSURE_INTERNAL]
    assert len(internal) == 11 and not any(r.streaming for r in internal)
    for rpc in internal:
        request = rpc.request_class()
        reached = await native(platform, rpc, request, operator)
        assert reached.code != "unimplemented", (rpc.name, reached.status)
        for protocol in PROTOCOLS:
            answer = await through_client(edge, rpc, request, operator, protocol)
            assert answer.code == "unimplemented", (rpc.name, protocol, answer.status)
        for way in ("connect", "grpc-web"):
            answer = await asyncio.to_thread(
                raw_post, edge.url, rpc.path, b"", token=operator, protocol=way
            )
            assert answer.code == "unimplemented", (rpc.name, way, answer.status)
    # A real deposit: natively the operator's money arrives, through the edge nothing moves.
    deposit = wallet_pb2.DepositRequest(transfer_id="t-edge", player_id="carol", amount=500)
    with pytest.raises(ConnectError) as refused:
        await edge.unary("WalletService/Deposit", deposit, token=operator)
    assert refused.value.code is Code.UNIMPLEMENTED
    balance = rpc_named("WalletService/GetBalance")
    request = wallet_pb2.GetBalanceRequest(player_id="carol")
    before = await native(platform, balance, request, operator)
    done = await native(platform, rpc_named("WalletService/Deposit"), deposit, operator)
    assert done.code == "ok"
    after = await native(platform, balance, request, operator)
    assert before.body != after.body
