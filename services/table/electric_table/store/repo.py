"""Reads and writes of the table read model (synchronous; run via asyncio.to_thread)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, insert, select

from electric_table.store import tables as t


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
    status: str
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
        status=row.status,
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


def insert_table(
    conn: Connection,
    *,
    table_id: str,
    table_name: str,
    multiplier: int,
    prize_pool_cents: int,
    buy_in_cents: int,
    starting_stack: int,
    stream_version: int,
    created_at: datetime,
    seats: list[SeatRow],
) -> None:
    """Create the read model of a new table (same transaction as TableStarted)."""
    conn.execute(
        insert(t.tables).values(
            table_id=table_id,
            table_name=table_name,
            status="starting",
            multiplier=multiplier,
            prize_pool_cents=prize_pool_cents,
            buy_in_cents=buy_in_cents,
            starting_stack=starting_stack,
            stream_version=stream_version,
            created_at=created_at,
        )
    )
    if seats:
        conn.execute(
            insert(t.seats),
            [
                {
                    "table_id": table_id,
                    "seat": s.seat,
                    "player_id": s.player_id,
                    "entry_id": s.entry_id,
                    "display_name": s.display_name,
                    "stack": s.stack,
                }
                for s in seats
            ],
        )
