"""The API and security probes through the browser edge (web/edge), in Connect and gRPC-Web
(issue 27, item 5):

* the authorisation matrix of docs/security.md: every cell of every ``EXPOSURE_PUBLIC``
  method gets, through the edge, exactly the code the same cell gets natively (called in
  the same run, on the same kind of fresh state); every cell of every ``EXPOSURE_INTERNAL``
  method is ``unimplemented`` through the edge, whatever the credentials. The rows, their
  requests and the columns' credentials are those of
  ``tests/component/security/test_security_authz_matrix.py``, imported;
* crafted bearer tokens (alg ``none``, HS256, an unknown kid, a stranger's key under the
  issuer's kid, expired, a lifetime over the cap, another issuer or audience, an unknown
  role, a player token minted by a service's key, not a JWT, not Bearer): the same code and
  message through the edge as natively, on a unary call and on a stream;
* crafted page tokens (``test_security_inputs``): INVALID_ARGUMENT through the edge as
  natively;
* large inputs: over the edge's 64 KiB request limit, ``resource_exhausted`` for a public
  method (``unimplemented`` for an internal one: the edge serves it to nobody) and nothing
  reaches the service; just under it, the native code and message.
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
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from electric.common.v1 import access_pb2, pagination_pb2
from electric.payout.v1 import payout_pb2
from electric.registration.v1 import registration_pb2
from electric.table.v1 import table_pb2
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_platform import SigningKey, issue_token
from google.protobuf.message import Message

from tests.component.security.test_security_authz_matrix import (
    COLUMNS,
    DOC,
    SERVICES,
    STREAM_FIRST_MESSAGE_SECONDS,
    World,
    _prepare_for,
    credentials,
    fresh,
    read_matrix,
)
from tests.component.security.test_security_authz_matrix import call as native_call
from tests.component.security.test_security_inputs import CRAFTED
from tests.support import auth
from tests.support.platform_kit import Platform, embedded_platform
from tests.support.web_answers import Answer, native, raw_post, through_client
from tests.support.web_edge import Edge, browser_edge, rpc_named

pytestmark = pytest.mark.timeout(240)

PROTOCOLS = (ProtocolType.CONNECT, ProtocolType.GRPC_WEB)
#: The matrix makes some 600 calls through the edge from one address: limits well above
#: that, so that only what the matrix is about decides a cell.
LIMITS = ["-rate", "1000", "-burst", "2000"]
LIMIT = 65_536  # the edge's default -max-request-bytes


def exposure(service: str, rpc: str) -> int:
    method = SERVICES[service].methods_by_name[rpc]
    return int(method.GetOptions().Extensions[access_pb2.exposure])


def _token(md: tuple[tuple[str, str], ...]) -> str | None:
    """The bearer token in a matrix column's metadata (None: no token)."""
    for key, value in md:
        if key == "authorization":
            return value.removeprefix("Bearer ")
    return None


async def edge_call(
    edge: Edge,
    service: str,
    rpc: str,
    request: Message,
    token: str | None,
    protocol: ProtocolType,
) -> str:
    """A cell's call through the edge, its status as the matrix writes it ("OK",
    "PERMISSION_DENIED"); a stream counts as OK once its first message arrives."""
    name = f"{service}/{rpc}"
    try:
        if SERVICES[service].methods_by_name[rpc].server_streaming:
            stream = edge.stream(name, request, token=token, protocol=protocol, timeout_ms=30_000)
            try:
                await asyncio.wait_for(anext(stream), STREAM_FIRST_MESSAGE_SECONDS)
            finally:
                await stream.aclose()  # type: ignore[attr-defined]
        else:
            await edge.unary(name, request, token=token, protocol=protocol, timeout_ms=20_000)
    except ConnectError as err:
        return err.code.value.upper()
    except TimeoutError:
        return "NO FIRST MESSAGE"
    return "OK"


@pytest.fixture
async def world_and_edge(tmp_path: Path) -> AsyncIterator[tuple[World, Edge]]:
    async with (
        embedded_platform(tmp_path) as platform,
        browser_edge(platform.targets, extra_args=LIMITS) as edge,
    ):
        yield World(platform), edge


