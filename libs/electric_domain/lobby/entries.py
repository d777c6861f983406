"""Register requests and their entries: ids, the N-entries rule and the request lifecycle.

A Register buys N entries (1..:data:`MAX_ENTRIES`), all or nothing. Each (player, request
id) is one request; its attempts get deterministic entry ids, so a retry of an attempt reuses
them (and the wallet transfer ids ``buyin-<entry_id>`` derived from them), while a new
attempt after a failure gets new ones.

Lifecycle of a request record: ``reserving`` (buy-ins being reserved) → ``completed``
(seated) or ``voiding`` → ``failed`` (reservations voided); a failed request may be retried
under the same request id as a new attempt (docs/registration.md).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from electric_domain.lobby.errors import AttemptRollingBack, BadEntryCount, RequestReused

#: Most entries one Register may buy.
MAX_ENTRIES = 10
#: Namespace of the deterministic entry ids (uuid5 of request key, attempt and index).
ENTRY_NAMESPACE = uuid.UUID("5d0c1b7e-2f43-4b0e-9c51-6f1f0c6f7a10")


def check_entry_count(entries: int) -> None:
    """1..MAX_ENTRIES entries per Register, else :class:`BadEntryCount`."""
    if not 1 <= entries <= MAX_ENTRIES:
        raise BadEntryCount(entries, MAX_ENTRIES)


def request_key(player_id: str, request_id: str) -> str:
    """Idempotency key of a Register: one per (player, request id)."""
    return hashlib.sha256(f"{player_id}\0{request_id}".encode()).hexdigest()


def entry_ids_for(key: str, attempt: int, entries: int) -> list[str]:
    """Entry ids of one attempt of a request (deterministic: a retry reuses them)."""
    return [str(uuid.uuid5(ENTRY_NAMESPACE, f"{key}:{attempt}:{i}")) for i in range(entries)]


def buyin_transfer_id(entry_id: str) -> str:
    """Pending wallet transfer holding an entry's buy-in (player funds → escrow)."""
    return f"buyin-{entry_id}"


@dataclass(frozen=True)
class RequestRecord:
    """What is recorded of a request."""

    tier_id: str
    entries: int
    attempt: int
    #: reserving | voiding | completed | failed
    status: str
    entry_ids: tuple[str, ...]
    updated_at: datetime


@dataclass(frozen=True)
class StartAttempt:
    """Carry out attempt ``attempt`` (reserve, then seat) with these entry ids."""

    attempt: int
    entry_ids: tuple[str, ...]
    #: True for the request's first attempt (no record yet).
    first: bool


@dataclass(frozen=True)
class AlreadyDone:
    """The request completed earlier: answer with its entries, reserve nothing."""

    entry_ids: tuple[str, ...]


@dataclass(frozen=True)
class StillInFlight:
    """Another call is carrying out this request right now: wait for its outcome."""

    attempt: int


def begin(
    record: RequestRecord | None,
    *,
    key: str,
    request_id: str,
    tier_id: str,
    entries: int,
    now: datetime,
    stale_after: timedelta,
) -> StartAttempt | AlreadyDone | StillInFlight:
    """What a Register does given its request's record (see module doc).

    New → attempt 1. Completed → its entries. Reserving and not stale → in flight. Reserving
    but stale, or voiding → :class:`AttemptRollingBack` (the sweeper rolls it back). Failed →
    the next attempt with new entry ids. Another tier or count → :class:`RequestReused`.
    """
    if record is None:
        return StartAttempt(1, tuple(entry_ids_for(key, 1, entries)), first=True)
    if record.tier_id != tier_id or record.entries != entries:
        raise RequestReused(
            request_id, old=(record.tier_id, record.entries), new=(tier_id, entries)
        )
    if record.status == "completed":
        return AlreadyDone(record.entry_ids)
    if record.status == "reserving" and now - record.updated_at < stale_after:
        return StillInFlight(record.attempt)
    if record.status in ("reserving", "voiding"):
        raise AttemptRollingBack(request_id)
    attempt = record.attempt + 1
    return StartAttempt(attempt, tuple(entry_ids_for(key, attempt, entries)), first=False)
