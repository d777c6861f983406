"""The table's typed refusals → gRPC statuses, by type (the service's edge).

The domain refuses with `InvalidCommand` (malformed: INVALID_ARGUMENT) or `NotAllowedNow`
(the rules forbid it now: FAILED_PRECONDITION); any other `Rejected` is a precondition
failure too. Registered with the platform's status table so every edge answers alike.
"""

from __future__ import annotations

import grpc
from electric_domain.tournament import InvalidCommand, NotAllowedNow, Rejected
from electric_eventlog.fencing import FencedError
from electric_platform import ServiceError, map_status, status_for

map_status(Rejected, grpc.StatusCode.FAILED_PRECONDITION)
map_status(InvalidCommand, grpc.StatusCode.INVALID_ARGUMENT)
map_status(NotAllowedNow, grpc.StatusCode.FAILED_PRECONDITION)
#: A write by an instance that lost the table's ownership (docs/scaling.md): not applied,
#: retry (the retry reaches the new owner).
map_status(FencedError, grpc.StatusCode.ABORTED)


def service_error(error: BaseException) -> ServiceError:
    """The `ServiceError` to answer for ``error`` (a refusal, or already a ServiceError)."""
    if isinstance(error, ServiceError):
        return error
    return ServiceError(str(error), code=status_for(error))
