"""Errors with a precise gRPC status.

Servicers and handlers raise :class:`ServiceError` (or a subclass); the platform's server
interceptor turns it into the gRPC status with its human-readable message, so application
code never touches ``context.abort``. An optional protobuf ``detail`` message (e.g.
``electric.common.v1.InsufficientFunds``) travels in the standard ``grpc-status-details-bin``
trailer as a ``google.rpc.Status`` with the detail packed in ``details``, which gRPC client
libraries in every language can decode.
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import any_pb2
from google.protobuf.message import Message

#: Trailer key that carries a serialized ``google.rpc.Status``.
STATUS_DETAILS_KEY = "grpc-status-details-bin"


class ServiceError(Exception):
    """A failure to report to the caller with ``code`` and ``message``."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(
        self,
        message: str,
        *,
        code: grpc.StatusCode | None = None,
        detail: Message | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.detail = detail


class InvalidArgument(ServiceError):
    """The request is malformed (INVALID_ARGUMENT)."""

    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(ServiceError):
    """The addressed entity does not exist (NOT_FOUND)."""

    code = grpc.StatusCode.NOT_FOUND


class AlreadyExists(ServiceError):
    """The entity to create exists already (ALREADY_EXISTS)."""

    code = grpc.StatusCode.ALREADY_EXISTS


class FailedPrecondition(ServiceError):
    """The system is not in a state that allows the command (FAILED_PRECONDITION)."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class Aborted(ServiceError):
    """A concurrency conflict, e.g. a stale version (ABORTED); the caller may retry."""

    code = grpc.StatusCode.ABORTED


class Unauthenticated(ServiceError):
    """Missing, malformed, badly signed or expired credentials (UNAUTHENTICATED)."""

    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(ServiceError):
    """The authenticated principal may not do this (PERMISSION_DENIED)."""

    code = grpc.StatusCode.PERMISSION_DENIED


class Unavailable(ServiceError):
    """A dependency is down or the service is shutting down (UNAVAILABLE)."""

    code = grpc.StatusCode.UNAVAILABLE


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def encode_status_details(code: grpc.StatusCode, message: str, detail: Message) -> bytes:
    """Serialize a ``google.rpc.Status`` {code, message, details: [Any(detail)]}."""
    packed = any_pb2.Any()
    packed.Pack(detail)
    numeric = int(code.value[0])
    out = b""
    if numeric:
        out += _varint(1 << 3 | 0) + _varint(numeric)
    if message:
        out += _field(2, message.encode())
    out += _field(3, packed.SerializeToString())
    return out


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def decode_status_details(data: bytes) -> tuple[int, str, list[any_pb2.Any]]:
    """Parse a ``google.rpc.Status``: (numeric code, message, details)."""
    pos, code, message, details = 0, 0, "", []
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _read_varint(data, pos)
            if number == 1:
                code = value
        elif wire == 2:
            size, pos = _read_varint(data, pos)
            chunk = data[pos : pos + size]
            pos += size
            if number == 2:
                message = chunk.decode()
            elif number == 3:
                item = any_pb2.Any()
                item.ParseFromString(chunk)
                details.append(item)
        else:
            raise ValueError(f"unexpected wire type {wire} in google.rpc.Status")
    return code, message, details


def error_detail(err: object, into: Message) -> bool:
    """Unpack the first detail of ``into``'s type from a gRPC error's trailers into ``into``.

    ``err`` is a ``grpc.aio.AioRpcError`` (or a sync ``grpc.RpcError`` call). True if found.
    """
    getter = getattr(err, "trailing_metadata", None)
    trailers: Any = getter() if callable(getter) else None
    for key, value in trailers or ():
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            for item in decode_status_details(value)[2]:
                if item.TypeName() == into.DESCRIPTOR.full_name:
                    item.Unpack(into)
                    return True
    return False
