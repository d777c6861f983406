"""Per-seat progress of running tables (``registration_seat_progress``) and the table's
current turn (``registration_tables.turn_seat`` / ``turn_deadline``): the projection behind
My Tables and the Multi-Table Bar, fed by the table's events (:mod:`..consumers`).

Stacks, the hand number and the turn: set from TableStarted (starting stack) and from each
TableProgress, the table's summary of an append (absolute values: the latest one wins).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, bindparam, case, delete, insert, update

from electric_registration.store import tables as t

_P = t.seat_progress

# The statements run for each table of each consumer batch, built once with bound parameters
# (building them anew, and their cache keys, cost more Python than executing them: issue 16).
_SET_STACK = (
    update(_P)
    .where(_P.c.table_id == bindparam("p_table"), _P.c.seat == bindparam("p_seat"))
    .values(stack=bindparam("p_stack"), updated_at=bindparam("p_at"))
)
_T = t.tables.c
_SET_TABLE = (
    update(t.tables)
    .where(_T.table_id == bindparam("p_table"))
    .values(
        # The hand number only moves forward; a table seen playing is running.
        current_hand_number=case(
            (_T.current_hand_number < bindparam("p_hand"), bindparam("p_hand")),
            else_=_T.current_hand_number,
        ),
        status=case((_T.status == "filled", "running"), else_=_T.status),
        turn_seat=bindparam("p_seat"),
        turn_deadline=bindparam("p_deadline"),
    )
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


@dataclass(frozen=True)
class TableProgress:
    """A table's ``TableProgress`` as registration keeps it: the hand number, every seat's
    stack (seat, chips), the seat to act (0: nobody) and its deadline, and when."""

    hand_number: int
    stacks: tuple[tuple[int, int], ...]
    turn_seat: int
    turn_deadline: datetime | None
    at: datetime


def set_progress(conn: Connection, progress: dict[str, TableProgress]) -> None:
    """Write each table's progress: its row (hand number, turn) and its seats' stacks."""
    if not progress:
        return
    conn.execute(
        _SET_TABLE,
        [
            {
                "p_table": table_id,
                "p_hand": p.hand_number,
                "p_seat": p.turn_seat,
                "p_deadline": p.turn_deadline,
            }
            for table_id, p in progress.items()
        ],
    )
    stacks = [
        {"p_table": table_id, "p_seat": seat_no, "p_stack": stack, "p_at": p.at}
        for table_id, p in progress.items()
        for seat_no, stack in p.stacks
    ]
    if stacks:
        conn.execute(_SET_STACK, stacks)


class PendingProgress:
    """The tables' progress of one transaction, the latest per table, written by
    :meth:`flush` before the commit (``ConsumerWorker(before_commit=...)``).

    A batch of the table topic carries several appends of each busy table, each with its
    summary: held back, a table costs one UPDATE of its row and one per seat per batch.
    Writes that are not held back (seats at the start, eliminations, results) first
    :meth:`flush` the table's pending progress, so every row ends as if each event had been
    written in order.
    """

    def __init__(self) -> None:
        self._conn: Connection | None = None
        self._held: dict[str, TableProgress] = {}

    def _of(self, conn: Connection) -> None:
        if self._conn is not conn:  # a new transaction: what a rolled-back one held is gone
            self._conn, self._held = conn, {}

    def set(self, conn: Connection, table_id: str, progress: TableProgress) -> None:
        """The table's progress, held back (the last one of the transaction wins, but the
        hand number only moves forward, as in the row)."""
        self._of(conn)
        held = self._held.get(table_id)
        if held is not None and held.hand_number > progress.hand_number:
            progress = dataclasses.replace(progress, hand_number=held.hand_number)
        self._held[table_id] = progress

    def flush(self, conn: Connection, table_id: str | None = None) -> None:
        """Write what is held (for ``table_id`` only, or everything) and forget it."""
        self._of(conn)
        if table_id is None:
            held, self._held = self._held, {}
        else:
            one = self._held.pop(table_id, None)
            held = {} if one is None else {table_id: one}
        set_progress(conn, held)


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
