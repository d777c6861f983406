"""Typed errors of the event log, and their mapping onto gRPC status codes.

Every failure the library raises on purpose derives from :class:`EventLogError`, so callers
can catch one family. A version conflict is never swallowed: it surfaces as
:class:`ConcurrencyError`, which an API layer maps to ``grpc.StatusCode.ABORTED`` (the client
re-reads and retries the command).
"""

from __future__ import annotations

import grpc


class EventLogError(Exception):
    """Base class of every error raised on purpose by ``electric_eventlog``."""

    #: gRPC status an API layer should answer with when this error escapes a handler.
    grpc_code: grpc.StatusCode = grpc.StatusCode.INTERNAL


class ConcurrencyError(EventLogError):
    """The stream was not at the expected version (or another writer won the race).

    Raised by :meth:`EventStore.append` when ``expected_version`` does not match the stream's
    current version, or when a concurrent transaction inserted the same
    ``(stream_id, stream_version)`` first. The caller's transaction must be rolled back; the
    command is retried from a fresh read.
    """

    grpc_code = grpc.StatusCode.ABORTED

    def __init__(self, stream_id: str, expected: int | str, actual: int | None) -> None:
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"stream {stream_id!r}: expected version {expected}, found "
            f"{'no stream' if actual is None else actual}"
        )


class StreamNotFoundError(EventLogError):
    """A stream that must exist (``expected_version=STREAM_EXISTS``) does not."""

    grpc_code = grpc.StatusCode.NOT_FOUND


class DuplicateEventError(EventLogError):
    """An event id was appended twice (event ids are unique in a store)."""

    grpc_code = grpc.StatusCode.ALREADY_EXISTS


class SchemaError(EventLogError):
    """The database schema is missing or older than this library expects."""

    grpc_code = grpc.StatusCode.FAILED_PRECONDITION


def grpc_status_for(error: BaseException) -> grpc.StatusCode:
    """The gRPC status code for ``error``: ``ABORTED`` for a :class:`ConcurrencyError`.

    Errors outside this library map to ``INTERNAL``.
    """
    if isinstance(error, EventLogError):
        return error.grpc_code
    return grpc.StatusCode.INTERNAL


async def abort_with(
    context: grpc.aio.ServicerContext[object, object], error: EventLogError
) -> None:
    """Abort the current grpc.aio call with the status and message of ``error``.

    ``await abort_with(context, err)`` raises (grpc's ``abort`` never returns).
    """
    await context.abort(error.grpc_code, str(error))
