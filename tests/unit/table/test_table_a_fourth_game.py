"""Adding a game does not touch the host (issue 25, item 1).

A made-up fourth game ("dice": each table rolls on its own clock) is hosted here with the
host's public pieces only: `host.tables.LiveTables` (the copies served here and the one
load: the game says only whether a table exists and how it is rebuilt), `host.tables.drive`
(the driver loop), `host.tables.Suspensions` (the rebalance protocol) and a follower of
`host.ownership.PartitionOwnership` (partition scopes and fences). Nothing under
`electric_table` changes for it. It gets what the tournament and UTH tables get: loaded
under its epoch when its partition is assigned (a table of another instance's partition is
not), driven, suspended when revoked, resumed as the same object under the next epoch when
given back, dropped when not.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from electric_eventlog import create_engine, migrate
from electric_eventlog.fencing import Fence
from electric_table.host.ownership import PartitionOwnership, partition_for
from electric_table.host.tables import LiveTables, Suspensions, drive

PARTS = 4


@dataclass
class DiceTable:
    table_id: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    kick: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    fence: Fence | None = None
    rolls: int = 0


class Dice(LiveTables[DiceTable]):
    """The fourth game's tables: a `LiveTables` and a `PartitionFollower`."""

    def __init__(self, ownership: PartitionOwnership, names: list[str]) -> None:
        super().__init__(asyncio.Event())
        self.ownership, self.names = ownership, names
        self.suspensions: Suspensions[DiceTable] = Suspensions()
        ownership.followers.append(self)
        self.fencer = self._fence
        self.start_driver = self._driver
        self.rebuilt = 0

    # What the host's load asks of a game.
    def exists(self, table_id: str) -> bool:
        return table_id in self.names

    def rebuild(self, table_id: str) -> DiceTable:
        self.rebuilt += 1
        return DiceTable(table_id)

    def retire(self, t: DiceTable) -> None:
        self.tables.pop(t.table_id, None)
        self.cancel_driver(t)

    def owns(self, table_id: str) -> bool:
        return self.ownership.holds_partition(partition_for(table_id, PARTS))

    def _fence(self, table_id: str) -> Fence:
        return self.ownership.take(f"dice-{table_id}", partition_for(table_id, PARTS))

    def _driver(self, t: DiceTable) -> asyncio.Task[None]:
        async def roll() -> float:
            t.rolls += 1
            return 0.01

        def driven() -> bool:
            return not self.stopping.is_set() and self.holds(t)

        return asyncio.create_task(drive(t, roll, driven=driven))

    async def _resume(self, t: DiceTable) -> bool:
        t.fence = await asyncio.to_thread(self._fence, t.table_id)
        self.tables[t.table_id] = t
        self.installed(t)
        return True

    async def on_assigned(self, partitions: set[int]) -> int:
        await self.suspensions.settle(owns=self.owns, resume=self._resume, drop=lambda t: None)
        hosted = 0
        for name in self.names:
            if partition_for(name, PARTS) in partitions and name not in self.tables:
                hosted += await self.load(name) is not None
        return hosted

    async def on_revoked(self, partitions: set[int]) -> int:
        gone = [
            t for t in list(self.tables.values()) if partition_for(t.table_id, PARTS) in partitions
        ]
        for t in gone:
            del self.tables[t.table_id]
            await self.stop_driver(t)
            self.suspensions.hold(t)
        return len(gone)

    async def sweep(self) -> int:
        return 0


async def _rolling(t: DiceTable) -> None:
    """``t`` is driven: its roll count grows (bounded wait, whatever the machine's load)."""
    before = t.rolls
    for _ in range(500):
        if t.rolls > before + 2:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{t.table_id} is not driven")


def test_a_fourth_game_is_fenced_driven_suspended_and_resumed_by_the_host(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'dice.db'}")
    migrate(engine)
    names = [f"dice-{n}" for n in range(6)]
    everything = set(range(PARTS))

    async def scenario() -> None:
        ownership = PartitionOwnership(engine, owner="instance-a", partitions=PARTS)
        dice = Dice(ownership, names)
        assert await ownership.on_assigned(everything) == len(names)
        for t in dice.tables.values():
            assert t.fence is not None and t.fence.epoch == 1
            await _rolling(t)
        # One load per table, however many ask at once; a table that is not a game's, none.
        first = dice.tables[names[0]]
        got = await asyncio.gather(*(dice.load(names[0]) for _ in range(5)))
        assert all(t is first for t in got) and dice.rebuilt == len(names)
        assert await dice.load("no-such-table") is None and dice.rebuilt == len(names)

        copies = dict(dice.tables)
        assert await ownership.on_revoked(everything) == len(names)
        assert not dice.tables and all(t.task is None for t in copies.values())
        frozen = {name: t.rolls for name, t in copies.items()}
        await asyncio.sleep(0.1)
        assert {name: t.rolls for name, t in copies.items()} == frozen  # not driven

        # Given back: the same objects, under the next epoch, driven again.
        away = partition_for(names[0], PARTS)
        await ownership.on_assigned(everything - {away})
        kept = [n for n in names if partition_for(n, PARTS) != away]
        assert sorted(dice.tables) == sorted(kept) and dice.suspensions.kept == len(kept)
        for name in kept:
            t = dice.tables[name]
            assert t is copies[name] and t.fence is not None and t.fence.epoch == 2
            await _rolling(t)
        assert names[0] not in dice.tables and names[0] not in dice.suspensions.held
        # Its partition is another instance's now: the host's load takes no epoch for it.
        other = PartitionOwnership(engine, owner="instance-b", partitions=PARTS)
        await other.on_assigned({away})
        assert await dice.load(names[0]) is None and names[0] not in dice.tables
        await dice.close()

    asyncio.run(scenario())
    engine.dispose()
