"""One shape for an RPC's answer, whichever way it was called, so a browser call through the
edge (web/edge) can be compared with a native gRPC call field by field:

* :func:`native` — grpcio straight to the service (bytes as sent, the status, the
  ``grpc-status-details-bin`` details);
* :func:`through_client` — connect-python through the edge (:class:`tests.support.web_edge.Edge`,
  Connect or gRPC-Web protocol);
* :func:`raw_post` — plain HTTP through the edge (``requests``: blocking, so call it with
  ``asyncio.to_thread`` while the services run in the test's loop), which sees the exact
  response bytes and headers a browser's ``fetch`` would.

An :class:`Answer`'s code is the lower-case status name shared by gRPC and Connect
(``"permission_denied"``; ``"ok"`` on success), its details are (full type name, bytes).
"""

from __future__ import annotations

import base64
import json
import struct
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import grpc
import requests
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from electric_platform.errors import STATUS_DETAILS_KEY, decode_status_details
from google.protobuf.any_pb2 import Any as AnyProto
from google.protobuf.message import Message

from tests.support.fuzz_values import Rpc
from tests.support.platform_kit import Platform
from tests.support.web_edge import Edge

Detail = tuple[str, bytes]


@dataclass
class Answer:
    """What came back: status, message, details and (on success) the message's bytes."""

    code: str
    message: str = ""
    details: list[Detail] = field(default_factory=list)
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def status(self) -> tuple[str, str, list[Detail]]:
        """Everything a caller can read of a failure."""
        return self.code, self.message, self.details


def _any_detail(item: AnyProto) -> Detail:
    return item.type_url.rsplit("/", 1)[-1], bytes(item.value)


def _identity(data: bytes) -> bytes:
    return data


async def native(
    platform: Platform,
    rpc: Rpc,
    request: Message,
    token: str | None,
    timeout: float | None = 10.0,
) -> Answer:
    """A unary call straight to the service, the response left as bytes."""
    metadata = (("authorization", f"Bearer {token}"),) if token is not None else ()
    call = platform.channel(rpc.service).unary_unary(
        rpc.path, type(request).SerializeToString, _identity
    )(request, metadata=metadata, timeout=timeout)
    try:
        body: bytes = await call
    except grpc.aio.AioRpcError as err:
        details: list[Detail] = []
        trailers: Any = err.trailing_metadata() or ()
        for key, value in trailers:
            if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
                details = [_any_detail(d) for d in decode_status_details(value)[2]]
        return Answer(err.code().name.lower(), err.details() or "", details)
    return Answer("ok", body=body)


async def through_client(
    edge: Edge,
    rpc: Rpc,
    request: Message,
    token: str | None,
    protocol: ProtocolType,
    timeout_ms: int | None = 10_000,
) -> Answer:
    """A unary call through the edge with connect-python (the response re-serialized)."""
    try:
        out = await edge.unary(rpc, request, token=token, protocol=protocol, timeout_ms=timeout_ms)
    except ConnectError as err:
        return Answer(err.code.value, err.message, [_any_detail(d) for d in err.details])
    return Answer("ok", body=out.SerializeToString())


def raw_post(
    url: str,
    path: str,
    body: bytes,
    *,
    token: str | None = None,
    protocol: str = "connect",
    origin: str = "",
    headers: dict[str, str] | None = None,
    timeout: float = 15.0,
) -> Answer:
    """POST one unary call's message as a browser would (``protocol``: ``connect`` or
    ``grpc-web``, binary codec) and decode the answer (blocking)."""
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    if origin:
        sent["Origin"] = origin
    if protocol == "connect":
        sent.setdefault("Content-Type", "application/proto")
        sent.setdefault("Connect-Protocol-Version", "1")
        payload = body
    else:
        sent.setdefault("Content-Type", "application/grpc-web+proto")
        sent.setdefault("X-Grpc-Web", "1")
        payload = b"\x00" + struct.pack(">I", len(body)) + body
    response = requests.post(url.rstrip("/") + path, data=payload, headers=sent, timeout=timeout)
    got = {k.lower(): v for k, v in response.headers.items()}
    if protocol == "connect":
        return _connect_answer(response, got)
    return _grpc_web_answer(response.content, got)


def _connect_answer(response: requests.Response, headers: dict[str, str]) -> Answer:
    if response.status_code == 200:
        return Answer("ok", body=response.content, headers=headers)
    try:
        error: dict[str, Any] = json.loads(response.content)
    except ValueError:
        return Answer(f"http {response.status_code}", response.text, headers=headers)
    details = [
        (str(d["type"]), base64.b64decode(str(d["value"]) + "=" * (-len(str(d["value"])) % 4)))
        for d in error.get("details", ())
    ]
    return Answer(str(error.get("code", "")), str(error.get("message", "")), details, b"", headers)


def _grpc_web_answer(content: bytes, headers: dict[str, str]) -> Answer:
    trailers = {k: v for k, v in headers.items() if k.startswith("grpc-")}
    body = b""
    while len(content) >= 5:
        flag, size = content[0], struct.unpack(">I", content[1:5])[0]
        frame, content = content[5 : 5 + size], content[5 + size :]
        if flag & 0x80:
            for line in frame.decode().split("\r\n"):
                key, sep, value = line.partition(":")
                if sep:
                    trailers[key.strip().lower()] = value.strip()
        else:
            body += frame
    status = int(trailers.get("grpc-status", "2"))
    message = urllib.parse.unquote(trailers.get("grpc-message", ""))
    details: list[Detail] = []
    if "grpc-status-details-bin" in trailers:
        encoded = trailers["grpc-status-details-bin"]
        raw = base64.b64decode(encoded + "=" * (-len(encoded) % 4))
        details = [_any_detail(d) for d in decode_status_details(raw)[2]]
    code = grpc.StatusCode.OK
    for candidate in grpc.StatusCode:
        if candidate.value[0] == status:
            code = candidate
    return Answer(code.name.lower(), message, details, body, headers)
