"""Interceptors on a real in-process grpc.aio server (127.0.0.1:0): auth, errors, metrics, ids."""

from __future__ import annotations

import asyncio
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
from google.protobuf import wrappers_pb2

SECRET = "unit-test-secret-0123456789abcdef0123456789"
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
        return wrappers_pb2.StringValue(value=f"{p.subject}:{req.value}")

    async def operator_only(
        self, req: wrappers_pb2.StringValue, ctx: Any
    ) -> wrappers_pb2.StringValue:
        require_role(Role.OPERATOR)
        return req

    async def stream(
        self, req: wrappers_pb2.StringValue, ctx: Any
    ) -> AsyncIterator[wrappers_pb2.StringValue]:
        for i in range(3):
            yield wrappers_pb2.StringValue(value=f"{req.value}{i}")


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
            AuthInterceptor(SECRET),
        ]
    )
    srv.add_generic_rpc_handlers((_handlers(echo),))
    port = srv.add_insecure_port("127.0.0.1:0")
    await srv.start()
    try:
        yield f"127.0.0.1:{port}", echo, metrics
    finally:
        await srv.stop(0)


def _md(sub: str = "alice", role: str = "player", secret: str = SECRET, ttl: float = 60) -> Any:
    return (("authorization", f"Bearer {issue_token(sub, role, secret, ttl)}"),)


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
        (None, "missing authorization"),
        ((("authorization", "Basic abc"),), "Bearer"),
        ((("authorization", "Bearer not.a.jwt"),), "invalid"),
        (_md(secret="another-secret-0123456789abcdef0123456789"), "signature"),
        (_md(ttl=-60), "expired"),
        (
            (
                (
                    "authorization",
                    "Bearer " + jwt.encode({"sub": "a", "role": "king", "exp": 2**40}, SECRET),
                ),
            ),
            "role",
        ),
    ],
)
async def test_bad_credentials_are_unauthenticated(server: Any, md: Any, fragment: str) -> None:
    addr, echo, _ = server
    err = await _code(addr, "Echo", "hi", md)
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
    err = await _code(addr, "Echo", "boom", _md())
    assert err.code() is grpc.StatusCode.UNKNOWN


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
