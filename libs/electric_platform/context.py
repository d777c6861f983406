"""Per-call context: request id, correlation id and the authenticated principal.

The server interceptors bind these contextvars for the duration of each gRPC call, so
servicers, handlers and log lines see them without passing them around. Outgoing calls to
other services propagate them with :func:`outgoing_metadata`.
"""

from __future__ import annotations

import uuid
from contextvars import ContextVar

#: Metadata key of the request id: one id per gRPC call (generated when absent).
REQUEST_ID_KEY = "x-request-id"
#: Metadata key of the correlation id: shared by all calls/events caused by one user action.
CORRELATION_ID_KEY = "x-correlation-id"

_request_id: ContextVar[str] = ContextVar("electric_request_id", default="")
_correlation_id: ContextVar[str] = ContextVar("electric_correlation_id", default="")


def new_id() -> str:
    """A fresh random id (UUID4, canonical text)."""
    return str(uuid.uuid4())


def request_id() -> str:
    """The request id of the current call, or "" outside a call."""
    return _request_id.get()


def correlation_id() -> str:
    """The correlation id of the current call, or "" outside a call."""
    return _correlation_id.get()


def bind_ids(request: str, correlation: str) -> None:
    """Set the ids of the current context (the interceptor does this per call)."""
    _request_id.set(request)
    _correlation_id.set(correlation)


def outgoing_metadata(token: str | None = None) -> tuple[tuple[str, str], ...]:
    """Metadata for a call to another service: correlation id propagated, new request id.

    ``token`` (a bearer token, e.g. from :class:`electric_platform.auth.TokenSource`) adds an
    ``authorization`` entry.
    """
    md: list[tuple[str, str]] = [
        (REQUEST_ID_KEY, new_id()),
        (CORRELATION_ID_KEY, correlation_id() or request_id() or new_id()),
    ]
    if token:
        md.append(("authorization", f"Bearer {token}"))
    return tuple(md)
