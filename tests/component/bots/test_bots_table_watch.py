"""Issue 28 item 5 over a real table server (gRPC, SQLite, in-process bus): a watch that ends
for any reason resumes from the last sequence the client saw, with no gap and no repeat, and
a tournament bot lets go of a table that is over instead of reopening its watch for ever
(the stuck bot of the chaos run: 19,914 resubscribes, never drained)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from electric.registration.v1 import registration_pb2
from electric.table.v1 import table_pb2
from electric_bots.player import BotStats
from electric_bots.table_play import Outcome, TableSession
from electric_platform.eventpath import inprocess_bus
from electric_table.tournament.story import for_viewer

from tests.component.table.test_table_service_grpc import PLAYERS, Env, running_env, start, until
from tests.support.bot_kit import RecordingTable, make_bot, set_my_table
from tests.support.table_kit import md, registration_messages, wait_table

REG = registration_pb2


@pytest.fixture
async def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Env]:
    # A finished table leaves memory quickly; an unknown table is NOT_FOUND quickly.
    monkeypatch.setenv("ELECTRIC_TABLE_FINISHED_RETENTION_MS", "300")
    monkeypatch.setenv("ELECTRIC_TABLE_WATCH_START_WAIT_MS", "300")
    async with running_env(tmp_path) as e:
        yield e


async def _move_away_and_back(env: Env, table_id: str, stop: asyncio.Event) -> int:
    """End the table's watches from the server side every few events, as a rebalance that
    moves it away and gives it back does (driver stopped, watchers told: UNAVAILABLE, then
    served again); the number of moves."""
    moves, moved_at = 0, 0
    while not stop.is_set() and moves < 8:
        await asyncio.sleep(0.02)
        rt = env.manager.tables.get(table_id)
        if rt is None or rt.finished or rt.version < moved_at + 6:
            continue
        async with rt.lock:  # no write in flight while its driver stops
            held = await env.manager.suspend(table_id)
        if held is None:
            continue
        env.manager.end_suspended(held)
        await asyncio.sleep(0.05)  # its watchers see it gone and end
        env.manager.resume(held, None)  # False when a call loaded it meanwhile: fine too
        moves, moved_at = moves + 1, held.version
    return moves


async def _watch_cutting_itself(
    env: Env, table_id: str, player: str, rng: random.Random
) -> list[table_pb2.WatchTableResponse]:
    """Every message ``player`` reads until the finished view, over watches it cancels
    itself after a few messages, each resumed with the last sequence read."""
    got: list[table_pb2.WatchTableResponse] = []
    while True:
        after = got[-1].sequence if got else 0
        call = env.stub.WatchTable(
            table_pb2.WatchTableRequest(table_id=table_id, from_sequence=after),
            metadata=md(player),
        )
        try:
            for _ in range(rng.randint(1, 12)):
                message = await call.read()
                if not isinstance(message, table_pb2.WatchTableResponse):
                    break  # the server ended the stream
                got.append(message)
                if message.table.status == table_pb2.TABLE_STATUS_FINISHED:
                    return got
        except grpc.aio.AioRpcError as err:
            assert err.code() is grpc.StatusCode.UNAVAILABLE, err  # moved (see above)
        finally:
            call.cancel()


async def test_watches_resume_after_the_last_sequence_seen(env: Env) -> None:
    """Three bots play a tournament while the server ends their watches (the table moves
    away and back) and a fourth client cancels its own watch every few messages: each
    resumed watch asks for the sequence after the last message read; nothing arrives twice;
    every event reaches the client exactly as an uninterrupted stream tells it; the last
    view is GetTable's."""
    table_id = await start(env, action_timer_ms=2000, level_ms=700)
    channel = grpc.aio.insecure_channel(env.target)
    stats = BotStats()
    bots = [
        make_bot(p, channel, stats=stats, seed=i + 1, strategy=s, think_scale=0.01)
        for i, (p, s) in enumerate(zip(PLAYERS, ("tag", "random", "tag"), strict=True))
    ]
    recorders = [RecordingTable(b._table) for b in bots]
    for bot, recorder in zip(bots, recorders, strict=True):
        bot._table = recorder
    stop = asyncio.Event()
    mover = asyncio.create_task(_move_away_and_back(env, table_id, stop))
    watcher = asyncio.create_task(
        _watch_cutting_itself(env, table_id, PLAYERS[0], random.Random(28))
    )
    try:
        outcomes = await asyncio.wait_for(
            asyncio.gather(*(b.play_table(table_id) for b in bots)), timeout=180
        )
        seen = await asyncio.wait_for(watcher, timeout=30)
    finally:
        stop.set()
        moves = await mover
        watcher.cancel()
        await channel.close()
    assert moves >= 2, "the table never moved: nothing was tested"
    assert Outcome.FINISHED in outcomes and set(outcomes) <= {Outcome.FINISHED, Outcome.ELIMINATED}
    assert stats.errors == 0, stats.last_errors
    resumed = 0
    for bot, recorder in zip(bots, recorders, strict=True):
        last = 0
        for n, request in enumerate(recorder.requests):
            # Resumed after the last message read: no gap (nothing skipped) ...
            assert request.from_sequence == last, (bot.player_id, n, request, last)
            resumed += bool(last)
            for message in recorder.messages(n):
                # ... and no repeat: every message is later than everything read before.
                assert message.sequence > last, (bot.player_id, n, message.sequence, last)
                last = message.sequence
    assert resumed >= 2, "no bot watch was resumed"

    # The self-cancelling client got the whole story, once, in order, as the server tells it.
    sequences = [m.sequence for m in seen]
    assert sequences == sorted(set(sequences))
    rebuilt = env.manager.rebuild(table_id)
    assert rebuilt is not None
    seat, first = seen[0].table.your_seat, seen[0].sequence
    assert seat and seen[0].HasField("table")  # a snapshot first
    told = [(m.sequence, m.event) for m in seen if m.HasField("event")]
    wanted = [
        (item.sequence, shown)
        for item in rebuilt.story.items
        if item.sequence > first
        and item.event is not None
        and (shown := for_viewer(item.event, seat)) is not None
    ]
    assert told == wanted
    assert sequences[-1] == rebuilt.story.head == rebuilt.version
    final = seen[-1].table
    view = (
        await env.stub.GetTable(
            table_pb2.GetTableRequest(table_id=table_id), metadata=md(PLAYERS[0])
        )
    ).table
    final.ClearField("server_time")
    view.ClearField("server_time")
    assert final == view


