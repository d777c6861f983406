"""WatchTable as the whole story over real gRPC (issue 11): resume from a sequence, the
hand-end snapshot, the timer ring, the wait for a table being started, and the players'
showdown settings end to end. The full-tournament story check is in
`test_table_service_grpc.py` (`_check_story`)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as reg_events
from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2
from electric_platform import Unavailable
from electric_platform.eventpath import inprocess_bus
from electric_table.tournament.api import TableApi

from tests.component.table.test_table_service_grpc import (
    PLAYERS,
    Env,
    my_turn,
    running_env,
    start,
    until,
)
from tests.support.table_kit import md, registration_messages


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with running_env(tmp_path) as e:
        yield e


async def test_watch_resumes_from_a_sequence_without_loss(env: Env) -> None:
    """Reconnect: a stream opened with ``from_sequence`` replays every later event (no
    snapshot first); the hand-end view keeps folds, awards and (for the seated) the seed."""
    table_id = await start(env, action_timer_ms=300, level_ms=60_000)
    # Let the timers play two hands by themselves (everyone times out).
    await until(lambda: env.manager.tables[table_id].tournament.state.hand_no >= 3, timeout=60)
    stream = env.stub.WatchTable(
        table_pb2.WatchTableRequest(table_id=table_id, from_sequence=5), metadata=md(PLAYERS[0])
    )
    got: list[table_pb2.WatchTableResponse] = []
    while not got or not got[-1].HasField("table"):
        got.append(await asyncio.wait_for(stream.read(), timeout=5))
    stream.cancel()
    assert not got[0].HasField("table") or len(got) == 1  # resumed: events, no snapshot first
    seqs = [r.sequence for r in got]
    assert seqs == sorted(set(seqs)) and seqs[0] == 6
    told = {r.event_type for r in got}
    assert "electric.table.v1.HandEnded" in told and "electric.table.v1.PotAwarded" in told
    awards = [r.event.pot_awarded for r in got if r.event.WhichOneof("kind") == "pot_awarded"]
    assert awards and all(a.winners for a in awards)
    # Between hands the snapshot keeps the last hand's folds and awards.
    await until(lambda: not env.manager.tables[table_id].tournament.hand_live(), timeout=30)
    view = (
        await env.stub.GetTable(
            table_pb2.GetTableRequest(table_id=table_id), metadata=md(PLAYERS[0])
        )
    ).table
    if not view.hand.in_progress:
        assert view.hand.awards and view.hand.deck_seed
        assert any(s.folded for s in view.seats)  # everyone timed out: folds, one winner
        assert any(s.last_action != table_pb2.ACTION_TYPE_UNSPECIFIED for s in view.seats)
        observer = (
            await env.stub.GetTable(
                table_pb2.GetTableRequest(table_id=table_id), metadata=md("obs", "operator")
            )
        ).table
        assert not observer.hand.deck_seed  # the seed goes to the seated players only


async def test_a_watch_on_a_table_moved_away_ends_after_its_last_events(env: Env) -> None:
    """Issue 28 item 5: a watcher woken once for its last events AND for the move sends
    those events, then ends UNAVAILABLE (the client resumes from the last sequence at the new
    owner). It waited on the dropped copy for ever before (only a wake-up with nothing to
    send checked the ownership), so a bot heard nothing until its idle timer ran out."""
    table_id = await start(env, action_timer_ms=20_000, level_ms=60_000)
    player, view = await my_turn(env, table_id)
    rt = env.manager.tables[table_id]
    api = TableApi(None, asyncio.Event(), env.manager)  # type: ignore[arg-type]
    stop_wait: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    story = api._story(rt, player, 0, stop_wait)
    first = await story.__anext__()
    assert first.table.legal_actions
    await env.stub.Act(
        table_pb2.ActRequest(
            request_id=str(uuid.uuid4()),
            table_id=table_id,
            hand_number=view.hand_number,
            action_seq=view.action_seq,
            action=table_pb2.ACTION_TYPE_FOLD,
        ),
        metadata=md(player),
    )
    # Before the watcher runs again, the table moves away (a rebalance): driver stopped,
    # watchers told.
    async with rt.lock:
        held = await env.manager.suspend(table_id)
    assert held is rt
    env.manager.end_suspended(held)
    sent = [await asyncio.wait_for(story.__anext__(), timeout=5)]
    while not sent[-1].HasField("table"):  # the Act's events, the view with the last one
        sent.append(await asyncio.wait_for(story.__anext__(), timeout=5))
    assert sent[0].sequence == first.sequence + 1
    assert "ActionTaken" in {r.event_type.rsplit(".", 1)[-1] for r in sent}
    with pytest.raises(Unavailable):
        await asyncio.wait_for(story.__anext__(), timeout=5)
    stop_wait.cancel()


async def test_timer_ring_in_the_view(env: Env) -> None:
    """Issue 11 gap 2: turn start, action timer, time bank remaining / in use, deadline."""
    table_id = await start(env, action_timer_ms=20_000, level_ms=60_000)
    _, view = await my_turn(env, table_id)
    ring = view.hand.turn_timer
    assert ring.seat == view.hand.to_act_seat == view.your_seat
    assert ring.action_timer.ToMilliseconds() == 20_000
    assert ring.time_bank_remaining.ToMilliseconds() > 0 and not ring.time_bank_in_use
    started = ring.turn_started_at.ToMilliseconds()
    assert ring.deadline.ToMilliseconds() == started + 20_000
    assert ring.deadline == view.hand.act_deadline
    assert started <= view.server_time.ToMilliseconds() <= ring.deadline.ToMilliseconds()


async def test_watch_waits_for_a_table_being_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11 gap 8: WatchTable on a table registration started but this service has not
    stored yet waits (bounded) and streams it instead of NOT_FOUND."""
    monkeypatch.setenv("ELECTRIC_TABLE_WATCH_START_WAIT_MS", "3000")
    async with running_env(tmp_path) as env:
        await _watch_waits(env)


