"""Many watchers of one table cost one view build per change (issue 26 item 3): each of the
three players watches from two devices while the table plays itself (every turn times
out); the domain builds the table's public view once per stored change pushed, not once
per watcher (before: every watcher built its own whole view at every change)."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from electric.table.v1 import table_pb2

from tests.component.table.test_table_service_grpc import PLAYERS, Env, env, start
from tests.support.table_kit import md

__all__ = ["env"]  # the fixture, used by name

DEVICES = 2
#: Pushed views each watcher waits for (every turn times out: a change every ~0.2 s).
VIEWS = 12


async def test_n_watchers_of_a_table_share_one_view_build_per_change(env: Env) -> None:
    table_id = await start(env, action_timer_ms=200, time_bank_ms=0, level_ms=600_000)
    rt = env.manager.tables[table_id]
    builds: list[int] = []
    whole_view = rt.tournament.view

    def counted(seat: int | None, at: int) -> Any:
        builds.append(seat if seat is not None else -1)
        return whole_view(seat, at)

    rt.tournament.view = counted  # type: ignore[method-assign]
    versions: list[set[int]] = []

    async def watch(player: str) -> None:
        seen: set[int] = set()
        versions.append(seen)
        call = env.stub.WatchTable(
            table_pb2.WatchTableRequest(table_id=table_id), metadata=md(player)
        )
        try:
            first = True
            async for resp in call:
                if not resp.HasField("table"):
                    continue
                if first:  # the snapshot on subscribing: built for this watcher
                    first = False
                    continue
                seen.add(resp.table.version)
                if len(seen) >= VIEWS or resp.table.status == table_pb2.TABLE_STATUS_FINISHED:
                    return
        finally:
            call.cancel()

    watchers = [watch(p) for p in PLAYERS for _ in range(DEVICES)]
    await asyncio.wait_for(asyncio.gather(*watchers), timeout=120)
    with contextlib.suppress(AttributeError):
        del rt.tournament.view  # type: ignore[method-assign]
    pushed = set().union(*versions)
    per_watcher = sum(len(v) for v in versions)
    assert per_watcher >= 3 * len(pushed) > 0  # the watchers saw the same changes
    # One public build per pushed change (+ one whole view per watcher's snapshot).
    snapshots = len(PLAYERS) * DEVICES
    assert builds.count(-1) <= len(pushed) + snapshots, (len(builds), len(pushed))
    assert len(builds) <= len(pushed) + 2 * snapshots, (len(builds), len(pushed))
