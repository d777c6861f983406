"""The access line of every RPC and the ids a call binds (issue 15 item 5, issue 14 item 7),
on a real in-process grpc.aio server (127.0.0.1:0) with the platform's interceptors."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import grpc
import pytest
from electric_platform import AuthInterceptor, ContextInterceptor, get_logger
from electric_platform.context import causation_id, correlation_id, request_id
from electric_platform.log import configure_logging
from google.protobuf import wrappers_pb2

from tests.support.auth import KEYSET
from tests.support.auth import token as make_token

SVC = "test.v1.AccessService"


def _ser(m: Any) -> bytes:
    return bytes(m.SerializeToString())


class _Svc:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    async def echo(self, req: wrappers_pb2.StringValue, ctx: Any) -> wrappers_pb2.StringValue:
        self.seen.append((request_id(), correlation_id(), causation_id()))
        get_logger("electric.test").info("test.inside", detail=req.value)
        if req.value == "boom":
            raise RuntimeError("bug")
        return req

    async def stream(
        self, req: wrappers_pb2.StringValue, ctx: Any
    ) -> AsyncIterator[wrappers_pb2.StringValue]:
        for i in range(2):
            yield wrappers_pb2.StringValue(value=f"{req.value}{i}")


@pytest.fixture
def logs() -> Iterator[io.StringIO]:
    buffer = io.StringIO()
    configure_logging("INFO", "json", stream=buffer)
    yield buffer
    configure_logging("INFO", "json")


@pytest.fixture
async def target() -> AsyncIterator[tuple[str, _Svc]]:
    svc = _Svc()
    des = wrappers_pb2.StringValue.FromString
    handlers = grpc.method_handlers_generic_handler(
        SVC,
        {
            "Echo": grpc.unary_unary_rpc_method_handler(
                svc.echo, request_deserializer=des, response_serializer=_ser
            ),
            "Stream": grpc.unary_stream_rpc_method_handler(
                svc.stream, request_deserializer=des, response_serializer=_ser
            ),
        },
    )
    server = grpc.aio.server(interceptors=[ContextInterceptor("access"), AuthInterceptor(KEYSET)])
    server.add_generic_rpc_handlers((handlers,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}", svc
    finally:
        await server.stop(0)


def _lines(buffer: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(x) for x in buffer.getvalue().splitlines() if x.startswith("{")]


async def test_one_info_access_line_per_call_with_the_ids(
    logs: io.StringIO, target: tuple[str, _Svc]
) -> None:
    address, svc = target
    md = (
        ("authorization", f"Bearer {make_token('alice', 'player')}"),
        ("x-request-id", "req-1"),
        ("x-correlation-id", "corr-1"),
        ("x-causation-id", "cause-1"),
    )
    async with grpc.aio.insecure_channel(address) as ch:
        echo = ch.unary_unary(
            f"/{SVC}/Echo",
            request_serializer=_ser,
            response_deserializer=wrappers_pb2.StringValue.FromString,
        )
        stream = ch.unary_stream(
            f"/{SVC}/Stream",
            request_serializer=_ser,
            response_deserializer=wrappers_pb2.StringValue.FromString,
        )
        await echo(wrappers_pb2.StringValue(value="hi"), metadata=md)
        items = [m.value async for m in stream(wrappers_pb2.StringValue(value="s"), metadata=md)]
        assert items == ["s0", "s1"]
        with pytest.raises(grpc.aio.AioRpcError):
            await echo(wrappers_pb2.StringValue(value="boom"), metadata=md[:1])
        with pytest.raises(grpc.aio.AioRpcError) as denied:
            await echo(wrappers_pb2.StringValue(value="x"))
        assert denied.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert svc.seen[0] == ("req-1", "corr-1", "cause-1")
    # Without ids: a fresh request id that is also the correlation id and the causation id.
    fresh = svc.seen[1]
    assert fresh[0] and fresh[0] == fresh[1] == fresh[2]
    lines = _lines(logs)
    access = [x for x in lines if x["event"] == "rpc.completed"]
    assert [(x["grpc_method"], x["kind"], x["code"], x["level"]) for x in access] == [
        ("Echo", "unary", "OK", "info"),
        ("Stream", "server_stream", "OK", "info"),
        ("Echo", "unary", "INTERNAL", "info"),
        ("Echo", "unary", "UNAUTHENTICATED", "info"),
    ]
    first = access[0]
    assert (first["request_id"], first["correlation_id"], first["causation_id"]) == (
        "req-1",
        "corr-1",
        "cause-1",
    )
    assert first["peer_role"] == "player" and first["service"] == "access"
    assert first["grpc_service"] == SVC and first["duration_ms"] >= 0
    assert access[3]["peer_role"] == "anonymous"
    # A line logged inside the call carries the same ids.
    inside = next(x for x in lines if x["event"] == "test.inside")
    assert (inside["correlation_id"], inside["causation_id"]) == ("corr-1", "cause-1")
    # A server fault also logs rpc.failed (ERROR) with the same fields.
    [failed] = [x for x in lines if x["event"] == "rpc.failed"]
    assert failed["level"] == "error" and failed["code"] == "INTERNAL"
    assert failed["request_id"] == access[2]["request_id"]
