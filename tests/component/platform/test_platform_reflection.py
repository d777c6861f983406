"""Server reflection on a real ServiceHost over a real channel: both ``grpc.reflection.v1``
and ``v1alpha`` answer, and the file descriptors carry the protos' comments (source info),
which is what ``grpcurl describe`` prints."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from electric.payout.v1 import payout_pb2, payout_pb2_grpc
from electric_platform import ServiceHost, load_config
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2

from tests.support.auth import auth_env

ROOT = Path(__file__).resolve().parents[3]
PROTO = ROOT / "protos" / "electric" / "payout" / "v1" / "payout.proto"
PATHS = {
    "v1": "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "v1alpha": "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
}


def _comment_in_proto(field_line: str) -> str:
    """The comment written right above ``field_line`` in payout.proto."""
    lines = PROTO.read_text().splitlines()
    index = next(i for i, line in enumerate(lines) if line.strip().startswith(field_line))
    comment = re.sub(r"^\s*//", "", lines[index - 1])
    return comment.strip()


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[ServiceHost]:
    env = {
        "ELECTRIC_VAR_DIR": str(tmp_path),
        "ELECTRIC_GRPC_PORT": "0",
        "ELECTRIC_METRICS_PORT": "-1",
        **auth_env(),
    }

    async def setup(h: ServiceHost) -> None:
        h.add_service(
            payout_pb2.DESCRIPTOR.services_by_name["PayoutService"],
            payout_pb2_grpc.add_PayoutServiceServicer_to_server,
            payout_pb2_grpc.PayoutServiceServicer(),
        )

    h = ServiceHost(load_config("payout", env), setup)
    await h.start()
    try:
        yield h
    finally:
        await h.stop(0)


async def _ask(
    target: str, version: str, **request: Any
) -> reflection_pb2.ServerReflectionResponse:
    # v1 and v1alpha messages are the same on the wire: the v1alpha classes serve both.
    async with grpc.aio.insecure_channel(target) as channel:
        call = channel.stream_stream(
            PATHS[version],
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        stream = call(iter([reflection_pb2.ServerReflectionRequest(**request)]), timeout=10)
        responses = [r async for r in stream]
    assert len(responses) == 1
    return responses[0]


@pytest.mark.parametrize("version", ["v1", "v1alpha"])
async def test_reflection_lists_services_and_serves_field_comments(
    host: ServiceHost, version: str
) -> None:
    target = f"127.0.0.1:{host.grpc_port}"
    listed = await _ask(target, version, list_services="")
    names = {s.name for s in listed.list_services_response.service}
    assert {
        "electric.payout.v1.PayoutService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    } <= names

    found = await _ask(target, version, file_containing_symbol="electric.payout.v1.Prize")
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(b)
        for b in found.file_descriptor_response.file_descriptor_proto
    ]
    by_name = {f.name: f for f in files}
    assert "electric/common/v1/money.proto" in by_name  # dependencies come along
    payout = by_name["electric/payout/v1/payout.proto"]
    message_index = [m.name for m in payout.message_type].index("Prize")
    field_index = [f.name for f in payout.message_type[message_index].field].index(
        "wallet_transfer_id"
    )
    path = [4, message_index, 2, field_index]  # message_type, index, field, index
    comments = [
        loc.leading_comments.strip()
        for loc in payout.source_code_info.location
        if list(loc.path) == path
    ]
    expected = _comment_in_proto("string wallet_transfer_id = 6;")
    assert expected and comments == [expected]
    # The service comment too (what `grpcurl describe electric.payout.v1.PayoutService` shows).
    service_path = [6, 0]
    service_comment = next(
        loc.leading_comments
        for loc in payout.source_code_info.location
        if list(loc.path) == service_path
    )
    assert "exactly once" in service_comment


async def test_reflection_describes_the_v1_reflection_service_itself(host: ServiceHost) -> None:
    target = f"127.0.0.1:{host.grpc_port}"
    found = await _ask(target, "v1", file_containing_symbol="grpc.reflection.v1.ServerReflection")
    (raw,) = found.file_descriptor_response.file_descriptor_proto
    proto = descriptor_pb2.FileDescriptorProto.FromString(raw)
    assert proto.package == "grpc.reflection.v1"
    method = proto.service[0].method[0]
    assert method.input_type == ".grpc.reflection.v1.ServerReflectionRequest"
    missing = await _ask(target, "v1", file_containing_symbol="no.such.Symbol")
    assert missing.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]
