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

Bounded echo: a message never carries more than :data:`MAX_WORD` characters of one word
(a run without spaces, e.g. an echoed id) nor more than :data:`MAX_MESSAGE` characters in
all (:func:`bound_text`, applied by the :class:`ServiceError` constructor and to the text
fields of details), so a 1 MB input never comes back as a 1 MB error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from electric_eventlog.errors import (
    ConcurrencyError,
    DuplicateEventError,
    EventLogError,
    SchemaError,
    StreamNotFoundError,
)
from google.protobuf import any_pb2
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.rpc import status_pb2
from grpc_status import rpc_status
from sqlalchemy import exc as sa_exc

from electric_platform.context import request_id

#: Trailer key that carries a serialized ``google.rpc.Status``.
STATUS_DETAILS_KEY = "grpc-status-details-bin"
#: Longest run of non-space characters an error message keeps (then "…").
MAX_WORD = 64
#: Longest error message (then "…").
MAX_MESSAGE = 512
_LONG_WORD = re.compile(r"\S{" + str(MAX_WORD + 1) + ",}")


def bound_text(text: str) -> str:
    """``text`` with every word cut to :data:`MAX_WORD` characters and the whole to
    :data:`MAX_MESSAGE`, each cut marked with "…"."""
    if len(text) > 4 * MAX_MESSAGE:  # don't scan a megabyte for words
        text = text[: 4 * MAX_MESSAGE]
    text = _LONG_WORD.sub(lambda m: m.group(0)[:MAX_WORD] + "…", text)
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + "…"
    return text


def bound_detail(detail: Message) -> Message:
    """A copy of ``detail`` whose string fields (nested too) are bounded by :func:`bound_text`."""
    copy = type(detail)()
    copy.CopyFrom(detail)
    _bound_fields(copy)
    return copy


def _bound_fields(message: Message) -> None:
    for fd, value in message.ListFields():
        repeated = fd.is_repeated
        if fd.type == FieldDescriptor.TYPE_STRING:
            if repeated:
                bounded = [bound_text(v) for v in value]
                del value[:]
                value.extend(bounded)
            else:
                setattr(message, fd.name, bound_text(value))
        elif fd.type == FieldDescriptor.TYPE_MESSAGE:
            if fd.message_type is None or fd.message_type.GetOptions().map_entry:
                continue
            for item in value if repeated else [value]:
                _bound_fields(item)


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
        message = bound_text(message)
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
    # Input the edge did not validate reaching a layer that cannot hold it (e.g. SQLite's
    # "Python int too large to convert to SQLite INTEGER"): the caller's fault.
    OverflowError: grpc.StatusCode.INVALID_ARGUMENT,
}

#: Fixed messages of the last-resort mapping (the error's own text may hold internals).
_GENERIC_MESSAGES: dict[grpc.StatusCode, str] = {
    grpc.StatusCode.INVALID_ARGUMENT: "a value in the request is out of range",
}


def map_status(error_type: type[BaseException], code: grpc.StatusCode) -> None:
    """Answer ``code`` for errors of ``error_type`` (and its subclasses) at the edge."""
    _STATUS_BY_TYPE[error_type] = code


#: Typed errors whose answer depends on their fields (:func:`map_error`).
_CONVERTERS: dict[type[BaseException], Callable[[Any], ServiceError]] = {}


_E = TypeVar("_E", bound=BaseException)


def map_error(error_type: type[_E], convert: Callable[[_E], ServiceError]) -> None:
    """Answer ``convert(error)`` for errors of ``error_type`` (and its subclasses) at the
    edge: for a typed error whose status or rich detail depends on its fields (a refusal
    stored with its status, a stale command naming the hand it answered). Handlers raise
    such errors and never build a transport status themselves (docs/architecture.md)."""
    _CONVERTERS[error_type] = convert


def _converted(error: BaseException) -> ServiceError | None:
    for klass in type(error).__mro__:
        convert = _CONVERTERS.get(klass)
        if convert is not None:
            return convert(error)
    return None


