"""Reads and writes of the table service's rows (synchronous; run via asyncio.to_thread).

The read model of a table (``table_tables``, ``table_seats``) is only read here: the
projector writes it from the table's events (``electric_table.store.projector``, live through
``journal.append_table``). Written here: the request de-duplication rows, the withheld deck
seeds, and what registration's events give (multiplier seeds, player settings)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

import sqlalchemy as sa
from electric_eventlog.schema import fences
from sqlalchemy import Connection, insert, select, update

from electric_table.store import tables as t


class TableStatus(StrEnum):
    """Where a table's tournament stands (column ``table_tables.status``)."""

    STARTING = "starting"  # created; no hand dealt yet
    INVALID = "invalid"  # created from a TournamentStarted that cannot be played
    RUNNING = "running"
    FINISHED = "finished"


@dataclass(frozen=True)
class SeatRow:
    """One seat."""

    seat: int
    player_id: str
    entry_id: str
    display_name: str
    stack: int


@dataclass(frozen=True)
class TableRow:
    """One table with its seats."""

    table_id: str
    table_name: str
    status: TableStatus
    multiplier: int
    prize_pool_cents: int
    buy_in_cents: int
    stream_version: int
    seats: tuple[SeatRow, ...]


def get_table(conn: Connection, table_id: str) -> TableRow | None:
    """The table ``table_id`` or None."""
    row = conn.execute(select(t.tables).where(t.tables.c.table_id == table_id)).first()
    if row is None:
        return None
    seat_rows = conn.execute(
        select(t.seats).where(t.seats.c.table_id == table_id).order_by(t.seats.c.seat)
    ).all()
    return TableRow(
        table_id=row.table_id,
        table_name=row.table_name,
        status=TableStatus(row.status),
        multiplier=int(row.multiplier),
        prize_pool_cents=int(row.prize_pool_cents),
        buy_in_cents=int(row.buy_in_cents),
        stream_version=int(row.stream_version),
        seats=tuple(
            SeatRow(
                seat=int(s.seat),
                player_id=s.player_id,
                entry_id=s.entry_id,
                display_name=s.display_name,
                stack=int(s.stack),
            )
            for s in seat_rows
        ),
    )


@dataclass(frozen=True)
class RequestRow:
    """The recorded outcome of a command (``code`` "OK" or a gRPC status name)."""

    rpc: str
    code: str
    message: str
    stream_version: int


def get_request(
    conn: Connection, table_id: str, player_id: str, request_id: str
) -> RequestRow | None:
    """The recorded outcome of ``request_id`` of ``player_id`` at ``table_id``, if any."""
    row = conn.execute(
        select(t.requests).where(
            t.requests.c.table_id == table_id,
            t.requests.c.player_id == player_id,
            t.requests.c.request_id == request_id,
        )
    ).first()
    if row is None:
        return None
    return RequestRow(row.rpc, row.code, row.message, int(row.stream_version))


def requests_of(conn: Connection, table_id: str) -> dict[tuple[str, str], RequestRow]:
    """Every recorded command outcome of ``table_id``, by (player id, request id): loaded
    with the table, so a command's de-duplication reads nothing (issue 26 item 4)."""
    rows = conn.execute(select(t.requests).where(t.requests.c.table_id == table_id))
    return {
        (row.player_id, row.request_id): RequestRow(
            row.rpc, row.code, row.message, int(row.stream_version)
        )
        for row in rows
    }


def insert_request(
    conn: Connection,
    *,
    table_id: str,
    player_id: str,
    request_id: str,
    rpc: str,
    code: str,
    message: str,
    stream_version: int,
    at: datetime,
) -> None:
    """Record a command's outcome (same transaction as its events)."""
    conn.execute(
        insert(t.requests).values(
            table_id=table_id,
            player_id=player_id,
            request_id=request_id,
            rpc=rpc,
            code=code,
            message=message,
            stream_version=stream_version,
            created_at=at,
        )
    )


