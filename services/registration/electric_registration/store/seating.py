"""Sit-and-go tables and their entries (``registration_tables``, ``registration_entries``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from electric_domain.lobby import OpenTable
from sqlalchemy import Connection, case, func, insert, select, update

from electric_registration.store import tables as t

_ACTIVE = t.entries.c.status != "unregistered"


@dataclass(frozen=True)
class TableRow:
    """What decisions need of a table."""

    table_id: str
    tier_id: str
    table_name: str
    #: registering | filled | running | finished | cancelled
    status: str
    seats: int
    players_registered: int
    seed_hex: str
    commitment: str
    stream_version: int
    #: Serialized TournamentStarted prepared at the fill (None before).
    tournament_started: bytes | None
    started_at: datetime | None


def _table(r: object) -> TableRow:
    m = r._mapping  # type: ignore[attr-defined]
    started = m["tournament_started"]
    return TableRow(
        table_id=m["table_id"],
        tier_id=m["tier_id"],
        table_name=m["table_name"],
        status=m["status"],
        seats=int(m["seats"]),
        players_registered=int(m["players_registered"]),
        seed_hex=m["multiplier_seed"],
        commitment=m["multiplier_seed_commitment"],
        stream_version=int(m["stream_version"]),
        tournament_started=bytes(started) if started is not None else None,
        started_at=m["started_at"],
    )


def get_table(conn: Connection, table_id: str, *, lock: bool = False) -> TableRow | None:
    """The table ``table_id`` (locked for the transaction with ``lock``)."""
    q = select(t.tables).where(t.tables.c.table_id == table_id)
    r = conn.execute(q.with_for_update() if lock else q).first()
    return _table(r) if r is not None else None


def table_count(conn: Connection, tier_id: str) -> int:
    """Tables ever opened for ``tier_id`` (names are numbered)."""
    q = select(func.count()).select_from(t.tables).where(t.tables.c.tier_id == tier_id)
    return int(conn.execute(q).scalar_one())


def open_table_count(conn: Connection, tier_id: str) -> int:
    """Tables of ``tier_id`` accepting registrations."""
    q = (
        select(func.count())
        .select_from(t.tables)
        .where(t.tables.c.tier_id == tier_id, t.tables.c.status == "registering")
    )
    return int(conn.execute(q).scalar_one())


def insert_table(
    conn: Connection,
    *,
    table_id: str,
    tier_id: str,
    table_name: str,
    seats: int,
    seed_hex: str,
    commitment: str,
    paytable_version: str,
    stream_version: int,
    opened_at: datetime,
) -> None:
    """Record a newly opened table (same transaction as its TableOpened event)."""
    conn.execute(
        insert(t.tables).values(
            table_id=table_id,
            tier_id=tier_id,
            table_name=table_name,
            status="registering",
            seats=seats,
            players_registered=0,
            multiplier_seed=seed_hex,
            multiplier_seed_commitment=commitment,
            paytable_version=paytable_version,
            multiplier=0,
            prize_pool_cents=0,
            stream_version=stream_version,
            opened_at=opened_at,
        )
    )


def open_tables(conn: Connection, tier_id: str) -> list[OpenTable]:
    """The tier's tables accepting entries, with their taken seats."""
    rows = conn.execute(
        select(t.tables).where(
            t.tables.c.tier_id == tier_id,
            t.tables.c.status == "registering",
            t.tables.c.players_registered < t.tables.c.seats,
        )
    ).all()
    taken: dict[str, set[int]] = {r.table_id: set() for r in rows}
    if taken:
        for table_id, seat in conn.execute(
            select(t.entries.c.table_id, t.entries.c.seat).where(
                t.entries.c.table_id.in_(list(taken)), _ACTIVE
            )
        ):
            taken[table_id].add(int(seat))
    return [
        OpenTable(
            r.table_id, int(r.seats), int(r.players_registered), r.opened_at, taken[r.table_id]
        )
        for r in rows
    ]


def player_open_tables(conn: Connection, player_id: str, tier_id: str) -> set[str]:
    """Open tables of the tier where the player holds an active entry."""
    return set(
        conn.execute(
            select(t.entries.c.table_id)
            .join(t.tables, t.tables.c.table_id == t.entries.c.table_id)
            .where(
                t.entries.c.player_id == player_id,
                _ACTIVE,
                t.tables.c.tier_id == tier_id,
                t.tables.c.status == "registering",
            )
        ).scalars()
    )


def insert_entry(
    conn: Connection,
    *,
    entry_id: str,
    player_id: str,
    table_id: str,
    seat: int,
    transfer_id: str,
    request_id: str,
    at: datetime,
) -> None:
    """Seat a reserved entry."""
    conn.execute(
        insert(t.entries).values(
            entry_id=entry_id,
            player_id=player_id,
            table_id=table_id,
            seat=seat,
            status="reserved",
            wallet_transfer_id=transfer_id,
            request_id=request_id,
            registered_at=at,
        )
    )


def set_progress(conn: Connection, table_id: str, *, players: int, stream_version: int) -> None:
    """Players seated and the stream version after a seat change."""
    conn.execute(
        update(t.tables)
        .where(t.tables.c.table_id == table_id)
        .values(players_registered=players, stream_version=stream_version)
    )


@dataclass(frozen=True)
class EntryRecord:
    """An entry as decisions see it."""

    entry_id: str
    player_id: str
    table_id: str
    seat: int
    status: str
    wallet_transfer_id: str


def _entry(r: object) -> EntryRecord:
    m = r._mapping  # type: ignore[attr-defined]
    return EntryRecord(
        m["entry_id"],
        m["player_id"],
        m["table_id"],
        int(m["seat"]),
        m["status"],
        m["wallet_transfer_id"],
    )


