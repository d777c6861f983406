"""Register requests (``registration_requests``): one row per (player, request id)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from electric_domain.lobby import RequestRecord
from sqlalchemy import Connection, insert, select, update

from electric_registration.store import tables as t


def _aware(value: datetime) -> datetime:
    # SQLite returns naive datetimes (stored as UTC).
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _ids(text: str) -> tuple[str, ...]:
    return tuple(e for e in text.split(",") if e)


def get(conn: Connection, key: str, *, lock: bool = False) -> RequestRecord | None:
    """The request ``key`` (locked for the transaction with ``lock``)."""
    q = select(t.requests).where(t.requests.c.request_key == key)
    r = conn.execute(q.with_for_update() if lock else q).first()
    if r is None:
        return None
    return RequestRecord(
        tier_id=r.tier_id,
        entries=int(r.entries),
        attempt=int(r.attempt),
        status=r.status,
        entry_ids=_ids(r.entry_ids),
        updated_at=_aware(r.updated_at),
    )


def insert_first(
    conn: Connection,
    *,
    key: str,
    player_id: str,
    request_id: str,
    tier_id: str,
    entries: int,
    at: datetime,
) -> None:
    """Record a new request at attempt 1, ``reserving``."""
    conn.execute(
        insert(t.requests).values(
            request_key=key,
            player_id=player_id,
            request_id=request_id,
            tier_id=tier_id,
            entries=entries,
            attempt=1,
            status="reserving",
            entry_ids="",
            error="",
            created_at=at,
            updated_at=at,
        )
    )


def start_attempt(conn: Connection, key: str, attempt: int, at: datetime) -> None:
    """Move the request to attempt ``attempt``, ``reserving``."""
    conn.execute(
        update(t.requests)
        .where(t.requests.c.request_key == key)
        .values(attempt=attempt, status="reserving", error="", updated_at=at)
    )


def end_attempt(
    conn: Connection, key: str, attempt: int, *, status: str, error: str, at: datetime
) -> bool:
    """Attempt ``attempt`` → ``status`` if still reserving or voiding; True when changed."""
    result = conn.execute(
        update(t.requests)
        .where(
            t.requests.c.request_key == key,
            t.requests.c.attempt == attempt,
            t.requests.c.status.in_(("reserving", "voiding")),
        )
        .values(status=status, error=error[:2000], updated_at=at)
    )
    return bool(result.rowcount == 1)


def complete(conn: Connection, key: str, entry_ids: list[str], at: datetime) -> None:
    """The request's attempt seated ``entry_ids``."""
    conn.execute(
        update(t.requests)
        .where(t.requests.c.request_key == key)
        .values(status="completed", entry_ids=",".join(entry_ids), updated_at=at)
    )


@dataclass(frozen=True)
class Abandoned:
    """An attempt to roll back."""

    key: str
    attempt: int
    entries: int


def abandoned(conn: Connection, cutoff: datetime) -> list[Abandoned]:
    """Attempts rolling back, or reserving since before ``cutoff``."""
    rows = conn.execute(
        select(t.requests.c.request_key, t.requests.c.attempt, t.requests.c.entries).where(
            (t.requests.c.status == "voiding")
            | ((t.requests.c.status == "reserving") & (t.requests.c.updated_at < cutoff))
        )
    ).all()
    return [Abandoned(r.request_key, int(r.attempt), int(r.entries)) for r in rows]
