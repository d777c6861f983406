"""My Tables is pushed, not re-read (issue 26 item 2): while a table only moves on (its
TableProgress summaries: whose turn, stacks, the hand number), a player watching from four
devices gets every change on each of them and the database is not read at all: the bars
are moved on in memory from the summary itself, once for all the player's watchers
(`bars.Bars`). Before, every change cost a read (one per watcher, then one per player).

What is pushed equals what a read returns: after the moves, every device's last snapshot of
the table equals ListMyTables' row (a read of what the consumer wrote from the same
summaries). The periodic re-read (`WATCH_POLL_SECONDS`, the fallback for other instances'
changes) is set beyond the test's length, so a read seen here is one per change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from electric.registration.v1 import registration_pb2
from electric_registration import api

from tests.component.registration.test_registration_screens import (
    _progress,
    _seated_table,
    _table_and_hand_started,
)
from tests.component.registration.test_registration_watch_shared import my_tables_reads
from tests.support.reg_harness import FakeTable, Stack, eventually, md

DEVICES = 4
CHANGES = 12


@pytest.fixture
def long_poll(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No periodic re-read while the test runs (set before the stack starts)."""
    monkeypatch.setattr(api, "WATCH_POLL_SECONDS", 600.0)
    yield


async def test_moves_reach_every_watcher_with_no_read(long_poll: None, stack: Stack) -> None:
    table_id, seats = await _seated_table(stack, ("q1", "q2", "q3"))
    fake = FakeTable(stack.urls["table"], stack.bus)
    order = [seats["q1"], seats["q2"], seats["q3"]]
    last: list[registration_pb2.MyTable | None] = [None] * DEVICES
    calls = []

    async def watch(device: int) -> None:
        call = stack.reg.WatchMyTables(registration_pb2.WatchMyTablesRequest(), metadata=md("q1"))
        calls.append(call)
        async for snap in call:
            mine = [t for t in snap.tables if t.table_id == table_id]
            if mine:
                last[device] = mine[0]

    tasks = [asyncio.ensure_future(watch(d)) for d in range(DEVICES)]
    try:
        await fake.emit(table_id, *_table_and_hand_started(table_id, seats))

        async def first_hand() -> bool | None:
            return True if all(t and t.current_hand_number for t in last) else None

        await eventually(first_hand)  # every device shows the first hand before the moves
        stacks = dict.fromkeys(order, 1500)
        with my_tables_reads() as reads:
            for k in range(CHANGES):
                seat = order[k % 3]
                stacks[seat] -= 10 * (k + 1)  # a bet each turn
                hand = 1 + k // 6
                await fake.emit(table_id, _progress(table_id, hand, stacks, seat))
                want = (seat, hand, stacks[order[0]])

                async def shown(want: tuple[int, int, int] = want) -> bool | None:
                    got = {(t.turn_seat, t.current_hand_number, t.my_stack) for t in last if t}
                    return True if got == {want} and all(last) else None

                await eventually(shown)
                await asyncio.sleep(0.3)  # past the watchers' least interval between pushes
        assert reads == [], f"{len(reads)} My Tables reads for {CHANGES} moves"
        # What was pushed is what a read of the consumer's rows returns.
        [read] = await stack.my_tables("q1")
        assert all(t == read for t in last), (last, read)
        assert (read.my_turn and read.turn_seat == order[0] == seats["q1"]) or not read.my_turn
    finally:
        for call in calls:
            call.cancel()
        for task in tasks:
            task.cancel()
        fake.close()
