"""Interceptors on a real in-process grpc.aio server (127.0.0.1:0): auth, errors, metrics, ids."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
import jwt
import pytest
from electric_clients.errors import error_detail
from electric_platform import (
    AuthInterceptor,
    ContextInterceptor,
    FailedPrecondition,
    MetricsInterceptor,
    NotFound,
    Role,
    ServiceMetrics,
    correlation_id,
    current_principal,
    issue_token,
    request_id,
    require_role,
)
from electric_platform.errors import MAX_MESSAGE
from electric_platform.keys import SigningKey
from google.protobuf import wrappers_pb2
from google.rpc.error_details_pb2 import BadRequest

from tests.support.auth import ISSUER_KEY, KEYS, KEYSET, signing_key

SVC = "test.v1.EchoService"


def _ser(m: Any) -> bytes:
    return bytes(m.SerializeToString())


class _Echo:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self.release = asyncio.Event()

    async def echo(self, req: wrappers_pb2.StringValue, ctx: Any) -> wrappers_pb2.StringValue:
        p = current_principal()
        self.seen.append((p.subject, request_id(), correlation_id()))
        if req.value == "missing":
            raise NotFound("table 'x' does not exist")
        if req.value == "detail":
            raise FailedPrecondition("not enough", detail=wrappers_pb2.Int64Value(value=42))
        if req.value == "boom":
            raise RuntimeError("bug")
        if req.value == "overflow":
            raise OverflowError("Python int too large to convert to SQLite INTEGER")
        if req.value.startswith("echo:"):
            raise NotFound(
                f"table {req.value!r} does not exist",
                detail=BadRequest(
                    field_violations=[BadRequest.FieldViolation(field="x", description=req.value)]
                ),
            )
        return wrappers_pb2.StringValue(value=f"{p.subject}:{req.value}")

    async def operator_only(
        self, req: wrappers_pb2.StringValue, ctx: Any
    ) -> wrappers_pb2.StringValue:
        require_role(Role.OPERATOR)
        return req

    async def stream(
        self, req: wrappers_pb2.StringValue, ctx: Any
    ) -> AsyncIterator[wrappers_pb2.StringValue]:
        count = 10_000 if req.value == "forever" else 3
        for i in range(count):
            if req.value == "forever":
                await asyncio.sleep(0.2)
            yield wrappers_pb2.StringValue(value=f"{req.value}{i}")

    async def quiet(
        self, req: wrappers_pb2.StringValue, ctx: Any
    ) -> AsyncIterator[wrappers_pb2.StringValue]:
        yield wrappers_pb2.StringValue(value="hello")
        await asyncio.Event().wait()  # then nothing, ever: the expiry must still end it
        yield wrappers_pb2.StringValue(value="never")


def _handlers(echo: _Echo) -> grpc.GenericRpcHandler:
    des = wrappers_pb2.StringValue.FromString
    return grpc.method_handlers_generic_handler(
        SVC,
        {
            "Echo": grpc.unary_unary_rpc_method_handler(
                echo.echo, request_deserializer=des, response_serializer=_ser
            ),
            "OperatorOnly": grpc.unary_unary_rpc_method_handler(
                echo.operator_only, request_deserializer=des, response_serializer=_ser
            ),
            "Stream": grpc.unary_stream_rpc_method_handler(
                echo.stream, request_deserializer=des, response_serializer=_ser
            ),
            "Quiet": grpc.unary_stream_rpc_method_handler(
                echo.quiet, request_deserializer=des, response_serializer=_ser
            ),
        },
    )


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, _Echo, ServiceMetrics]]:
    metrics = ServiceMetrics("test")
    echo = _Echo()
    srv = grpc.aio.server(
        interceptors=[
            ContextInterceptor("test"),
            MetricsInterceptor(metrics),
            AuthInterceptor(KEYSET),
        ]
    )
    srv.add_generic_rpc_handlers((_handlers(echo),))
    port = srv.add_insecure_port("127.0.0.1:0")
    await srv.start()
    try:
        yield f"127.0.0.1:{port}", echo, metrics
    finally:
        await srv.stop(0)


def _md(sub: str = "alice", role: str = "player", ttl: float = 60, key: Any = None) -> Any:
    signer = key or signing_key(sub, role)
    return (("authorization", f"Bearer {issue_token(sub, role, signer, ttl)}"),)


def _forged(claims: dict[str, Any], key: Any = None) -> Any:
    signer = key or ISSUER_KEY
    token = jwt.encode(claims, signer.private, algorithm="EdDSA", headers={"kid": signer.kid})
    return (("authorization", f"Bearer {token}"),)


def _claims(**over: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {"sub": "a", "role": "player", "iat": now, "exp": now + 60}
    return {**base, "iss": "electric", "aud": "electric", **over}


async def _unary(addr: str, method: str, value: str, md: Any = None) -> str:
    async with grpc.aio.insecure_channel(addr) as ch:
        call = ch.unary_unary(
            f"/{SVC}/{method}",
            request_serializer=_ser,
            response_deserializer=wrappers_pb2.StringValue.FromString,
        )
        resp = await call(wrappers_pb2.StringValue(value=value), metadata=md, timeout=5)
        return str(resp.value)


async def _code(addr: str, method: str, value: str, md: Any = None) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await _unary(addr, method, value, md)
    return info.value


def _sample(metrics: ServiceMetrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_valid_token_reaches_servicer_with_principal_and_ids(server: Any) -> None:
    addr, echo, _ = server
    md = (*_md("alice"), ("x-request-id", "req-1"), ("x-correlation-id", "corr-1"))
    assert await _unary(addr, "Echo", "hi", md) == "alice:hi"
    assert echo.seen == [("alice", "req-1", "corr-1")]
    await _unary(addr, "Echo", "again", _md("bob"))
    sub, req, corr = echo.seen[-1]
    assert sub == "bob" and len(req) == 36 and corr == req  # generated; correlation = request


@pytest.mark.parametrize(
    ("md", "fragment"),
    [
        (lambda: None, "missing authorization"),
        (lambda: (("authorization", "Basic abc"),), "Bearer"),
        (lambda: (("authorization", "Bearer not.a.jwt"),), "not a JWT"),
        (lambda: _md(key=SigningKey.generate(ISSUER_KEY.kid)), "signature"),
        (lambda: _md(key=SigningKey.generate("stranger")), "unknown key"),
        (lambda: _md(ttl=-60), "expired"),
        (lambda: _md(ttl=10 * 365 * 86400), "lifetime"),
        (lambda: _forged(_claims(role="king")), "role"),
        (lambda: _forged(_claims(iss="elsewhere")), "issuer"),
        (lambda: _forged(_claims(aud="elsewhere")), "audience"),
        (
            lambda: _forged(_claims(sub="alice", role="player"), KEYS.services["wallet"]),
            "may not sign",
        ),
        (
            lambda: (
                ("authorization", "Bearer " + jwt.encode(_claims(), "x" * 40, algorithm="HS256")),
            ),
            "unknown key",
        ),
    ],
)
async def test_bad_credentials_are_unauthenticated(server: Any, md: Any, fragment: str) -> None:
    # The metadata is built when the test runs, not at collection: the tokens carry iat/exp,
    # and a full suite reaches this test minutes after collecting it.
    addr, echo, _ = server
    err = await _code(addr, "Echo", "hi", md())
    assert err.code() is grpc.StatusCode.UNAUTHENTICATED
    assert fragment in (err.details() or "")
    assert echo.seen == []


async def test_wrong_role_is_permission_denied(server: Any) -> None:
    addr, _, _ = server
    err = await _code(addr, "OperatorOnly", "x", _md(role="player"))
    assert err.code() is grpc.StatusCode.PERMISSION_DENIED
    assert "operator" in (err.details() or "")
    assert await _unary(addr, "OperatorOnly", "x", _md(role="operator")) == "x"


async def test_service_errors_map_to_status_with_detail(server: Any) -> None:
    addr, _, _ = server
    err = await _code(addr, "Echo", "missing", _md())
    assert err.code() is grpc.StatusCode.NOT_FOUND
    assert err.details() == "table 'x' does not exist"
    err = await _code(addr, "Echo", "detail", _md())
    assert err.code() is grpc.StatusCode.FAILED_PRECONDITION
    detail = wrappers_pb2.Int64Value()
    assert error_detail(err, detail) and detail.value == 42
    # The last resort: an unexpected error is INTERNAL with no internals in the message, an
    # input error that slipped past validation (SQLite's OverflowError) INVALID_ARGUMENT.
    err = await _code(addr, "Echo", "boom", _md())
    assert err.code() is grpc.StatusCode.INTERNAL
    assert "bug" not in (err.details() or "") and "RuntimeError" not in (err.details() or "")
    assert (err.details() or "").startswith("internal error (request id ")
    err = await _code(addr, "Echo", "overflow", _md())
    assert err.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "SQLite" not in (err.details() or "")


async def test_red_metrics_count_codes_and_streams(server: Any) -> None:
    addr, _, metrics = server
    labels = {"grpc_service": SVC, "grpc_method": "Echo", "grpc_type": "unary"}
    await _unary(addr, "Echo", "a", _md())
    await _unary(addr, "Echo", "b", _md())
    await _code(addr, "Echo", "missing", _md())
    await _code(addr, "Echo", "a", None)
    handled = "grpc_server_handled_total"
    assert _sample(metrics, handled, **labels, grpc_code="OK") == 2
    assert _sample(metrics, handled, **labels, grpc_code="NOT_FOUND") == 1
    assert _sample(metrics, handled, **labels, grpc_code="UNAUTHENTICATED") == 1
    assert _sample(metrics, "grpc_server_started_total", **labels) == 4
    assert _sample(metrics, "grpc_server_handling_seconds_count", **labels) == 4
    assert _sample(metrics, "grpc_server_in_flight", **labels) == 0

    async with grpc.aio.insecure_channel(addr) as ch:
        call = ch.unary_stream(
            f"/{SVC}/Stream",
            request_serializer=_ser,
            response_deserializer=wrappers_pb2.StringValue.FromString,
        )
        got = [m.value async for m in call(wrappers_pb2.StringValue(value="s"), metadata=_md())]
    assert got == ["s0", "s1", "s2"]
    slabels = {"grpc_service": SVC, "grpc_method": "Stream", "grpc_type": "server_stream"}
    assert _sample(metrics, handled, **slabels, grpc_code="OK") == 1
    assert _sample(metrics, "grpc_server_msg_sent_total", **slabels) == 3


async def test_bounded_echo_of_a_megabyte_input(server: Any) -> None:
    """A 1 MB input echoed in an error message and a detail comes back bounded."""
    addr, _, _ = server
    huge = "echo:" + "A" * 1_000_000
    err = await _code(addr, "Echo", huge, _md())
    assert err.code() is grpc.StatusCode.NOT_FOUND
    details = err.details() or ""
    assert len(details) <= MAX_MESSAGE + 1 and "AAAA…" in details
    trailer = dict(err.trailing_metadata() or ())
    assert len(trailer.get("grpc-status-details-bin", b"")) < 2_000
    violation = BadRequest()
    assert error_detail(err, violation)
    assert len(violation.field_violations[0].description) <= 65


async def _stream_until_end(addr: str, method: str, value: str, md: Any) -> tuple[list[str], Any]:
    got: list[str] = []
    async with grpc.aio.insecure_channel(addr) as ch:
        call = ch.unary_stream(
            f"/{SVC}/{method}",
            request_serializer=_ser,
            response_deserializer=wrappers_pb2.StringValue.FromString,
        )
        try:
            async for m in call(wrappers_pb2.StringValue(value=value), metadata=md, timeout=15):
                got.append(m.value)
        except grpc.aio.AioRpcError as err:
            return got, err
    return got, None


async def test_streams_end_with_unauthenticated_when_the_token_expires(server: Any) -> None:
    """A 2-second token: a busy stream and an idle stream both end with UNAUTHENTICATED at
    expiry (the old behaviour kept sending for as long as the stream lived)."""
    addr, _, metrics = server
    started = time.monotonic()
    (busy, busy_err), (idle, idle_err) = await asyncio.gather(
        _stream_until_end(addr, "Stream", "forever", _md(ttl=2)),
        _stream_until_end(addr, "Quiet", "x", _md(ttl=2)),
    )
    elapsed = time.monotonic() - started
    assert busy_err is not None and busy_err.code() is grpc.StatusCode.UNAUTHENTICATED
    assert idle_err is not None and idle_err.code() is grpc.StatusCode.UNAUTHENTICATED
    assert "expired" in (busy_err.details() or "")
    assert 1 <= len(busy) <= 12 and idle == ["hello"]
    assert elapsed < 5, elapsed
    labels = {"grpc_service": SVC, "grpc_method": "Quiet", "grpc_type": "server_stream"}
    handled = "grpc_server_handled_total"
    assert _sample(metrics, handled, **labels, grpc_code="UNAUTHENTICATED") == 1
    # A token that is valid for longer lets the same stream run to its natural end.
    got, err = await _stream_until_end(addr, "Stream", "s", _md(ttl=60))
    assert err is None and got == ["s0", "s1", "s2"]


async def test_undecodable_request_bytes_are_invalid_argument(server: Any) -> None:
    """Bytes that are not the method's message: INVALID_ARGUMENT, not gRPC's UNKNOWN with the
    parser's text."""
    addr, echo, _ = server
    async with grpc.aio.insecure_channel(addr) as ch:
        for method in ("Echo", "Stream"):
            kind = ch.unary_unary if method == "Echo" else ch.unary_stream
            call = kind(
                f"/{SVC}/{method}",
                request_serializer=lambda b: b,
                response_deserializer=lambda b: b,
            )
            with pytest.raises(grpc.aio.AioRpcError) as info:
                result = call(b"\xff\xff\xff\xff", metadata=_md(), timeout=5)
                if method == "Echo":
                    await result
                else:
                    async for _ in result:
                        pass
            assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT, method
            assert "Wire format" not in (info.value.details() or "")
    assert echo.seen == []
