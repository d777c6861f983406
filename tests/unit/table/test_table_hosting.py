"""The one driver loop and host core of every live table (`electric_table.host.tables`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from electric_table.host import tables as hosting
from electric_table.host.tables import LiveTables, Suspensions, drive


@dataclass
class Table:
    table_id: str = "t-1"
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    kick: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None


class Moved(Exception):
    pass


def test_steps_run_under_the_lock_until_the_table_is_no_longer_driven() -> None:
    async def scenario() -> list[bool]:
        t, locked = Table(), []

        async def step() -> float:
            locked.append(t.lock.locked())
            return 60 if len(locked) == 3 else 0  # the third step sleeps long

        task = asyncio.create_task(drive(t, step, driven=lambda: len(locked) < 4))
        while len(locked) < 3:
            await asyncio.sleep(0)
        t.kick.set()  # a command changed the table: the long sleep ends now
        await asyncio.wait_for(task, timeout=5)
        return locked

    assert asyncio.run(scenario()) == [True, True, True, True]


def test_a_failing_step_is_counted_and_retried_and_a_moved_table_ends_the_loop() -> None:
    async def scenario() -> tuple[int, int]:
        t, calls, errors = Table(), [0], [0]

        async def step() -> float:
            calls[0] += 1
            if calls[0] == 1:
                raise RuntimeError("database away")
            raise Moved

        def on_error() -> None:
            errors[0] += 1
            t.kick.set()  # do not wait the retry's second

        await asyncio.wait_for(
            drive(t, step, driven=lambda: True, stop_on=(Moved,), on_error=on_error), timeout=5
        )
        return calls[0], errors[0]

    assert asyncio.run(scenario()) == (2, 1)


def test_stopping_a_driver_waits_for_it_and_close_stops_the_rest() -> None:
    async def scenario() -> None:
        host: LiveTables[Table] = LiveTables(asyncio.Event())
        a, b = Table("a"), Table("b")
        host.tables = {"a": a, "b": b}
        ended: list[str] = []

        async def forever(name: str) -> None:
            try:
                await asyncio.sleep(3600)
            finally:
                ended.append(name)

        a.task = asyncio.create_task(forever("a"))
        b.task = asyncio.create_task(forever("b"))
        host.in_background(forever("owed"), name="owed")
        await asyncio.sleep(0)
        assert host.holds(a) and not host.holds(Table("a"))
        await host.stop_driver(a)
        assert ended == ["a"] and a.task is None
        await host.close()
        assert sorted(ended) == ["a", "b", "owed"]

    asyncio.run(scenario())


def test_a_driver_does_not_cancel_itself() -> None:
    async def scenario() -> list[bool]:
        host: LiveTables[Table] = LiveTables(asyncio.Event())
        t, seen = Table(), []

        async def own_driver() -> None:
            seen.append(host.cancel_driver(t) is None)

        t.task = asyncio.create_task(own_driver())
        await t.task
        return seen

    assert asyncio.run(scenario()) == [True]


@pytest.mark.parametrize(("cap", "slept"), [(None, 0.3), (0.05, 0.05)])
def test_the_sleep_is_what_the_step_asked_capped_when_asked(
    monkeypatch: pytest.MonkeyPatch, cap: float | None, slept: float
) -> None:
    timeouts: list[float] = []

    async def no_wait(awaitable: Any, timeout: float) -> None:
        awaitable.close()  # the kick's wait, never awaited here
        timeouts.append(timeout)
        raise TimeoutError

    monkeypatch.setattr(hosting.asyncio, "wait_for", no_wait)

    async def scenario() -> None:
        t = Table()

        async def step() -> float:
            return 0.3

        await drive(t, step, driven=lambda: len(timeouts) < 2, max_sleep_s=cap)

    asyncio.run(scenario())
    assert timeouts == [slept, slept]


def test_suspended_tables_are_resumed_when_owned_again_and_dropped_otherwise() -> None:
    async def scenario() -> None:
        held: Suspensions[Table] = Suspensions()
        mine, theirs, fresh = Table("mine"), Table("theirs"), Table("fresh")
        for t in (mine, theirs):
            held.hold(t)
        resumed: list[str] = []
        dropped: list[str] = []

        async def resume(t: Table) -> bool:
            resumed.append(t.table_id)
            return True

        def owns(table_id: str) -> bool:
            return table_id != "theirs"

        kwargs = {"owns": owns, "resume": resume, "drop": lambda t: dropped.append(t.table_id)}
        assert await held.settle(older_than=60, **kwargs) == 0  # the sweep's grace
        assert set(held.held) == {"mine", "theirs"}
        held.hold(fresh)
        assert await held.settle(**kwargs) == 2
        assert (sorted(resumed), dropped, held.held, held.kept) == (
            ["fresh", "mine"],
            ["theirs"],
            {},
            2,
        )

    asyncio.run(scenario())
