"""The lobby's typed refusals mapped, by TYPE, to gRPC errors with their rich details (used by
the servicer, :mod:`.api`, at the edge)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from electric.common.v1 import errors_pb2
from electric_clients.accounts import player_account
from electric_clients.convert import usd
from electric_domain import lobby
from electric_platform.errors import (
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    ServiceError,
)

from electric_registration.fill import SeedLost

E = TypeVar("E", bound=lobby.LobbyError)
Mapper = Callable[[E], ServiceError]
_MAPPERS: dict[type[lobby.LobbyError], Callable[[Any], ServiceError]] = {}


def _maps(error_type: type[E]) -> Callable[[Mapper[E]], Mapper[E]]:
    def register(fn: Mapper[E]) -> Mapper[E]:
        _MAPPERS[error_type] = fn
        return fn

    return register


def _info(reason: int, **meta: str) -> errors_pb2.ErrorInfo:
    return errors_pb2.ErrorInfo(reason=reason, domain="registration", metadata=meta)  # type: ignore[arg-type]


@_maps(lobby.BadEntryCount)
def _bad_entries(e: lobby.BadEntryCount) -> ServiceError:
    violation = errors_pb2.FieldViolation(field="entries", description=f"1..{e.maximum}")
    return InvalidArgument(str(e), detail=errors_pb2.BadRequest(field_violations=[violation]))


@_maps(lobby.UnknownTier)
def _unknown_tier(e: lobby.UnknownTier) -> ServiceError:
    return NotFound(
        str(e), detail=errors_pb2.ResourceInfo(resource_type="tier", resource_id=e.tier_id)
    )


@_maps(lobby.RequestReused)
def _reused(e: lobby.RequestReused) -> ServiceError:
    return AlreadyExists(
        str(e),
        detail=_info(errors_pb2.ERROR_REASON_DUPLICATE_REQUEST, request_id=e.request_id),
    )


@_maps(lobby.AttemptRollingBack)
def _rolling_back(e: lobby.AttemptRollingBack) -> ServiceError:
    return Aborted(
        str(e), detail=_info(errors_pb2.ERROR_REASON_WRONG_STATE, request_id=e.request_id)
    )


@_maps(lobby.InsufficientFunds)
def _insufficient(e: lobby.InsufficientFunds) -> ServiceError:
    return FailedPrecondition(
        str(e),
        detail=errors_pb2.InsufficientFunds(
            account_id=player_account(e.player_id),
            available=usd(e.available),
            required=usd(e.required),
        ),
    )


@_maps(lobby.EntryNotFound)
def _no_entry(e: lobby.EntryNotFound) -> ServiceError:
    return NotFound(
        str(e),
        detail=errors_pb2.ResourceInfo(
            resource_type="entry" if e.entry_id else "table",
            resource_id=e.entry_id or e.table_id,
        ),
    )


@_maps(lobby.NotYourEntry)
def _not_yours(e: lobby.NotYourEntry) -> ServiceError:
    return PermissionDenied(str(e))


@_maps(lobby.TableAlreadyFilled)
def _filled(e: lobby.TableAlreadyFilled) -> ServiceError:
    return FailedPrecondition(
        str(e),
        detail=_info(
            errors_pb2.ERROR_REASON_WRONG_STATE, table_id=e.table_id, table_status=e.status
        ),
    )


@_maps(lobby.InvalidDisplayName)
def _bad_name(e: lobby.InvalidDisplayName) -> ServiceError:
    violation = errors_pb2.FieldViolation(field="display_name", description=e.problem)
    return InvalidArgument(str(e), detail=errors_pb2.BadRequest(field_violations=[violation]))


@_maps(lobby.SettingsVersionConflict)
def _settings_conflict(e: lobby.SettingsVersionConflict) -> ServiceError:
    return Aborted(
        str(e),
        detail=errors_pb2.VersionConflict(
            stream_id=f"registration-player-{e.player_id}",
            expected_version=e.expected,
            actual_version=e.actual,
        ),
    )


@_maps(lobby.TableNotFound)
def _no_table(e: lobby.TableNotFound) -> ServiceError:
    return NotFound(
        str(e), detail=errors_pb2.ResourceInfo(resource_type="table", resource_id=e.table_id)
    )


@_maps(lobby.TableNotCancellable)
def _not_cancellable(e: lobby.TableNotCancellable) -> ServiceError:
    return FailedPrecondition(
        str(e),
        detail=_info(
            errors_pb2.ERROR_REASON_WRONG_STATE, table_id=e.table_id, table_status=e.status
        ),
    )


@_maps(SeedLost)
def _seed_lost(e: SeedLost) -> ServiceError:
    # FAILED_PRECONDITION, not INTERNAL: the table is in a state no retry can change (only
    # CancelTable does); the detail names the table and the loss for clients and operators.
    return FailedPrecondition(
        str(e),
        detail=_info(
            errors_pb2.ERROR_REASON_WRONG_STATE,
            table_id=e.table_id,
            needs_cancel="SEED_LOST",
            difference=e.difference,
        ),
    )


def service_error(error: lobby.LobbyError) -> ServiceError:
    """The gRPC error for a lobby refusal (by its type; an unmapped one is a bug)."""
    for klass in type(error).__mro__:
        mapper = _MAPPERS.get(klass)
        if mapper is not None:
            return mapper(error)
    raise TypeError(f"no gRPC mapping for {type(error).__name__}") from error
