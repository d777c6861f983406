"""Many watchers of one player cost one read per change that needs one (issue 26 item 2): a
player watching My Tables from four devices gets every change on each of them, and each
change that is not only a table moving on (here: the table seated anew, a TableStarted) is
read from the database once (the watchers woken by it share the read in flight,
`notify.SharedReads`); before, every watcher re-read the player's tables itself. Changes that
only move a table on are read by nobody: test_registration_watch_pushed.py."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from electric.registration.v1 import registration_pb2
from sqlalchemy import event
from sqlalchemy.engine import Engine

from tests.component.registration.test_registration_screens import (
    _progress,
    _seated_table,
    _table_and_hand_started,
)
from tests.support.reg_harness import FakeTable, Stack, eventually, md

DEVICES = 4
CHANGES = 5


@contextmanager
def my_tables_reads() -> Iterator[list[str]]:
    """The My Tables statements run by any engine of this process while inside."""
    seen: list[str] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "progress_stack" in statement:
            seen.append(statement)

    event.listen(Engine, "before_cursor_execute", before)
    try:
        yield seen
    finally:
        event.remove(Engine, "before_cursor_execute", before)


async def test_watchers_of_one_player_share_one_read_per_change(stack: Stack) -> None:
    table_id, seats = await _seated_table(stack, ("s1", "s2", "s3"))
    fake = FakeTable(stack.urls["table"], stack.bus)
    order = [seats["s1"], seats["s2"], seats["s3"]]
    shown: list[int] = [0] * DEVICES
    watches = []

    async def watch(device: int) -> None:
        call = stack.reg.WatchMyTables(registration_pb2.WatchMyTablesRequest(), metadata=md("s1"))
        watches.append(call)
        async for snap in call:
            mine = [t for t in snap.tables if t.table_id == table_id]
            if mine:
                shown[device] = mine[0].turn_seat

    tasks = [asyncio.ensure_future(watch(d)) for d in range(DEVICES)]
    try:
        await fake.emit(table_id, *_table_and_hand_started(table_id, seats))

        async def all_see(seat: int) -> bool | None:
            return True if all(s == seat for s in shown) else None

        await asyncio.sleep(0.5)  # every watcher has its first snapshot
        with my_tables_reads() as reads:
            for k in range(CHANGES):
                seat = order[(k + 1) % 3]
                started, _ = _table_and_hand_started(table_id, seats)
                await fake.emit(  # a change that needs a read, then the new turn
                    table_id,
                    started,
                    _progress(table_id, 1, dict.fromkeys(order, 1500), seat),
                )
                await eventually(lambda seat=seat: all_see(seat))
                await asyncio.sleep(0.3)  # past the watchers' least interval between reads
        # One read per change for the four devices (a periodic re-read may add one);
        # before: one per device per change.
        assert len(reads) <= CHANGES + 2, len(reads)
    finally:
        for call in watches:
            call.cancel()
        for task in tasks:
            task.cancel()
        fake.close()
