"""A tournament table re-read after a failed write is retried while the database is away
(issue 18, found by the chaos run: a PostgreSQL fast restart).

The last Act of a tournament failed when the restart cut the connection, and the re-read of
the table from its stream (``TableManager.reload``) failed too: the server was still
starting. Before the fix the exception left the table with the unstored command in memory:
the tournament finished there only (no TournamentFinished stored, no prize paid) and the
table was released as finished. Now the re-read is retried until the store answers.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from electric_eventlog import EventStore
from electric_table.host.tables import drive
from electric_table.refusals import NotStored
from electric_table.tournament import runtime
from electric_table.tournament.driver import TableDriver
from electric_table.tournament.handlers import TableHandlers
from electric_table.tournament.runtime import TableManager
from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError


def manager_failing(times: int) -> tuple[TableManager, list[str]]:
    engine = create_engine("sqlite://")
    manager = TableManager(engine, EventStore(engine, producer="table"), stopping=asyncio.Event())
    calls: list[str] = []
    fresh = SimpleNamespace(
        tournament="stored",
        version=7,
        story="story",
        last_event_id="e7",
        turn_cause="c",
        requests={("ann", "r-7"): "stored"},
        last_event_type="stored type",
    )

    def rebuild(table_id: str) -> Any:
        calls.append(table_id)
        if len(calls) <= times:
            raise OperationalError("select", {}, ConnectionError("the database is shutting down"))
        return fresh

    manager.rebuild = rebuild  # type: ignore[method-assign]
    return manager, calls


def memory_ahead() -> Any:
    rt = SimpleNamespace(
        table_id="t",
        tournament="ahead",
        version=8,
        story="x",
        last_event_id="e8",
        turn_cause="",
        requests={("ann", "r-8"): "in memory only"},
        stale="",
        task=None,
        kick=asyncio.Event(),
        notified=[],
        notify=None,
    )
    rt.notify = rt.notified.append
    return rt


async def test_the_reload_waits_for_the_database() -> None:
    manager, calls = manager_failing(times=3)
    rt = memory_ahead()
    await manager.reload(rt)
    assert calls == ["t"] * 4
    assert (rt.tournament, rt.version, rt.last_event_id) == ("stored", 7, "e7")
    assert rt.requests == {("ann", "r-7"): "stored"}  # the request book is the store's too


async def test_the_reload_gives_up_after_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "RELOAD_BUDGET_S", 0.25)
    manager, _ = manager_failing(times=1_000)
    rt = memory_ahead()
    with pytest.raises(OperationalError):
        await manager.reload(rt)
    # Memory may be ahead of the stream: commands are refused and the driver re-reads it.
    assert rt.stale and rt.kick.is_set() and rt.tournament == "ahead"


async def test_a_stale_table_is_whole_again_once_a_reload_succeeds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runtime, "RELOAD_BUDGET_S", 0.25)
    manager, calls = manager_failing(times=4)
    rt = memory_ahead()
    with pytest.raises(OperationalError):
        await manager.reload(rt)  # three tries within the budget
    with pytest.raises(OperationalError):
        await manager.reload(rt, patient=False)  # the driver's: one try
    assert len(calls) == 4 and rt.stale
    await manager.reload(rt, patient=False)
    assert not rt.stale and (rt.tournament, rt.version) == ("stored", 7)
    assert rt.notified == ["stored type"]  # its watchers see the stored table


async def test_a_cancelled_reload_leaves_the_table_stale() -> None:
    manager, _ = manager_failing(times=1_000)
    rt = memory_ahead()
    task = asyncio.create_task(manager.reload(rt))
    await asyncio.sleep(0.05)  # failing and retrying
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert rt.stale and rt.tournament == "ahead"


async def test_a_stale_table_refuses_commands_and_its_driver_waits_between_reloads() -> None:
    manager, calls = manager_failing(times=1_000)
    rt = memory_ahead()
    rt.lock = asyncio.Lock()
    with pytest.raises(OperationalError):
        await manager.reload(rt, patient=False)
    assert rt.stale
    # A command is refused before it touches the aggregate ("ahead" has no handle()).
    with pytest.raises(NotStored):
        await TableHandlers(manager).apply(rt, "any command")  # type: ignore[arg-type]
    # The driver re-reads it, every STALE_RETRY_S while the database is away: before, each
    # failed re-read kicked the driver again and it looped as fast as the database failed.
    driver = TableDriver(manager, TableHandlers(manager))
    task = asyncio.create_task(drive(rt, lambda: driver._step(rt), driven=lambda: True))
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(calls) == 2 and rt.stale  # the first reload, then the driver's one


async def test_a_table_that_looks_finished_while_a_command_holds_its_lock_is_still_driven() -> None:
    """A command applies its events in memory before its write: the last Act of a tournament
    shows it finished until the write fails and the table is reloaded. A driver that ended on
    that sight never stepped again while its table stayed hosted (a 450.8 s stall)."""
    manager, _ = manager_failing(times=0)
    rt = memory_ahead()
    rt.lock = asyncio.Lock()
    rt.finished = True  # in memory
    manager.tables[rt.table_id] = rt
    driver = TableDriver(manager, TableHandlers(manager))
    async with rt.lock:  # the command, its write in flight
        assert driver.driven(rt)
    assert not driver.driven(rt)  # finished, and nothing in flight: the driver ends
    rt.stale = "a write and its reload failed"
    assert driver.driven(rt)  # memory only, maybe: re-read first
    del manager.tables[rt.table_id]
    assert not driver.driven(rt)  # no longer the copy held here