def active_entries(conn: Connection, table_id: str) -> list[EntryRecord]:
    """The table's active entries by seat."""
    q = select(t.entries).where(t.entries.c.table_id == table_id, _ACTIVE)
    return [_entry(r) for r in conn.execute(q.order_by(t.entries.c.seat))]


def find_entry(conn: Connection, entry_id: str) -> EntryRecord | None:
    """The entry ``entry_id``."""
    r = conn.execute(select(t.entries).where(t.entries.c.entry_id == entry_id)).first()
    return _entry(r) if r is not None else None


def latest_entry(conn: Connection, table_id: str, player_id: str) -> EntryRecord | None:
    """The player's entry at the table: an active one first, else the latest."""
    r = conn.execute(
        select(t.entries)
        .where(t.entries.c.table_id == table_id, t.entries.c.player_id == player_id)
        .order_by((t.entries.c.status == "unregistered").asc(), t.entries.c.registered_at.desc())
    ).first()
    return _entry(r) if r is not None else None


def withdraw_entry(conn: Connection, entry_id: str) -> None:
    """The entry gives up its seat."""
    conn.execute(
        update(t.entries).where(t.entries.c.entry_id == entry_id).values(status="unregistered")
    )


def mark_filled(
    conn: Connection,
    table_id: str,
    *,
    multiplier: int,
    prize_pool_cents: int,
    payouts_json: str,
    positions_paid: int,
    tournament_started: bytes,
    stream_version: int,
    at: datetime,
) -> None:
    """The table filled: its draw, prizes and the prepared TournamentStarted; its reserved
    entries are confirmed."""
    conn.execute(
        update(t.tables)
        .where(t.tables.c.table_id == table_id)
        .values(
            status="filled",
            multiplier=multiplier,
            prize_pool_cents=prize_pool_cents,
            positions_paid=positions_paid,
            payouts_json=payouts_json,
            tournament_started=tournament_started,
            stream_version=stream_version,
            filled_at=at,
        )
    )
    conn.execute(
        update(t.entries)
        .where(t.entries.c.table_id == table_id, t.entries.c.status == "reserved")
        .values(status="confirmed")
    )


def mark_started(
    conn: Connection, table_id: str, *, status: str, stream_version: int, at: datetime
) -> None:
    """TournamentStarted was appended."""
    conn.execute(
        update(t.tables)
        .where(t.tables.c.table_id == table_id)
        .values(status=status, stream_version=stream_version, started_at=at)
    )


def filled_not_started(conn: Connection) -> list[str]:
    """Tables with a prepared TournamentStarted not appended yet."""
    return list(
        conn.execute(
            select(t.tables.c.table_id).where(
                t.tables.c.tournament_started.is_not(None),
                t.tables.c.started_at.is_(None),
                t.tables.c.status != "cancelled",
            )
        ).scalars()
    )


# ------------------------------------------------------------------------------ table progress


def table_running(conn: Connection, table_id: str) -> bool:
    """TableStarted: filled → running; whether the table is registration's."""
    conn.execute(
        update(t.tables)
        .where(t.tables.c.table_id == table_id, t.tables.c.status.in_(("filled", "running")))
        .values(status="running")
    )
    return _exists(conn, table_id)


def hand_started(conn: Connection, table_id: str, hand_number: int) -> bool:
    """HandStarted: the hand number only moves forward; filled → running."""
    tables = t.tables
    conn.execute(
        update(tables)
        .where(tables.c.table_id == table_id)
        .values(
            current_hand_number=case(
                (tables.c.current_hand_number < hand_number, hand_number),
                else_=tables.c.current_hand_number,
            ),
            status=case((tables.c.status == "filled", "running"), else_=tables.c.status),
        )
    )
    return _exists(conn, table_id)


def table_finished(conn: Connection, table_id: str, *, hands: int, at: datetime) -> bool:
    """TournamentFinished: finished, with at least ``hands`` hands played."""
    tables = t.tables
    conn.execute(
        update(tables)
        .where(tables.c.table_id == table_id)
        .values(
            status="finished",
            finished_at=at,
            ended_at=at,
            turn_seat=0,
            turn_deadline=None,
            current_hand_number=case(
                (tables.c.current_hand_number < hands, hands),
                else_=tables.c.current_hand_number,
            ),
        )
    )
    return _exists(conn, table_id)


def _exists(conn: Connection, table_id: str) -> bool:
    q = select(t.tables.c.table_id).where(t.tables.c.table_id == table_id)
    return conn.execute(q).first() is not None


# ------------------------------------------------------------------------------ cancellation


def mark_cancelled(
    conn: Connection, table_id: str, *, reason: str, stream_version: int, at: datetime
) -> None:
    """The table is cancelled (its active entries too; the turn is cleared)."""
    conn.execute(
        update(t.tables)
        .where(t.tables.c.table_id == table_id)
        .values(
            status="cancelled",
            cancel_reason=reason[:500],
            cancelled_at=at,
            ended_at=at,
            stream_version=stream_version,
            turn_seat=0,
            turn_deadline=None,
        )
    )
    conn.execute(
        update(t.entries)
        .where(t.entries.c.table_id == table_id, _ACTIVE)
        .values(status="cancelled")
    )


def cancel_reason(conn: Connection, table_id: str) -> str:
    """Why the table was cancelled ('' if it was not)."""
    q = select(t.tables.c.cancel_reason).where(t.tables.c.table_id == table_id)
    return str(conn.execute(q).scalar_one_or_none() or "")


def exists(conn: Connection, table_id: str) -> bool:
    """Whether ``table_id`` is one of registration's tables."""
    return _exists(conn, table_id)
