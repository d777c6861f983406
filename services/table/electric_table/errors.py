"""The table's typed refusals and failures → gRPC statuses, by type (the service's edge).

The domain refuses with `InvalidCommand` (malformed: INVALID_ARGUMENT) or `NotAllowedNow`
(the rules forbid it now: FAILED_PRECONDITION); any other `Rejected` is a precondition
failure too. A casino round's refusal is INVALID_ARGUMENT for a bad amount and
FAILED_PRECONDITION otherwise (its message prefixed with its reason). A `StaleCommand`
carries the `electric.common.v1.StaleCommand` detail (the hand and action it answered,
and the table's). The handlers' own failures (`refusals`) map here too. Registered with
the platform's status table so every edge answers alike: the handlers raise typed errors
and never build a status.
"""

from __future__ import annotations

import grpc
from electric.common.v1 import errors_pb2
from electric_domain.casino.common.errors import Rejected as CasinoRejected
from electric_domain.casino.common.errors import RejectReason as CasinoRejectReason
from electric_domain.tournament import InvalidCommand, NotAllowedNow, Rejected, StaleCommand
from electric_eventlog.fencing import FencedError
from electric_platform import (
    FailedPrecondition,
    InvalidArgument,
    ServiceError,
    map_error,
    map_status,
)
from electric_platform.errors import service_error_for

from electric_table.refusals import (
    BadRequest,
    ConcurrentChange,
    NotKnown,
    NotNow,
    NotPermitted,
    RepeatedRefusal,
    TableMoved,
    TryAgain,
    WalletRefused,
)

map_status(Rejected, grpc.StatusCode.FAILED_PRECONDITION)
map_status(InvalidCommand, grpc.StatusCode.INVALID_ARGUMENT)
map_status(NotAllowedNow, grpc.StatusCode.FAILED_PRECONDITION)
#: A write by an instance that lost the table's ownership (docs/scaling.md): not applied,
#: retry (the retry reaches the new owner).
map_status(FencedError, grpc.StatusCode.ABORTED)
map_status(BadRequest, grpc.StatusCode.INVALID_ARGUMENT)
map_status(NotPermitted, grpc.StatusCode.PERMISSION_DENIED)
map_status(NotKnown, grpc.StatusCode.NOT_FOUND)
map_status(NotNow, grpc.StatusCode.FAILED_PRECONDITION)
map_status(TryAgain, grpc.StatusCode.UNAVAILABLE)
map_status(TableMoved, grpc.StatusCode.ABORTED)
map_status(ConcurrentChange, grpc.StatusCode.ABORTED)


def _stale(error: StaleCommand) -> ServiceError:
    return FailedPrecondition(
        str(error),
        detail=errors_pb2.StaleCommand(
            requested_hand_number=error.requested_hand,
            requested_action_seq=error.requested_seq or 0,
            current_hand_number=error.current_hand,
            current_action_seq=error.current_seq,
        ),
    )


def _repeated(error: RepeatedRefusal) -> ServiceError:
    return ServiceError(error.message, code=grpc.StatusCode[error.status])


def _casino(rej: CasinoRejected) -> ServiceError:
    """A casino round's refusal: a bad amount is the caller's to fix; anything else is
    what the rules forbid now, named by its reason."""
    if rej.reason is CasinoRejectReason.BAD_AMOUNT:
        return InvalidArgument(str(rej))
    return FailedPrecondition(f"{rej.reason.value}: {rej}")


def _wallet_refused(error: WalletRefused) -> ServiceError:
    return FailedPrecondition(error.message, detail=error.detail)


map_error(StaleCommand, _stale)
map_error(WalletRefused, _wallet_refused)
map_error(RepeatedRefusal, _repeated)
map_error(CasinoRejected, _casino)


def service_error(error: BaseException) -> ServiceError:
    """The `ServiceError` to answer for ``error`` (a refusal, or already a ServiceError)."""
    return service_error_for(error)


def stored_answer(error: BaseException | None) -> tuple[str, str]:
    """The status name and message stored with a request's answer (``OK`` and "" for
    none): a retry of the same request id answers them again (`RepeatedRefusal`)."""
    if error is None:
        return "OK", ""
    answer = service_error(error)
    return answer.code.name, answer.message