async def test_every_cell_of_the_matrix_through_the_edge(
    world_and_edge: tuple[World, Edge],
) -> None:
    w, edge = world_and_edge
    rows = read_matrix(DOC.read_text(encoding="utf-8"))
    # Table commands first, while the fresh tournament's first hand is on (as natively).
    rows.sort(key=lambda r: r.service != "TableService")
    public = [r for r in rows if exposure(r.service, r.rpc) == access_pb2.EXPOSURE_PUBLIC]
    internal = [r for r in rows if exposure(r.service, r.rpc) == access_pb2.EXPOSURE_INTERNAL]
    assert len(public) + len(internal) == len(rows), "a row with no exposure"
    # The matrix covers the four tournament services' RPCs (the casino RPCs have no row).
    assert public and internal, (len(public), len(internal))
    await w.start_table()
    mismatches: list[str] = []
    cells = 0
    started = time.monotonic()
    for row in rows:
        prepare = _prepare_for(row.service, row.rpc)
        is_public = row in public
        for column in COLUMNS:
            if row.cells[column] == "—":
                continue
            expected = "UNIMPLEMENTED"
            if is_public:
                await _set_the_stage(w, row.service, row.rpc)
                request, owner = await prepare(w, column)
                expected = await native_call(
                    w, row.service, row.rpc, request, credentials(column, owner)
                )
                await _tidy(w, row.service, row.rpc, owner)
            for protocol in PROTOCOLS:
                await _set_the_stage(w, row.service, row.rpc)
                request, owner = await prepare(w, column)
                token = _token(credentials(column, owner))
                got = await edge_call(edge, row.service, row.rpc, request, token, protocol)
                cells += 1
                if got != expected:
                    mismatches.append(
                        f"{row.service}.{row.rpc} [{column}] {protocol.name}: edge {got}, "
                        f"{'native' if is_public else 'internal: expected'} {expected} "
                        f"(doc {row.cells[column]})"
                    )
                await _tidy(w, row.service, row.rpc, owner)
    took = time.monotonic() - started
    print(f"{cells} matrix cells through the edge in {took:.1f} s")
    assert not mismatches, "\n".join(mismatches) + "\n" + edge.log_tail()


async def _set_the_stage(w: World, service: str, rpc: str) -> None:
    """Each call of a SitOut or SitIn cell finds alice as the native matrix's first call of
    the row does (seated and playing for SitOut, sitting out for SitIn): the matrix calls
    each cell once, this test three times (natively, Connect, gRPC-Web)."""
    if service != "TableService" or rpc not in ("SitOut", "SitIn"):
        return
    undo = table_pb2.SitInRequest if rpc == "SitOut" else table_pb2.SitOutRequest
    request = undo(table_id=w.table_id, request_id=fresh("stage"))
    try:
        await getattr(w.table, undo.DESCRIPTOR.name.removesuffix("Request"))(
            request, metadata=auth.bearer("alice", "player"), timeout=20
        )
    except grpc.aio.AioRpcError as err:  # already so
        assert err.code() is grpc.StatusCode.FAILED_PRECONDITION, err


async def _tidy(w: World, service: str, rpc: str, owner: str) -> None:
    """As natively: a Register or Unregister cell leaves no waiting entry behind."""
    if service == "RegistrationService" and rpc in ("Register", "Unregister"):
        await w.withdraw_entries(owner)


# --------------------------------------------------------------------------- tokens


def _crafted_tokens(platform: Platform) -> dict[str, str | None]:
    """Bearer values no service accepts, each as a probe crafts it (None: no header)."""
    now = int(time.time())
    issuer = platform.issuer_key
    claims: dict[str, Any] = {
        "sub": "alice",
        "role": "player",
        "iat": now,
        "exp": now + 60,
        "iss": "electric",
        "aud": "electric",
    }

    def signed(key: SigningKey, **over: Any) -> str:
        return jwt.encode(
            {**claims, **over}, key.private, algorithm="EdDSA", headers={"kid": key.kid}
        )

    return {
        "alg none": jwt.encode(
            {**claims, "role": "operator"}, None, algorithm="none", headers={"kid": issuer.kid}
        ),
        "HS256": jwt.encode(claims, "x" * 40, algorithm="HS256", headers={"kid": issuer.kid}),
        "unknown kid": signed(SigningKey.generate("stranger")),
        "stranger's key, issuer's kid": signed(
            SigningKey.generate(issuer.kid), role="operator", sub="mallory"
        ),
        "expired": issue_token("alice", "player", issuer, 60, now=time.time() - 600),
        "lifetime over the cap": issue_token("alice", "player", issuer, 10 * 365 * 86400),
        "issued in the future": signed(issuer, iat=now + 30, exp=now + 90),
        "another issuer": signed(issuer, iss="elsewhere"),
        "another audience": signed(issuer, aud="elsewhere"),
        "unknown role": signed(issuer, role="king"),
        "no subject": signed(issuer, sub=""),
        "player token minted by a service": signed(auth.KEYS.services["wallet"]),
        "not a JWT": "not.a.jwt",
        "empty": "",
    }


