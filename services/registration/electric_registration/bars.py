"""The players' Multi-Table Bars (My Tables rows) as their WatchMyTables streams show them:
shared by a player's watchers, and moved on by the tables' progress with no read (issue 26
item 2).

A watched player's rows are read once (:class:`~.notify.SharedReads`: the watchers woken by
one change share the read). After that, a change that only moved a table on (a
``TableProgress`` applied by the table-status consumer: hand number, stacks, whose turn until
when; :class:`~.notify.TableMoved`) moves the rows on in memory: no database read, and one
computation for every watcher of the player (the rows and their protos are kept per player
and filter, at the generation they are as of). Any other change (a Register, an elimination,
a result, a cancellation, a peer instance's announcement) and every ``poll_seconds`` (the
fallback for changes made by another instance) read again.

The rows moved on equal the rows a read would return: the consumer writes the same values
from the same summary (``store.progress``), and a test compares both
(tests/component/registration/test_registration_watch_pushed.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from electric.registration.v1 import registration_pb2
from electric_domain.tournament import TournamentConfig

from electric_registration import views
from electric_registration.notify import Notifier, SharedReads, TableMoved
from electric_registration.store import repo

#: A bar's key: the player, the statuses listed, and whether ended tables are kept a while.
BarKey = tuple[str, tuple[str, ...], bool]


@dataclass(frozen=True)
class _Bar:
    generation: int
    rows: list[repo.MyTableRow]
    tables: list[registration_pb2.MyTable]
    #: Loop time of the read the rows come from.
    read_at: float


def move_row(row: repo.MyTableRow, moved: TableMoved) -> repo.MyTableRow:
    """``row`` after ``moved`` (its table), as ``store.progress`` writes it."""
    progress = row.progress
    if progress is not None:
        stack = dict(moved.stacks).get(progress.seat)
        if stack is not None:
            progress = dataclasses.replace(progress, stack=stack)
    return dataclasses.replace(
        row,
        current_hand_number=max(row.current_hand_number, moved.hand_number),
        status="running" if row.status == "filled" else row.status,
        turn_seat=moved.turn_seat,
        turn_deadline=moved.turn_deadline,
        progress=progress,
    )


class Bars:
    """The shared, moved-on bars of the watched players (module doc)."""

    def __init__(
        self, notifier: Notifier, config: TournamentConfig, *, poll_seconds: float
    ) -> None:
        self._notifier = notifier
        self._config = config
        self._poll = poll_seconds
        self._reads: SharedReads[list[repo.MyTableRow]] = SharedReads()
        self._bars: dict[BarKey, _Bar] = {}
        #: Bars moved on from the facts, with no read (tests, benchmarks).
        self.moved = 0

    @property
    def reads(self) -> int:
        """Reads started (one per change that was not a move, shared by the watchers)."""
        return self._reads.started

    async def tables(
        self, key: BarKey, read: Callable[[], Awaitable[list[repo.MyTableRow]]]
    ) -> list[registration_pb2.MyTable]:
        """The bar of ``key`` as of the player's latest change: moved on from the last one
        when only tables moved since, else ``read()`` (shared with the other watchers)."""
        player = key[0]
        now = asyncio.get_running_loop().time()
        generation = self._notifier.generation(player)
        bar = self._bars.get(key)
        if bar is not None and now - bar.read_at < self._poll:
            if bar.generation >= generation:
                return bar.tables
            moves = self._notifier.moves_between(player, bar.generation, generation)
            if moves is not None:
                moved = self._move(bar, moves, generation)
                self._bars[key] = moved
                self.moved += 1
                return moved.tables
        rows = await self._reads.read(key, generation, read)
        latest = self._bars.get(key)
        if latest is None or latest.generation <= generation:
            tables = [views.my_table(r, self._config) for r in rows]
            self._bars[key] = _Bar(generation, rows, tables, now)
            return tables
        return latest.tables  # another watcher's newer bar was stored meanwhile

    def drop(self, player: str) -> None:
        """Forget ``player``'s bars (its last watcher left)."""
        for key in [k for k in self._bars if k[0] == player]:
            del self._bars[key]

    def _move(self, bar: _Bar, moves: Sequence[TableMoved], generation: int) -> _Bar:
        rows, tables = list(bar.rows), list(bar.tables)
        for moved in moves:
            for k, row in enumerate(rows):
                if row.table_id == moved.table_id:
                    rows[k] = move_row(row, moved)
                    tables[k] = views.my_table(rows[k], self._config)
        return _Bar(generation, rows, tables, bar.read_at)
