"""Typed errors of the event log.

Every failure the library raises on purpose derives from :class:`EventLogError`, so callers
can catch one family. A version conflict is never swallowed: it surfaces as
:class:`ConcurrencyError`, which the API edge maps to ``ABORTED`` (the client re-reads and
retries the command). The library knows nothing of gRPC: the mapping of these types onto
status codes lives at the edge, in :func:`electric_platform.errors.status_for`.
"""

from __future__ import annotations


class EventLogError(Exception):
    """Base class of every error raised on purpose by ``electric_eventlog``."""


class ConcurrencyError(EventLogError):
    """The stream was not at the expected version (or another writer won the race).

    Raised by :meth:`EventStore.append` when ``expected_version`` does not match the stream's
    current version, or when a concurrent transaction inserted the same
    ``(stream_id, stream_version)`` first. The caller's transaction must be rolled back; the
    command is retried from a fresh read.
    """

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


class DuplicateEventError(EventLogError):
    """An event id was appended twice (event ids are unique in a store)."""


class SchemaError(EventLogError):
    """The database schema is missing or older than this library expects."""