async def _stream_answer(edge: Edge, name: str, request: Message, token: str | None,
                         protocol: ProtocolType) -> tuple[str, str]:  # fmt: skip
    stream = edge.stream(name, request, token=token, protocol=protocol, timeout_ms=20_000)
    try:
        await asyncio.wait_for(anext(stream), STREAM_FIRST_MESSAGE_SECONDS)
    except ConnectError as err:
        return err.code.value, err.message
    finally:
        await stream.aclose()  # type: ignore[attr-defined]
    return "ok", ""


async def _native_stream_answer(
    platform: Platform, name: str, request: Message, token: str | None
) -> tuple[str, str]:
    rpc = rpc_named(name)
    metadata = (("authorization", f"Bearer {token}"),) if token is not None else ()
    call = platform.channel(rpc.service).unary_stream(
        rpc.path, type(request).SerializeToString, rpc.response_class.FromString
    )(request, metadata=metadata, timeout=20)
    try:
        await asyncio.wait_for(call.read(), STREAM_FIRST_MESSAGE_SECONDS)
    except grpc.aio.AioRpcError as err:
        return err.code().name.lower(), err.details() or ""
    finally:
        call.cancel()
    return "ok", ""


async def test_crafted_bearer_tokens_are_refused_through_the_edge_as_natively(
    world_and_edge: tuple[World, Edge],
) -> None:
    w, edge = world_and_edge
    platform = w.p
    unary = rpc_named("WalletService/GetBalance")
    request = wallet_pb2.GetBalanceRequest(player_id="alice")
    watch = registration_pb2.WatchMyTablesRequest()
    # Built now, not at collection: the tokens carry iat/exp.
    for case, token in _crafted_tokens(platform).items():
        reference = await native(platform, unary, request, token)
        assert reference.code == "unauthenticated", (case, reference.status)
        assert reference.message, case
        for protocol in PROTOCOLS:
            answer = await through_client(edge, unary, request, token, protocol)
            assert (answer.code, answer.message) == (reference.code, reference.message), (
                case,
                protocol,
                answer.status,
            )
        for way in ("connect", "grpc-web"):
            answer = await asyncio.to_thread(
                raw_post, edge.url, unary.path, request.SerializeToString(), token=token,
                protocol=way,
            )  # fmt: skip
            assert answer.status == reference.status, (case, way, answer.status)
        streamed = await _native_stream_answer(
            platform, "RegistrationService/WatchMyTables", watch, token
        )
        assert streamed[0] == "unauthenticated", (case, streamed)
        for protocol in PROTOCOLS:
            got = await _stream_answer(
                edge, "RegistrationService/WatchMyTables", watch, token, protocol
            )
            assert got == streamed, (case, protocol, got, streamed)
    # Not a bearer token, a bare scheme, a lower-case scheme: the same both ways (the last is
    # accepted: it reaches the wallet, which has none for alice).
    for header in ("Basic YWxpY2U6cHc=", "Bearer", "bearer " + platform.token("alice", "player")):
        got_native = await _native_with_header(platform, unary, request, header)
        for way in ("connect", "grpc-web"):
            answer = await asyncio.to_thread(
                raw_post, edge.url, unary.path, request.SerializeToString(),
                protocol=way, headers={"Authorization": header},
            )  # fmt: skip
            assert (answer.code, answer.message) == (got_native.code, got_native.message), (
                header[:12],
                way,
                answer.status,
            )


async def _native_with_header(
    platform: Platform, rpc: Any, request: Message, header: str
) -> Answer:
    call = platform.channel(rpc.service).unary_unary(
        rpc.path, type(request).SerializeToString, lambda b: b
    )(request, metadata=(("authorization", header),), timeout=10)
    try:
        body = await call
    except grpc.aio.AioRpcError as err:
        return Answer(err.code().name.lower(), err.details() or "")
    return Answer("ok", body=body)


# --------------------------------------------------------------------------- inputs


