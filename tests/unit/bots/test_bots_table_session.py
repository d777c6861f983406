"""electric_bots.table_play against a scripted TableService: which messages of a resumed
watch a bot handles, and when it lets a table go (issue 28 item 5, the stuck bot)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from electric.registration.v1 import registration_pb2 as reg
from electric.table.v1 import table_pb2
from electric_bots.player import BotPlayer
from electric_bots.table_play import Outcome, TableSession

from tests.support.bot_kit import make_bot, set_my_table

T = table_pb2
HANG = object()  # the stream stays silent
EOF = object()  # the server ends the stream


def _error(code: grpc.StatusCode) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), "scripted")


def _msg(seq: int, *, event: bool = True, status: int = 0, hand: bool = True) -> Any:
    """A WatchTable message: an event (``event``) and/or a view (``status``)."""
    m = T.WatchTableResponse(sequence=seq, event_type="electric.table.v1.X" if event else "")
    if status:
        m.table.status = status
        m.table.version = seq
        if hand:
            m.table.hand.hand_number = 1
    return m


class _Call:
    def __init__(self, script: list[Any]) -> None:
        self._script = list(script)

    async def read(self) -> Any:
        if not self._script:
            await asyncio.Event().wait()
        item = self._script.pop(0)
        if item is HANG:
            await asyncio.Event().wait()
        if item is EOF:
            return grpc.aio.EOF
        if isinstance(item, grpc.StatusCode):
            raise _error(item)
        return item

    def cancel(self) -> bool:
        return True


class ScriptedTable:
    """WatchTable answers the next script (the last one repeats); GetTable answers
    ``table_status`` (0: UNAVAILABLE)."""

    def __init__(self, *scripts: list[Any], table_status: int = 0) -> None:
        self.scripts = list(scripts)
        self.requests: list[T.WatchTableRequest] = []
        self.table_status = table_status

    def WatchTable(self, request: T.WatchTableRequest, **_: Any) -> _Call:
        self.requests.append(request)
        script = self.scripts.pop(0) if len(self.scripts) > 1 else self.scripts[0]
        return _Call(script)

    async def GetTable(self, request: T.GetTableRequest, **_: Any) -> T.GetTableResponse:
        if not self.table_status:
            raise _error(grpc.StatusCode.UNAVAILABLE)
        return T.GetTableResponse(table=T.TableView(status=self.table_status))  # type: ignore[arg-type]


@pytest.fixture
async def bot() -> AsyncIterator[BotPlayer]:
    channel = grpc.aio.insecure_channel("127.0.0.1:9")  # never called: the stub is scripted
    try:
        yield make_bot("p1", channel)
    finally:
        await channel.close()


async def _run(
    bot: BotPlayer, table: ScriptedTable, timeout: float = 5
) -> tuple[Outcome, list[int]]:
    """Play the scripted table; the outcome and the sequences of the views handled."""
    bot._table = table
    handled: list[int] = []
    session = TableSession(bot, "t1")
    on_view = session.on_view

    async def recording(view: T.TableView) -> bool:
        handled.append(view.version)
        return await on_view(view)

    session.on_view = recording  # type: ignore[method-assign]
    return await asyncio.wait_for(session.run(), timeout), handled


async def test_a_resumed_watch_handles_each_update_once(bot: BotPlayer) -> None:
    running, finished = T.TABLE_STATUS_RUNNING, T.TABLE_STATUS_FINISHED
    table = ScriptedTable(
        # A read-model view (no hand), the same version with the hand, events, then it moves.
        [_msg(5, event=False, status=running, hand=False), _msg(5, event=False, status=running),
         _msg(6), _msg(7, status=running), grpc.StatusCode.UNAVAILABLE],
        # Resumed after 7: a server behind the bot repeats 7 and sends an older view; the
        # first new event, then the server ends the stream.
        [_msg(7, status=running), _msg(6, event=False, status=running), _msg(8), EOF],
        [_msg(9, status=finished)],
    )  # fmt: skip
    outcome, handled = await _run(bot, table)
    assert outcome is Outcome.FINISHED
    assert [r.from_sequence for r in table.requests] == [0, 7, 8]
    assert handled == [5, 5, 7, 9]  # the richer view of 5 once; nothing older than seen
    assert "t1" in bot._stats.tables_finished and not bot._stats.errors


async def test_registration_ends_a_table_the_table_service_cannot_show(bot: BotPlayer) -> None:
    """UNAVAILABLE for ever (its owner never comes back) or NOT_FOUND for ever (cancelled
    before it started): My Tables decides."""
    set_my_table(bot, "t1", reg.TABLE_STATUS_FINISHED)
    outcome, _ = await _run(bot, ScriptedTable([grpc.StatusCode.UNAVAILABLE]))
    assert outcome is Outcome.FINISHED and "t1" in bot._stats.tables_finished
    set_my_table(bot, "t1", reg.TABLE_STATUS_CANCELLED)
    outcome, _ = await _run(bot, ScriptedTable([grpc.StatusCode.NOT_FOUND]))
    assert outcome is Outcome.CANCELLED and "t1" in bot._stats.tables_cancelled
    assert not bot._stats.errors


async def test_a_table_going_nowhere_is_given_up_but_not_one_waiting_for_players(
    bot: BotPlayer,
) -> None:
    bot.stall_seconds = 0.5
    set_my_table(bot, "t1", reg.TABLE_STATUS_REGISTERING)
    waiting = asyncio.create_task(_run(bot, ScriptedTable([grpc.StatusCode.NOT_FOUND])))
    await asyncio.sleep(1.5)
    assert not waiting.done()  # three stall periods waiting for players: still there
    waiting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await waiting
    set_my_table(bot, "t1", reg.TABLE_STATUS_RUNNING)  # filled; its owner never answers
    table = ScriptedTable([grpc.StatusCode.UNAVAILABLE])
    outcome, _ = await _run(bot, table)
    assert outcome is Outcome.ABANDONED and "t1" in bot._stats.tables_abandoned
    assert 2 <= len(table.requests) <= 5  # 0.2 s apart, for 0.5 s
    assert bot._stats.errors == 1, bot._stats.last_errors
    assert bot._stats.last_errors[0].startswith("gave up table t1: nothing new for")
    assert "the last ended with UNAVAILABLE" in bot._stats.last_errors[0]


async def test_a_stream_that_ends_with_nothing_asks_the_table(bot: BotPlayer) -> None:
    """Resumed at the end of a finished table, the stream ends at once: GetTable says so."""
    table = ScriptedTable([EOF], table_status=T.TABLE_STATUS_FINISHED)
    outcome, _ = await _run(bot, table)
    assert outcome is Outcome.FINISHED and len(table.requests) == 1
