"""The lobby lists each tier's running tables, so a page can offer to watch them (issue 27:
"opening it shows the bots' tables"): a table is listed once it started, with its hand number,
multiplier and prize pool, and is gone when its tournament finished."""

from __future__ import annotations

from electric.registration.v1 import registration_pb2
from electric.table.v1 import events_pb2 as table_events

from tests.component.registration.test_registration_screens import (
    _progress,
    _seated_table,
    _table_and_hand_started,
)
from tests.support.reg_harness import FakeTable, Stack, eventually, md


async def _running(stack: Stack, tier_id: str) -> list[registration_pb2.RunningTable]:
    lobby = await stack.reg.ListLobby(registration_pb2.ListLobbyRequest(), metadata=md("x"))
    [tier] = [t for t in lobby.tiers if t.tier_id == tier_id]
    return list(tier.running_tables)


async def test_the_lobby_lists_running_tables_until_they_finish(stack: Stack) -> None:
    table_id, seats = await _seated_table(stack, ("r1", "r2", "r3"))
    [entry] = (await stack.my_tables("r1"))[0].my_entries
    tier_id = entry.tier_id
    # Started (buy-ins settled, multiplier drawn): listed, before its first hand.
    [started] = await _running(stack, tier_id)
    assert (started.table_id, started.current_hand_number) == (table_id, 0)
    fake = FakeTable(stack.urls["table"], stack.bus)
    try:
        await fake.emit(table_id, *_table_and_hand_started(table_id, seats))
        await fake.emit(table_id, _progress(table_id, 2, {s: 1500 for s in seats.values()}))

        async def listed() -> registration_pb2.RunningTable | None:
            running = await _running(stack, tier_id)
            return running[0] if running and running[0].current_hand_number == 2 else None

        table = await eventually(listed)
        [mine] = await stack.my_tables("r1")
        assert table.table_id == table_id and table.table_name == mine.table_name
        assert (table.multiplier, table.prize_pool.cents) == (
            mine.multiplier,
            mine.prize_pool.cents,
        )
        assert table.HasField("started_at")
        await fake.emit(
            table_id,
            table_events.TournamentFinished(
                table_id=table_id,
                tournament_id=table_id,
                places=[
                    table_events.FinishingPlace(place=n, player_id=p, seat=seats[p])
                    for n, p in enumerate(("r1", "r2", "r3"), start=1)
                ],
                hands_played=2,
            ),
        )

        async def gone() -> bool | None:
            return True if await _running(stack, tier_id) == [] else None

        assert await eventually(gone)
    finally:
        fake.close()
