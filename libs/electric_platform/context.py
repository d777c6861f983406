"""Per-call context: request id, correlation id, causation id and the principal.

The server interceptors bind these for the duration of each gRPC call, so servicers,
handlers and log lines see them without passing them around. The correlation and causation
ids live in :mod:`electric_eventlog.causality` (the event store and the consumers use them
too); outgoing calls to other services propagate them with :func:`outgoing_metadata`.
"""

from __future__ import annotations

import uuid
from contextvars import ContextVar

from electric_eventlog import causality

#: Metadata key of the request id: one id per gRPC call (generated when absent).
REQUEST_ID_KEY = "x-request-id"
#: Metadata key of the correlation id: shared by all calls/events caused by one user action.
CORRELATION_ID_KEY = "x-correlation-id"
#: Metadata key of the causation id: the event (or request) that caused a service-to-service
#: call, e.g. the TableFilled that owes a buy-in post; the callee records it as the causation
#: of the events the call appends.
CAUSATION_ID_KEY = "x-causation-id"

_request_id: ContextVar[str] = ContextVar("electric_request_id", default="")


def new_id() -> str:
    """A fresh random id (UUID4, canonical text)."""
    return str(uuid.uuid4())


def request_id() -> str:
    """The request id of the current call, or "" outside a call."""
    return _request_id.get()


def correlation_id() -> str:
    """The correlation id of the current call or unit of work, or ""."""
    return causality.correlation_id()


def causation_id() -> str:
    """The causation id of the current call or unit of work, or ""."""
    return causality.causation_id()


def bind_ids(request: str, correlation: str, causation: str = "") -> None:
    """Set the ids of the current context (the interceptor does this per call).

    ``causation`` defaults to ``request``: the events a call appends are caused by it."""
    _request_id.set(request)
    causality.set_ids(correlation, causation or request)


def outgoing_metadata(token: str | None = None) -> tuple[tuple[str, str], ...]:
    """Metadata for a call to another service: correlation and causation ids propagated,
    a new request id.

    ``token`` (a bearer token, e.g. from :class:`electric_platform.auth.TokenSource`) adds an
    ``authorization`` entry.
    """
    request = new_id()
    md: list[tuple[str, str]] = [
        (REQUEST_ID_KEY, request),
        (CORRELATION_ID_KEY, correlation_id() or request_id() or request),
    ]
    causation = causation_id() or request_id()
    if causation:
        md.append((CAUSATION_ID_KEY, causation))
    if token:
        md.append(("authorization", f"Bearer {token}"))
    return tuple(md)
