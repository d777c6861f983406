"""Issue 18: finished tables leave the table service's memory, and the gauge
``electric_table_tables_in_memory`` shows what is held. A finished table asked for again is
rebuilt from its stream (same answer) and released again."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest
from electric.table.v1 import table_pb2
from electric_platform.eventpath import inprocess_bus
from electric_table.tournament.runtime import TableManager

from tests.component.table.test_table_service_grpc import Env, running_env
from tests.support.table_kit import Bot, md, registration_messages, wait_table

PLAYERS = ("ann", "ben", "cat")
TABLES = 3


def _held(env: Env) -> float | None:
    return env.host.metrics.registry.get_sample_value("electric_table_tables_in_memory")


async def _until(predicate: object, what: str, timeout: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, f"timed out: {what}"
        await asyncio.sleep(0.02)


async def test_finished_tables_are_released_and_rebuilt_on_demand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ELECTRIC_TABLE_FINISHED_RETENTION_MS", "300")
    async with running_env(tmp_path) as env:
        manager: TableManager = env.manager
        assert manager.finished_retention_s == 0.3
        assert _held(env) == 0
        ids = [str(uuid.uuid4()) for _ in range(TABLES)]
        for table_id in ids:
            messages, _ = registration_messages(
                table_id, PLAYERS, action_timer_ms=1000, level_ms=700
            )
            await inprocess_bus().publish(messages)
            await wait_table(env.stub, table_id, PLAYERS[0])
        await _until(lambda: len(manager.tables) == TABLES, "tables loaded")
        assert _held(env) == TABLES
        bots = [Bot(p, t, seed=i + 1) for t in ids for i, p in enumerate(PLAYERS)]
        await asyncio.wait_for(asyncio.gather(*(b.play(env.target) for b in bots)), 180)

        # Every tournament finished: after the retention window nothing is held any more.
        await _until(lambda: not manager.tables, "finished tables released", timeout=10)
        assert _held(env) == 0
        assert manager.released == TABLES
        assert env.host.metrics.registry.get_sample_value("electric_table_live_tables") == 0
        # Metrics series do not grow with the number of tables: no label names a table.
        registry = env.host.metrics.registry
        labels = {
            v for fam in registry.collect() for smp in fam.samples for v in smp.labels.values()
        }
        assert not {v for v in labels for t in ids if t in v}, "a metric label holds a table id"

        # Asked for again: rebuilt from the stream, the same finished view, released again.
        view = (
            await env.stub.GetTable(table_pb2.GetTableRequest(table_id=ids[0]), metadata=md("ann"))
        ).table
        assert view.status == table_pb2.TABLE_STATUS_FINISHED
        assert ids[0] in manager.tables and _held(env) == 1
        rebuilt = manager.tables[ids[0]]
        assert rebuilt.finished and rebuilt.task is None  # no driver for a finished table
        await _until(lambda: not manager.tables, "re-loaded table released again", timeout=5)
        assert manager.released == TABLES + 1
