"""Errors with a precise gRPC status.

Servicers and handlers raise :class:`ServiceError` (or a subclass); the platform's server
interceptor turns it into the gRPC status with its human-readable message, so application
code never touches ``context.abort``. An optional protobuf ``detail`` message (e.g.
``electric.common.v1.InsufficientFunds``) travels in the standard ``grpc-status-details-bin``
trailer as a ``google.rpc.Status`` with the detail packed in ``details``, which gRPC client
libraries in every language can decode. The ``google.rpc.Status`` is built by
``grpc_status.rpc_status`` (grpcio-status) from ``google.rpc.status_pb2``
(googleapis-common-protos); callers read details back with
:func:`electric_clients.errors.error_detail`.

Errors of the libraries below the edge (the event log's :class:`~electric_eventlog.EventLogError`
family, typed domain errors) carry no gRPC knowledge; :func:`status_for` maps them by type.
"""

from __future__ import annotations

import grpc
from electric_eventlog.errors import (
    ConcurrencyError,
    DuplicateEventError,
    EventLogError,
    SchemaError,
    StreamNotFoundError,
)
from google.protobuf import any_pb2
from google.protobuf.message import Message
from google.rpc import status_pb2
from grpc_status import rpc_status

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


#: gRPC status of error types raised below the edge, most specific type first when walking
#: an error's MRO. Services add their typed domain errors with :func:`map_status`.
_STATUS_BY_TYPE: dict[type[BaseException], grpc.StatusCode] = {
    ConcurrencyError: grpc.StatusCode.ABORTED,
    StreamNotFoundError: grpc.StatusCode.NOT_FOUND,
    DuplicateEventError: grpc.StatusCode.ALREADY_EXISTS,
    SchemaError: grpc.StatusCode.FAILED_PRECONDITION,
    EventLogError: grpc.StatusCode.INTERNAL,
}


def map_status(error_type: type[BaseException], code: grpc.StatusCode) -> None:
    """Answer ``code`` for errors of ``error_type`` (and its subclasses) at the edge."""
    _STATUS_BY_TYPE[error_type] = code


def status_for(error: BaseException) -> grpc.StatusCode:
    """The gRPC status code for ``error``, by type.

    A :class:`ServiceError` answers its own code; the event log's errors map as listed in
    ``_STATUS_BY_TYPE`` (a :class:`ConcurrencyError` is ``ABORTED``: re-read and retry);
    anything else is ``INTERNAL``.
    """
    if isinstance(error, ServiceError):
        return error.code
    for klass in type(error).__mro__:
        code = _STATUS_BY_TYPE.get(klass)
        if code is not None:
            return code
    return grpc.StatusCode.INTERNAL


def rich_status(code: grpc.StatusCode, message: str, detail: Message) -> grpc.Status:
    """The ``grpc.Status`` to abort with: ``code``, ``message`` and ``detail`` packed into a
    ``google.rpc.Status`` in the ``grpc-status-details-bin`` trailer."""
    packed = any_pb2.Any()
    packed.Pack(detail)
    status = status_pb2.Status(code=int(code.value[0]), message=message, details=[packed])
    return rpc_status.to_status(status)


def encode_status_details(code: grpc.StatusCode, message: str, detail: Message) -> bytes:
    """The serialized ``google.rpc.Status`` {code, message, details: [Any(detail)]} that
    travels in the ``grpc-status-details-bin`` trailer."""
    for key, value in rich_status(code, message, detail).trailing_metadata:
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            return value
    raise AssertionError("grpc_status.to_status always sets the details trailer")


def decode_status_details(data: bytes) -> tuple[int, str, list[any_pb2.Any]]:
    """Parse a serialized ``google.rpc.Status``: (numeric code, message, details)."""
    status = status_pb2.Status.FromString(data)
    details: list[any_pb2.Any] = list(status.details)
    return int(status.code), str(status.message), details