async def test_a_bot_lets_go_of_a_table_that_is_over(env: Env) -> None:
    """The stuck bot as a test: watches that keep ending end the bot's loop, in a bounded
    number of attempts, with the right outcome (each case looped for ever before)."""
    channel = grpc.aio.insecure_channel(env.target)
    try:
        await _finished_and_released(env, channel)
        await _cancelled_before_it_started(env, channel)
        await _never_played(env, channel)
    finally:
        await channel.close()


async def _finished_and_released(env: Env, channel: grpc.aio.Channel) -> None:
    """Resumed at the end of a finished table released from memory: the watch ends at once
    with nothing to send; GetTable says FINISHED."""
    table_id = await start(env, action_timer_ms=100, time_bank_ms=0, level_ms=300)
    await until(lambda: env.manager.released >= 1, timeout=120)  # finished, then released
    assert table_id not in env.manager.tables
    bot = make_bot(PLAYERS[0], channel)
    recorder = RecordingTable(bot._table)
    bot._table = recorder
    session = TableSession(bot, table_id)
    session.sequence = env.events(table_id)[-1][0]  # it saw everything but the last view
    assert await asyncio.wait_for(session.run(), timeout=10) is Outcome.FINISHED
    assert len(recorder.requests) == 1 and not recorder.read  # one watch, which sent nothing
    assert table_id in bot._stats.tables_finished and not bot._stats.errors


async def _cancelled_before_it_started(env: Env, channel: grpc.aio.Channel) -> None:
    """Filled, then cancelled by registration (a buy-in not collected): the table service
    never hears of it and answers NOT_FOUND; My Tables says CANCELLED."""
    table_id = "cancelled-before-start"
    bot = make_bot(PLAYERS[1], channel)
    set_my_table(bot, table_id, REG.TABLE_STATUS_RUNNING)
    playing = asyncio.create_task(bot.play_table(table_id))
    await asyncio.sleep(1.0)
    assert not playing.done()  # running per registration: it waits for the table
    set_my_table(bot, table_id, REG.TABLE_STATUS_CANCELLED)
    assert await asyncio.wait_for(playing, timeout=5) is Outcome.CANCELLED
    assert table_id in bot._stats.tables_cancelled and not bot._stats.errors


async def _never_played(env: Env, channel: grpc.aio.Channel) -> None:
    """A TournamentStarted the table service cannot play (no multiplier seed: after a
    restore lost it) shows STARTING for ever while registration says RUNNING: the bot gives
    the table up after ``stall_seconds`` with nothing new, and says so."""
    table_id = "started-without-a-seed"
    messages, _ = registration_messages(table_id, PLAYERS)
    await inprocess_bus().publish(messages[1:])  # TournamentStarted only: no revealed seed
    view = await wait_table(env.stub, table_id, PLAYERS[2])
    assert view.status == table_pb2.TABLE_STATUS_STARTING
    bot = make_bot(PLAYERS[2], channel)
    bot.stall_seconds = 3.0
    set_my_table(bot, table_id, REG.TABLE_STATUS_RUNNING)
    recorder = RecordingTable(bot._table)
    bot._table = recorder
    assert await asyncio.wait_for(bot.play_table(table_id), timeout=15) is Outcome.ABANDONED
    assert table_id in bot._stats.tables_abandoned
    assert bot._stats.errors == 1 and "gave up table" in bot._stats.last_errors[0]
    assert 2 <= len(recorder.requests) <= 4  # silent watches of 2 s each, then it let go
    # Its one view was handled once: the resumed watches asked for what came after it.
    assert [r.from_sequence for r in recorder.requests[1:]] == [view.version] * (
        len(recorder.requests) - 1
    )