def status_for(error: BaseException) -> grpc.StatusCode:
    """The gRPC status code for ``error``, by type.

    A :class:`ServiceError` answers its own code; the event log's errors map as listed in
    ``_STATUS_BY_TYPE`` (a :class:`ConcurrencyError` is ``ABORTED``: re-read and retry);
    anything else is ``INTERNAL``.
    """
    if isinstance(error, ServiceError):
        return error.code
    converted = _converted(error)
    if converted is not None:
        return converted.code
    for klass in type(error).__mro__:
        code = _STATUS_BY_TYPE.get(klass)
        if code is not None:
            return code
    return grpc.StatusCode.INTERNAL


def service_error_for(error: BaseException) -> ServiceError:
    """The :class:`ServiceError` to answer for ``error`` (the last resort at the edge).

    A :class:`ServiceError` is itself. Types registered with :func:`map_status` (typed domain
    errors) keep their (bounded) message; input errors such as ``OverflowError`` get a fixed
    message; anything else is INTERNAL with only the request id, never the error's text. A
    failed call to another service is UNAVAILABLE when that service is unavailable.
    """
    if isinstance(error, ServiceError):
        return error
    converted = _converted(error)
    if converted is not None:
        return converted
    if isinstance(error, grpc.aio.AioRpcError):
        if error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return Unavailable("a service this call depends on is unavailable; retry later")
        return ServiceError(_internal_message(), code=grpc.StatusCode.INTERNAL)
    if database_unavailable(error):
        return Unavailable("the database is unavailable; retry later")
    code = status_for(error)
    if code is grpc.StatusCode.INTERNAL:
        return ServiceError(_internal_message(), code=code)
    generic = _GENERIC_MESSAGES.get(code) if isinstance(error, OverflowError) else None
    return ServiceError(generic or str(error) or code.name.lower(), code=code)


#: PostgreSQL SQLSTATEs of a server that is away or in trouble, not of a wrong call: 08
#: connection exception, 57P operator intervention (admin or crash shutdown, cannot connect
#: now: a restart), 53 insufficient resources (disk full, out of memory, too many
#: connections), 58 system error (an I/O error: a failing or stalled disk), 57014 a query
#: cancelled (statement timeout on a slow disk), 55P03 a lock wait that timed out (behind a
#: stalled writer), 25P03 a transaction ended for idling (its client stalled). The same
#: request can be retried. (Issue 28: streaming calls answered INTERNAL around a PostgreSQL
#: restart and a slow disk.)
_AWAY_SQLSTATES = ("08", "57P", "53", "58", "57014", "55P03", "25P03")


def database_unavailable(error: BaseException) -> bool:
    """``error`` says the database is down, restarting or busy, not that the call was wrong:
    the caller may retry the same request (found by the chaos run's database restarts,
    which clients saw as INTERNAL)."""
    if isinstance(error, sa_exc.TimeoutError):  # no pooled connection in time
        return True
    if isinstance(error, sa_exc.PendingRollbackError):  # its connection dropped mid-way
        return True
    if _is_psycopg(error):  # raised by the store's own psycopg path, not wrapped
        return _psycopg_away(error)
    if not isinstance(error, sa_exc.DBAPIError):
        return False
    if error.connection_invalidated:
        return True
    orig = error.orig
    state = getattr(orig, "sqlstate", None)
    if isinstance(state, str):
        return state.startswith(_AWAY_SQLSTATES)
    if type(orig).__module__.startswith("psycopg"):  # refused before any server answer
        return isinstance(error, sa_exc.OperationalError)
    return getattr(orig, "sqlite_errorname", "") in ("SQLITE_BUSY", "SQLITE_LOCKED")


def _is_psycopg(error: BaseException) -> bool:
    return type(error).__module__.startswith("psycopg")


def _psycopg_away(error: BaseException) -> bool:
    """A raw psycopg error: away when its SQLSTATE says so, or when it is an
    ``OperationalError`` without one (the connection failed before any server answer)."""
    state = getattr(error, "sqlstate", None)
    if isinstance(state, str):
        return state.startswith(_AWAY_SQLSTATES)
    return any(klass.__name__ == "OperationalError" for klass in type(error).__mro__)


def _internal_message() -> str:
    rid = request_id()
    return f"internal error (request id {rid})" if rid else "internal error"


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
