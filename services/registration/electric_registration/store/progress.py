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

from sqlalchemy import Connection, bindparam, delete, insert, update

from electric_registration.store import tables as t

_P = t.seat_progress

# The per-action statements, built once with bound parameters: the consumer runs them for
# every action of every table, and building them anew (and their cache keys) cost more
# Python than executing them (issue 16 profile).
_SEAT_ROW = (_P.c.table_id == bindparam("p_table"), _P.c.seat == bindparam("p_seat"))
_ADD_STACK = (
    update(_P)
    .where(*_SEAT_ROW)
    .values(stack=_P.c.stack + bindparam("p_delta"), updated_at=bindparam("p_at"))
)
_SET_STACK = (
    update(_P).where(*_SEAT_ROW).values(stack=bindparam("p_stack"), updated_at=bindparam("p_at"))
)
_SET_TURN = (
    update(t.tables)
    .where(t.tables.c.table_id == bindparam("p_table"))
    .values(turn_seat=bindparam("p_seat"), turn_deadline=bindparam("p_deadline"))
)


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
    rows = [
        {"p_table": table_id, "p_seat": seat_no, "p_stack": stack, "p_at": at}
        for seat_no, stack in stacks
    ]
    if rows:
        conn.execute(_SET_STACK, rows)


def add_stack(conn: Connection, table_id: str, seat_no: int, delta: int, at: datetime) -> None:
    """Chips into (negative) or out of the pot for a seat."""
    conn.execute(_ADD_STACK, {"p_table": table_id, "p_seat": seat_no, "p_delta": delta, "p_at": at})


def set_turn(conn: Connection, table_id: str, seat_no: int, deadline: datetime | None) -> None:
    """The seat asked to act (0 and None: nobody)."""
    conn.execute(_SET_TURN, {"p_table": table_id, "p_seat": seat_no, "p_deadline": deadline})


class PendingProgress:
    """Stack moves and turns of one transaction, coalesced per table and seat, written by
    :meth:`flush` before the commit (``ConsumerWorker(before_commit=...)``).

    A batch of the table topic carries several actions of each busy table: each one moved
    a stack and set the turn twice (the action clears it, the next turn sets it), one
    UPDATE each. Held back, a table costs one UPDATE per seat whose stack moved and one for
    its turn per batch. Writes that are not held back (absolute stacks, eliminations,
    results) first :meth:`drop` or :meth:`flush` the table's pending moves, so every row
    ends as if each event had been written in order.
    """

    def __init__(self) -> None:
        self._conn: Connection | None = None
        self._stacks: dict[tuple[str, int], tuple[int, datetime]] = {}
        self._turns: dict[str, tuple[int, datetime | None]] = {}

    def _of(self, conn: Connection) -> None:
        if self._conn is not conn:  # a new transaction: what a rolled-back one held is gone
            self._conn, self._stacks, self._turns = conn, {}, {}

    def add_stack(
        self, conn: Connection, table_id: str, seat_no: int, delta: int, at: datetime
    ) -> None:
        """:func:`add_stack`, held back."""
        self._of(conn)
        key = (table_id, seat_no)
        held = self._stacks.get(key)
        self._stacks[key] = ((held[0] if held else 0) + delta, at)

    def set_turn(
        self, conn: Connection, table_id: str, seat_no: int, deadline: datetime | None
    ) -> None:
        """:func:`set_turn`, held back (the last one of the transaction wins)."""
        self._of(conn)
        self._turns[table_id] = (seat_no, deadline)

    def drop(self, conn: Connection, table_id: str) -> None:
        """Forget the table's held stack moves: absolute stacks are written next."""
        self._of(conn)
        for key in [k for k in self._stacks if k[0] == table_id]:
            del self._stacks[key]

    def flush(self, conn: Connection, table_id: str | None = None) -> None:
        """Write what is held (for ``table_id`` only, or everything) and forget it."""
        self._of(conn)
        stacks = [k for k in self._stacks if table_id is None or k[0] == table_id]
        moves = [
            {"p_table": k[0], "p_seat": k[1], "p_delta": d, "p_at": at}
            for k in stacks
            for d, at in (self._stacks.pop(k),)
            if d
        ]
        if moves:
            conn.execute(_ADD_STACK, moves)
        tables = [k for k in self._turns if table_id is None or k == table_id]
        turns = [
            {"p_table": k, "p_seat": seat, "p_deadline": deadline}
            for k in tables
            for seat, deadline in (self._turns.pop(k),)
        ]
        if turns:
            conn.execute(_SET_TURN, turns)


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
