"""A command's de-duplication costs no read (issue 26 item 4): the table holds the outcome
of every command stored on it (`TableRuntime.requests`, loaded with the table after its
events, added to after each commit). A first Act, its concurrent and late retries, a
refused request and its retry read nothing from ``table_requests``; a table rebuilt from
the store (another instance taking it over, a restart) still answers a retry as the first
time, from the one read of its load."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import grpc
import pytest
from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2
from sqlalchemy import Engine, event

from tests.component.table.test_table_service_grpc import Env, env, my_turn, start
from tests.support.table_kit import md

__all__ = ["env"]  # the fixture, used by name


@contextmanager
def request_reads(engine: Engine) -> Iterator[list[str]]:
    """The SELECTs on ``table_requests`` run through ``engine`` while inside."""
    seen: list[str] = []

    def before(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "table_requests" in statement:
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", before)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", before)


async def test_repeated_and_refused_requests_are_answered_without_a_read(env: Env) -> None:
    table_id = await start(env, action_timer_ms=20_000, level_ms=60_000)
    player, view = await my_turn(env, table_id)
    call = next(a for a in view.legal_actions if a.type == table_pb2.ACTION_TYPE_CALL)
    act = table_pb2.ActRequest(
        request_id="book-1",
        table_id=table_id,
        hand_number=view.hand_number,
        action_seq=view.action_seq,
        action=call.type,
    )
    stale = table_pb2.ActRequest(
        request_id="book-stale",
        table_id=table_id,
        hand_number=999,
        action_seq=1,
        action=table_pb2.ACTION_TYPE_FOLD,
    )
    with request_reads(env.manager.engine) as reads:
        results = await asyncio.gather(
            *(env.stub.Act(act, metadata=md(player)) for _ in range(3)), return_exceptions=True
        )
        assert all(isinstance(r, table_pb2.ActResponse) for r in results), results
        await env.stub.Act(act, metadata=md(player))  # a late retry
        for _ in range(2):
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await env.stub.Act(stale, metadata=md(player))
            assert info.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert reads == []

    # Rebuilt from the store: the outcomes come back with the table, in one read.
    assert await env.manager.disown(table_id)
    with request_reads(env.manager.engine) as reads:
        assert await env.manager.load(table_id) is not None
        again = await env.stub.Act(act, metadata=md(player))
        assert again.table.hand_number == view.hand_number
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await env.stub.Act(stale, metadata=md(player))
        assert info.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    assert len(reads) == 1
    taken = [
        m
        for _, m in env.events(table_id)
        if isinstance(m, tev.ActionTaken) and m.request_id == "book-1"
    ]
    assert len(taken) == 1