async def _watch_waits(env: Env) -> None:
    table_id = str(uuid.uuid4())
    stream = env.stub.WatchTable(
        table_pb2.WatchTableRequest(table_id=table_id), metadata=md(PLAYERS[0])
    )
    await asyncio.sleep(0.5)  # the watch is waiting; now registration's events arrive
    messages, _ = registration_messages(table_id, PLAYERS, action_timer_ms=5000)
    await inprocess_bus().publish(messages)
    first = await asyncio.wait_for(stream.read(), timeout=10)
    assert first.table.table_id == table_id and first.table.your_seat
    stream.cancel()
    # A table that never appears: NOT_FOUND once the wait is over.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for _ in env.stub.WatchTable(
            table_pb2.WatchTableRequest(table_id="never-started"), metadata=md(PLAYERS[0])
        ):
            pass
    assert info.value.code() is grpc.StatusCode.NOT_FOUND


async def test_player_settings_decide_what_the_showdown_reveals(env: Env) -> None:
    """Issue 11 gap 6 end to end: registration's PlayerSettingsChanged (Muck Winning Hands
    off) reaches the table's store, the next deal passes it into the hand, and the player
    who wins without a showdown shows the hand (stored CardsShown, WatchTable event)."""
    from electric_eventlog import envelope_message, pack

    from tests.support.table_kit import REG_TOPIC

    out = []
    for k, p in enumerate(PLAYERS):
        payload = reg_events.PlayerSettingsChanged(
            player_id=p, display_name=p, muck_winning_hands=False, version=1
        )
        envelope = Envelope(
            event_id=str(uuid.uuid4()),
            stream_id=f"registration-player-{p}",
            stream_version=k + 1,
            event_type=payload.DESCRIPTOR.full_name,
            payload=pack(payload),
            producer="registration",
        )
        envelope.occurred_at.GetCurrentTime()
        out.append(envelope_message(REG_TOPIC, envelope))
    await inprocess_bus().publish(out)
    # Everyone times out: pre-flop the two first to act fold, the big blind wins uncontested.
    table_id = await start(env, action_timer_ms=200, time_bank_ms=0, level_ms=60_000)
    stream = env.stub.WatchTable(
        table_pb2.WatchTableRequest(table_id=table_id), metadata=md(PLAYERS[0])
    )
    shown: list[table_pb2.ShowdownEvent] = []
    while not shown:
        r = await asyncio.wait_for(stream.read(), timeout=10)
        if r.event.WhichOneof("kind") == "showdown":
            shown.append(r.event.showdown)
    stream.cancel()
    assert shown[0].decision == table_pb2.SHOWDOWN_DECISION_SHOW
    assert shown[0].reason == table_pb2.SHOWDOWN_REASON_SETTING and len(shown[0].cards) == 2
    stored = [m for _, m in env.events(table_id) if isinstance(m, tev.CardsShown)]
    assert stored and stored[0].reason == tev.SHOW_REASON_PLAYER_SETTING
