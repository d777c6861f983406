"""The repair of a broken live UTH table by its driver (``casino.uth.recovery``): what it
does when the round cannot be replayed and its void cannot be stored."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from electric_eventlog.fencing import FencedError
from electric_table.casino import repo
from electric_table.casino.uth import recovery
from electric_table.casino.uth.live import LiveTable
from electric_table.refusals import TableMoved


class Tables:
    """What the repair uses of ``UthTables``; the round's stream cannot be replayed."""

    def __init__(self) -> None:
        self.engine, self.store = None, None
        self.moved_tables: list[str] = []
        self.broke: list[str] = []

    async def _reload(self, t: LiveTable) -> None:
        raise ValueError("a withheld seed does not match its commitment")

    def moved(self, t: LiveTable) -> None:
        self.moved_tables.append(t.table_id)

    def _broke(self, t: LiveTable, why: str) -> None:
        self.broke.append(why)
        t.broken = why


def open_round(_engine: Any, table_id: str) -> Any:
    return SimpleNamespace(round_id="uth-r-1", status=repo.OPEN, table_id=table_id)


def test_a_void_refused_by_the_fence_drops_the_table_and_ends_its_driver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before, every failure of the void (the table's fence taken by another instance too)
    left the table broken here, retried every second by a driver that never stopped."""

    def fenced(*_args: Any) -> None:
        raise FencedError("casino-table-uth-1", 3, 4)

    monkeypatch.setattr(recovery, "_latest_round", open_round)
    monkeypatch.setattr(recovery, "void_unreplayable", fenced)
    tables, t = Tables(), LiveTable("uth-1", broken="round not reloaded")
    with pytest.raises(TableMoved):  # (the driver's stop_on: it ends)
        asyncio.run(recovery.repair(tables, t))  # type: ignore[arg-type]
    assert tables.moved_tables == ["uth-1"]


def test_a_void_that_fails_leaves_the_table_broken_and_is_tried_again_quietly(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def away(*_args: Any) -> None:
        raise ConnectionError("the database is away")

    monkeypatch.setattr(recovery, "_latest_round", open_round)
    monkeypatch.setattr(recovery, "void_unreplayable", away)
    tables, t = Tables(), LiveTable("uth-1", broken="round not reloaded")
    for _ in range(3):
        assert asyncio.run(recovery.repair(tables, t)) is False  # type: ignore[arg-type]
        assert t.broken.startswith("round cannot be replayed nor voided")
    said = [r.getMessage() for r in caplog.records]
    # Each said once, not at every one of the driver's tries.
    assert said.count("uth.round_unreplayable") == 1
    assert said.count("uth.auto_void_failed") == 1
