"""Who sits where, when a table fills, and when an entry may still be withdrawn.

Rules (docs/registration.md):

- Each entry of a Register goes to the open table of the tier with the most players where
  the player has no seat yet (the oldest table first on a tie, then the table id); a new
  table is opened when there is none. A player holds at most one seat per table.
- An entry takes the lowest free seat number of its table.
- A table fills when its last seat is taken; it then stops accepting entries.
- After seating, every tier keeps at least one open table (a spare one is opened).
- An entry may be withdrawn only while its table is still registering; a player may withdraw
  only their own entries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from electric_domain.lobby.errors import NotYourEntry, TableAlreadyFilled


@dataclass
class OpenTable:
    """A table of the tier accepting entries."""

    table_id: str
    seats: int
    players_registered: int
    opened_at: datetime
    taken: set[int] = field(default_factory=set)

    @property
    def full(self) -> bool:
        return self.players_registered >= self.seats


@dataclass(frozen=True)
class NewTable:
    """A table to open for a placement (``index``: the n-th opened by this plan)."""

    index: int


@dataclass(frozen=True)
class Placement:
    """Where one entry sits."""

    entry_id: str
    #: An open table's id, or the new table to open first.
    table: str | NewTable
    seat: int
    #: Players at the table after this entry.
    players_registered: int
    #: This entry took the table's last seat.
    fills: bool


@dataclass(frozen=True)
class SeatingPlan:
    """Placements in order, and whether a spare open table is needed afterwards."""

    placements: tuple[Placement, ...]
    open_spare: bool


def first_free_seat(seats: int, taken: Iterable[int]) -> int:
    """The lowest seat number (1-based) not taken."""
    used = set(taken)
    return min(s for s in range(1, seats + 1) if s not in used)


def _rank(t: OpenTable) -> tuple[int, datetime, str]:
    return (-t.players_registered, t.opened_at, t.table_id)


def plan_seating(
    tables: Sequence[OpenTable],
    *,
    mine: Iterable[str],
    entry_ids: Sequence[str],
    seats_per_table: int,
) -> SeatingPlan:
    """Seat every entry (module doc). ``tables``: the tier's open tables; ``mine``: those
    where the player already holds a seat; ``seats_per_table``: the size of a new table."""
    state = {
        t.table_id: OpenTable(t.table_id, t.seats, t.players_registered, t.opened_at, set(t.taken))
        for t in tables
    }
    new: dict[int, OpenTable] = {}
    held = set(mine)
    placements: list[Placement] = []
    for entry_id in entry_ids:
        candidates = sorted((t for t in state.values() if not t.full), key=_rank)
        table = next((t for t in candidates if t.table_id not in held), None)
        ref: str | NewTable
        if table is None:
            # Only this player sits at a table opened for them, so it is never a candidate
            # for their later entries: it stays out of ``state``.
            index = len(new)
            table = new[index] = OpenTable(f"new-{index}", seats_per_table, 0, datetime.min)
            ref = NewTable(index)
        else:
            ref = table.table_id
        seat = first_free_seat(table.seats, table.taken)
        table.taken.add(seat)
        table.players_registered += 1
        held.add(table.table_id)
        if isinstance(ref, str):
            state[ref] = table
        placements.append(Placement(entry_id, ref, seat, table.players_registered, table.full))
    still_open = any(not t.full for t in (*state.values(), *new.values()))
    return SeatingPlan(tuple(placements), open_spare=not still_open)


def check_may_withdraw(*, entry_id: str, entry_player: str, acting_player: str | None) -> None:
    """``acting_player``: the calling player (None for services and operators, who may
    withdraw any entry). Refuses another player's entry."""
    if acting_player is not None and entry_player != acting_player:
        raise NotYourEntry(entry_id)


def check_still_registering(*, table_id: str, table_name: str, status: str) -> None:
    """Entries may be withdrawn only until their table fills."""
    if status != "registering":
        raise TableAlreadyFilled(table_id, table_name, status)
