"""Per-seat progress of running tables (``registration_seat_progress``) and the table's
current turn (``registration_tables.turn_seat`` / ``turn_deadline``): the projection behind
My Tables and the Multi-Table Bar, fed by the table's events (:mod:`..consumers`).

Stacks: set from TableStarted (starting stack), HandStarted and HandEnded (authoritative
stacks), lowered by blinds, antes and actions, raised by pot awards and uncalled bets
returned in between.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, delete, insert, update

from electric_registration.store import tables as t

_P = t.seat_progress


def seat(
    conn: Connection, table_id: str, seat_no: int, player_id: str, stack: int, at: datetime
) -> None:
    """Create (or reset) a seat's row when the table starts."""
    conn.execute(delete(_P).where(_P.c.table_id == table_id, _P.c.player_id == player_id))
    conn.execute(
        insert(_P).values(
            table_id=table_id,
            player_id=player_id,
            seat=seat_no,
            stack=stack,
            eliminated=0,
            finishing_place=0,
            prize_cents=0,
            updated_at=at,
        )
    )


def set_stacks(
    conn: Connection, table_id: str, stacks: Iterable[tuple[int, int]], at: datetime
) -> None:
    """Authoritative stacks (seat, chips) of a hand boundary."""
    for seat_no, stack in stacks:
        conn.execute(
            update(_P)
            .where(_P.c.table_id == table_id, _P.c.seat == seat_no)
            .values(stack=stack, updated_at=at)
        )


def add_stack(conn: Connection, table_id: str, seat_no: int, delta: int, at: datetime) -> None:
    """Chips into (negative) or out of the pot for a seat."""
    conn.execute(
        update(_P)
        .where(_P.c.table_id == table_id, _P.c.seat == seat_no)
        .values(stack=_P.c.stack + delta, updated_at=at)
    )


def set_turn(conn: Connection, table_id: str, seat_no: int, deadline: datetime | None) -> None:
    """The seat asked to act (0 and None: nobody)."""
    conn.execute(
        update(t.tables)
        .where(t.tables.c.table_id == table_id)
        .values(turn_seat=seat_no, turn_deadline=deadline)
    )


def eliminated(conn: Connection, table_id: str, seat_no: int, place: int, at: datetime) -> None:
    """A seat is out, at ``place``."""
    conn.execute(
        update(_P)
        .where(_P.c.table_id == table_id, _P.c.seat == seat_no)
        .values(eliminated=1, finishing_place=place, stack=0, updated_at=at)
    )


def finished(
    conn: Connection,
    table_id: str,
    player_id: str,
    *,
    seat_no: int,
    place: int,
    prize_cents: int,
    at: datetime,
) -> None:
    """The final result of a player (the row is created if the start was never seen)."""
    values = {
        "eliminated": 1,
        "finishing_place": place,
        "prize_cents": prize_cents,
        "updated_at": at,
    }
    done = conn.execute(
        update(_P).where(_P.c.table_id == table_id, _P.c.player_id == player_id).values(values)
    )
    if not done.rowcount:
        conn.execute(
            insert(_P).values(
                table_id=table_id, player_id=player_id, seat=seat_no, stack=0, **values
            )
        )


@dataclass(frozen=True)
class SeatProgress:
    """A player's progress at a table."""

    seat: int
    stack: int
    eliminated: bool
    finishing_place: int
    prize_cents: int