def insert_deck_seed(conn: Connection, table_id: str, hand_number: int, seed_hex: str) -> None:
    """Keep a hand's deck seed (withheld from the published events until the hand ends)."""
    conn.execute(
        insert(t.deck_seeds).values(table_id=table_id, hand_number=hand_number, seed_hex=seed_hex)
    )


def deck_seeds(conn: Connection, table_id: str) -> dict[int, str]:
    """Every kept deck seed of ``table_id`` by hand number."""
    rows = conn.execute(
        select(t.deck_seeds.c.hand_number, t.deck_seeds.c.seed_hex).where(
            t.deck_seeds.c.table_id == table_id
        )
    ).all()
    return {int(r.hand_number): r.seed_hex for r in rows}


def put_multiplier_seed(conn: Connection, table_id: str, seed_hex: str, multiplier: int) -> None:
    """Remember the multiplier seed revealed by TableFilled (first one wins)."""
    if get_multiplier_seed(conn, table_id) is None:
        conn.execute(
            insert(t.multiplier_seeds).values(
                table_id=table_id, seed_hex=seed_hex, multiplier=multiplier
            )
        )


def get_multiplier_seed(conn: Connection, table_id: str) -> str | None:
    """The revealed multiplier seed of ``table_id``, if TableFilled was seen."""
    row = conn.execute(
        select(t.multiplier_seeds.c.seed_hex).where(t.multiplier_seeds.c.table_id == table_id)
    ).first()
    return None if row is None else str(row.seed_hex)


def live_table_ids(conn: Connection) -> list[str]:
    """Tables whose tournament is not finished (rebuilt and resumed at start-up)."""
    rows = conn.execute(
        select(t.tables.c.table_id)
        .where(t.tables.c.status.in_((TableStatus.STARTING.value, TableStatus.RUNNING.value)))
        .order_by(t.tables.c.created_at)
    ).all()
    return [r.table_id for r in rows]


def untaken_live_table_ids(conn: Connection) -> list[str]:
    """Unfinished tables nobody took ownership of yet (no ``eventlog_fences`` row;
    ``partitions`` ownership, see ``ownership.PartitionOwnership.sweep``)."""
    fence = sa.exists().where(fences.c.resource == sa.literal("table-") + t.tables.c.table_id)
    rows = conn.execute(
        select(t.tables.c.table_id).where(
            t.tables.c.status.in_((TableStatus.STARTING.value, TableStatus.RUNNING.value)),
            ~fence,
        )
    ).all()
    return [r.table_id for r in rows]


@dataclass(frozen=True)
class PlayerSettings:
    """A player's showdown settings as the table last heard them (defaults: muck both)."""

    muck_winning_hands: bool = True
    muck_losing_hands: bool = True
    version: int = 0


def put_player_settings(conn: Connection, player_id: str, settings: PlayerSettings) -> bool:
    """Store ``settings`` unless a newer version is stored already; True when stored."""
    pt = t.player_settings
    row = conn.execute(select(pt.c.version).where(pt.c.player_id == player_id)).first()
    values = {
        "muck_winning_hands": settings.muck_winning_hands,
        "muck_losing_hands": settings.muck_losing_hands,
        "version": settings.version,
    }
    if row is None:
        conn.execute(insert(pt).values(player_id=player_id, **values))
        return True
    if int(row.version) > settings.version:
        return False
    conn.execute(update(pt).where(pt.c.player_id == player_id).values(**values))
    return True


def player_settings(conn: Connection, player_ids: list[str]) -> dict[str, PlayerSettings]:
    """The stored settings of ``player_ids`` (players never heard of are absent)."""
    pt = t.player_settings
    rows = conn.execute(select(pt).where(pt.c.player_id.in_(player_ids))).all()
    return {
        str(r.player_id): PlayerSettings(
            bool(r.muck_winning_hands), bool(r.muck_losing_hands), int(r.version)
        )
        for r in rows
    }