async def test_crafted_page_tokens_are_invalid_argument_through_the_edge(
    world_and_edge: tuple[World, Edge],
) -> None:
    w, edge = world_and_edge
    platform = w.p
    await w.deposit("alice", 10)
    await w.deposit("alice", 10)
    alice = platform.token("alice", "player")
    statement = rpc_named("WalletService/ListTransactions")
    first = await edge.unary(
        statement,
        wallet_pb2.ListTransactionsRequest(page=pagination_pb2.PageRequest(page_size=1)),
        token=alice,
    )
    real = first.page.next_page_token
    assert real
    lists: dict[str, Any] = {
        "WalletService/ListTransactions": lambda t: wallet_pb2.ListTransactionsRequest(
            page=pagination_pb2.PageRequest(page_token=t)
        ),
        "PayoutService/ListWinnings": lambda t: payout_pb2.ListWinningsRequest(
            page=pagination_pb2.PageRequest(page_token=t)
        ),
        "RegistrationService/ListMyTables": lambda t: registration_pb2.ListMyTablesRequest(
            page=pagination_pb2.PageRequest(page_token=t)
        ),
    }
    for name, build in lists.items():
        rpc = rpc_named(name)
        foreign = real if name != "WalletService/ListTransactions" else real[:-1]
        for page_token in (CRAFTED, "garbage!", "A" * 10_000, foreign):
            request = build(page_token)
            reference = await native(platform, rpc, request, alice)
            assert reference.code == "invalid_argument", (name, page_token[:20])
            for protocol in PROTOCOLS:
                answer = await through_client(edge, rpc, request, alice, protocol)
                assert answer.status == reference.status, (name, page_token[:20], protocol)
        # The probe's megabyte token: refused by the edge before any service sees it.
        huge = build("A" * 1_000_000)
        for protocol in PROTOCOLS:
            answer = await through_client(edge, rpc, huge, alice, protocol)
            assert answer.code == "resource_exhausted", (name, protocol, answer.status)


async def test_large_inputs_through_the_edge(world_and_edge: tuple[World, Edge]) -> None:
    w, edge = world_and_edge
    platform = w.p
    await w.deposit("alice")
    lobby = await w.reg.ListLobby(registration_pb2.ListLobbyRequest(), metadata=w.ops)
    tier = lobby.tiers[0].tier_id
    alice = platform.token("alice", "player")
    operator = platform.token("edge-ops", "operator")
    wallet = wallet_pb2_grpc.WalletServiceStub(platform.channel("wallet"))

    def probes(text: str) -> list[tuple[str, Message, str]]:
        """test_security_inputs' calls with ``text`` as the big field (and the token)."""
        return [
            ("WalletService/GetBalance", wallet_pb2.GetBalanceRequest(player_id=text), operator),
            ("WalletService/GetBalance", wallet_pb2.GetBalanceRequest(player_id=text), alice),
            ("RegistrationService/Register",
             registration_pb2.RegisterRequest(request_id="r", tier_id=text, entries=1), alice),
            ("RegistrationService/Register",
             registration_pb2.RegisterRequest(request_id=text, tier_id=tier, entries=99), alice),
            ("WalletService/Deposit",
             wallet_pb2.DepositRequest(transfer_id=text, player_id=text, amount=1), operator),
            ("RegistrationService/CancelTable",
             registration_pb2.CancelTableRequest(table_id=text), operator),
        ]  # fmt: skip

    before = await wallet.GetBalance(wallet_pb2.GetBalanceRequest(player_id="alice"),
                                     metadata=w.ops)  # fmt: skip
    over = probes("x" * 1_000_000)
    near = probes("y" * LIMIT)  # the messages just over the limit (by a few bytes)
    for (name, request, token), (_, close, _) in zip(over, near, strict=True):
        rpc = rpc_named(name)
        internal = exposure(*name.split("/")) == access_pb2.EXPOSURE_INTERNAL
        assert close.ByteSize() > LIMIT, (name, close.ByteSize())
        want = "unimplemented" if internal else "resource_exhausted"
        for message in (request, close):
            for protocol in PROTOCOLS:
                answer = await through_client(edge, rpc, message, token, protocol)
                assert answer.code == want, (name, protocol, message.ByteSize(), answer.status)
                assert len(answer.message) < 200, answer.message
    # Under the limit: what the service answers natively, code and message.
    under = probes("z" * 30_000)  # (Deposit carries it twice)
    for name, request, token in under:
        rpc = rpc_named(name)
        assert request.ByteSize() < LIMIT
        internal = exposure(*name.split("/")) == access_pb2.EXPOSURE_INTERNAL
        reference = await native(platform, rpc, request, token)
        assert reference.code not in ("unknown", "internal", "ok"), (name, reference.status)
        for protocol in PROTOCOLS:
            answer = await through_client(edge, rpc, request, token, protocol)
            if internal:
                assert answer.code == "unimplemented", (name, protocol, answer.status)
            else:
                assert answer.status == reference.status, (name, protocol, answer.status)
    after = await wallet.GetBalance(wallet_pb2.GetBalanceRequest(player_id="alice"),
                                    metadata=w.ops)  # fmt: skip
    assert after == before  # nothing of it registered alice or moved her money
