"""The table service through a real gRPC channel: a ServiceHost on 127.0.0.1:0 over SQLite
and the in-process bus, tournaments started by registration events on that bus."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from electric.common.v1 import errors_pb2
from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2, table_pb2_grpc
from electric_clients.errors import error_detail
from electric_eventlog import EventStore
from electric_platform import ServiceHost, load_config
from electric_platform.eventpath import inprocess_bus
from electric_table.app import MANAGERS, make_setup
from electric_table.journal import table_stream
from electric_table.tournament.runtime import TableManager

from tests.support.auth import auth_env
from tests.support.table_kit import (
    Bot,
    check_privacy,
    check_stream,
    decode_stream,
    md,
    registration_messages,
    wait_table,
)

PLAYERS = ("alice", "bob", "carol")


@dataclass
class Env:
    host: ServiceHost
    manager: TableManager
    stub: table_pb2_grpc.TableServiceStub
    target: str

    def events(self, table_id: str) -> list[tuple[int, Any]]:
        store: EventStore = self.manager.store
        with store.engine.connect() as conn:
            return decode_stream(store.read_stream(conn, table_stream(table_id)))


@contextlib.asynccontextmanager
async def running_env(tmp_path: Path, **extra: str) -> AsyncIterator[Env]:
    """A started table ServiceHost on 127.0.0.1:0 and a channel to it (``extra``: more
    environment, e.g. ``DATABASE_URL``); stopped at exit."""
    config = load_config(
        "table",
        {
            **extra,
            "ELECTRIC_VAR_DIR": str(tmp_path),
            **auth_env(),
            "ELECTRIC_GRPC_PORT": "0",
            "ELECTRIC_METRICS_PORT": "-1",
            "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "1",
            "ELECTRIC_LOG_LEVEL": "WARNING",
        },
    )
    host = ServiceHost(config, make_setup(pause_ms=50))
    await host.start()
    target = f"127.0.0.1:{host.grpc_port}"
    channel = grpc.aio.insecure_channel(target)
    try:
        yield Env(host, MANAGERS[id(host)], table_pb2_grpc.TableServiceStub(channel), target)
    finally:
        await channel.close()
        await host.stop()


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with running_env(tmp_path) as e:
        yield e


async def start(env: Env, players: tuple[str, ...] = PLAYERS, **kw: Any) -> str:
    table_id = str(uuid.uuid4())
    messages, _ = registration_messages(table_id, players, **kw)
    await inprocess_bus().publish([*messages, messages[-1]])  # + a redelivery
    await wait_table(env.stub, table_id, players[0])
    # GetTable can answer from the read model (a STARTING view) before the consumer's
    # background load put the runtime in memory; tests read the runtime next.
    await until(lambda: table_id in env.manager.tables, timeout=30)
    return table_id


async def until(predicate: Any, timeout: float = 20) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


async def my_turn(env: Env, table_id: str, timeout: float = 20) -> tuple[str, table_pb2.TableView]:
    """Wait until some player has legal actions; return (player, their view)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        for p in PLAYERS:
            v = (
                await env.stub.GetTable(
                    table_pb2.GetTableRequest(table_id=table_id), metadata=md(p)
                )
            ).table
            if v.legal_actions:
                return p, v
        assert asyncio.get_running_loop().time() < deadline, "nobody got a turn"
        await asyncio.sleep(0.02)


async def test_full_tournament_over_grpc_with_private_views(env: Env) -> None:
    table_id = await start(env, action_timer_ms=5000, level_ms=1500)
    bots = [Bot(p, table_id, seed=i + 1) for i, p in enumerate(PLAYERS)]
    await asyncio.wait_for(asyncio.gather(*(b.play(env.target) for b in bots)), timeout=240)

    events = env.events(table_id)
    requests = check_stream(events)
    kinds = [type(m).__name__ for _, m in events]
    assert kinds.count("TableStarted") == 1  # the redelivered TournamentStarted did nothing
    assert kinds[-1] == "TournamentFinished"
    finished = events[-1][1]
    assert sorted(p.place for p in finished.places)[0] == 1
    assert {p.player_id for p in finished.places} == set(PLAYERS)
    assert sum(p.prize.cents for p in finished.places) == finished.prize_pool.cents
    # Every Act the bots got OK for is exactly one ActionTaken carrying its request id.
    acted = {rid for b in bots for rid in b.acted}
    assert acted == set(requests)
    assert any(isinstance(m, tev.HandEnded) and m.deck_seed for _, m in events)
    # Deck seeds are published only at the end of their hand; commitments match.
    import hashlib

    commitments = {
        m.hand_number: m.deck_commitment for _, m in events if isinstance(m, tev.HandStarted)
    }
    for _, m in events:
        if isinstance(m, tev.HandEnded):
            assert (
                hashlib.sha256(bytes.fromhex(m.deck_seed)).hexdigest() == commitments[m.hand_number]
            )
        if isinstance(m, tev.HandEngineEvent) and m.kind == "DeckEscrowed":
            assert m.domain.redacted and '"seed_hex":""' in m.domain.canonical_json
    # WatchTable told every bot the whole story, in order, with its own privacy.
    for b in bots:
        _check_story(b, events)
    # Privacy: every message of every player's stream.
    checked = sum(check_privacy(b, events) for b in bots)
    assert checked > 10
    own_seen = any(
        s.hole_cards for b in bots for v in b.views for s in v.seats if s.seat == v.your_seat
    )
    assert own_seen
    # Business metrics follow the stored events.
    registry = env.host.metrics.registry
    assert registry.get_sample_value("electric_table_tournaments_finished_total") == 1
    assert registry.get_sample_value("electric_table_hands_dealt_total") == kinds.count(
        "HandStarted"
    )
    assert registry.get_sample_value("electric_table_live_tables") == 0
    # Replay from the store gives the very same aggregate.
    rebuilt = env.manager.rebuild(table_id)
    assert rebuilt is not None
    live = env.manager.tables[table_id]
    assert rebuilt.tournament.history == live.tournament.history
    assert rebuilt.tournament.result() == live.tournament.result()
    assert rebuilt.version == live.version == len(events)


async def test_permissions_not_found_stale_and_bad_amounts(env: Env) -> None:
    table_id = await start(env, action_timer_ms=20_000, level_ms=60_000)
    player, view = await my_turn(env, table_id)
    other = next(p for p in PLAYERS if p != player)
    base = dict(
        table_id=table_id,
        hand_number=view.hand_number,
        action_seq=view.action_seq,
        action=table_pb2.ACTION_TYPE_FOLD,
    )

    async def act(who: str, role: str = "player", **kw: Any) -> grpc.aio.AioRpcError:
        req = table_pb2.ActRequest(**{**base, "request_id": str(uuid.uuid4()), **kw})
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await env.stub.Act(req, metadata=md(who, role))
        return info.value

    # Not seated, naming someone else's seat, read-only roles: PERMISSION_DENIED.
    assert (await act("mallory")).code() is grpc.StatusCode.PERMISSION_DENIED
    err = await act(other, seat=view.your_seat)
    assert err.code() is grpc.StatusCode.PERMISSION_DENIED and "not yours" in err.details()
    assert (await act("aud-1", role="auditor")).code() is grpc.StatusCode.PERMISSION_DENIED
    # Unknown table.
    err = await act(player, table_id=str(uuid.uuid4()))
    assert err.code() is grpc.StatusCode.NOT_FOUND
    # Not the caller's turn: the engine's reason.
    err = await act(other)
    assert err.code() is grpc.StatusCode.FAILED_PRECONDITION
    # A retried refusal answers as the first time (stored with its status); the same
    # request id for another RPC is refused.
    rid = str(uuid.uuid4())
    first = await act(other, request_id=rid)
    again = await act(other, request_id=rid)
    assert (again.code(), again.details()) == (first.code(), first.details())
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await env.stub.SitOut(
            table_pb2.SitOutRequest(table_id=table_id, request_id=rid), metadata=md(other)
        )
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "already used for Act" in (info.value.details() or "")
    # Stale action sequence / hand: FAILED_PRECONDITION with a StaleCommand detail.
    for stale in ({"action_seq": view.action_seq + 1}, {"hand_number": view.hand_number - 1}):
        err = await act(player, **stale)
        assert err.code() is grpc.StatusCode.FAILED_PRECONDITION
        detail = errors_pb2.StaleCommand()
        assert error_detail(err, detail)
        assert detail.current_hand_number == view.hand_number
        assert detail.current_action_seq == view.action_seq
    # Bad amounts: INVALID_ARGUMENT.
    raise_kind = next(
        (
            a
            for a in view.legal_actions
            if a.type in (table_pb2.ACTION_TYPE_RAISE, table_pb2.ACTION_TYPE_BET)
        ),
        None,
    )
    assert raise_kind is not None
    err = await act(player, action=raise_kind.type, amount=raise_kind.max_amount + 1)
    assert err.code() is grpc.StatusCode.INVALID_ARGUMENT
    err = await act(player, action=raise_kind.type, amount=0)
    assert err.code() is grpc.StatusCode.INVALID_ARGUMENT
    err = await act(player, action=table_pb2.ACTION_TYPE_UNSPECIFIED)
    assert err.code() is grpc.StatusCode.INVALID_ARGUMENT
    err = await act(player, request_id="")
    assert err.code() is grpc.StatusCode.INVALID_ARGUMENT
    # Nothing of the above changed the table.
    after = (
        await env.stub.GetTable(table_pb2.GetTableRequest(table_id=table_id), metadata=md(player))
    ).table
    assert (after.hand_number, after.action_seq) == (view.hand_number, view.action_seq)
    assert not any(
        isinstance(m, tev.ActionTaken) and m.source == tev.ACTION_SOURCE_PLAYER
        for _, m in env.events(table_id)
    )
    # An unknown table for queries too.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await env.stub.GetTable(table_pb2.GetTableRequest(table_id="nope"), metadata=md(player))
    assert info.value.code() is grpc.StatusCode.NOT_FOUND


def _check_story(bot: Bot, events: list[tuple[int, Any]]) -> None:
    """Every stored event after the bot's first snapshot reached it exactly once, in order,
    as the typed event (bookkeeping of the engine, the appends' summaries and other seats'
    pre-turn selections excepted); hole cards only its own; each revealed deck seed matches
    its commitment."""
    import hashlib

    assert bot.events, f"{bot.name} got no events"
    first = bot.views[0].version
    seat = bot.views[0].your_seat
    expected = []
    for v, m in events:
        if v <= first or isinstance(m, tev.TableStarted | tev.TableProgress):
            continue  # the start, and each append's summary for My Tables, are no story
        if isinstance(m, tev.HandEngineEvent) and m.kind not in (
            "UncalledBetReturned",
            "HandMucked",
            "RoundClosed",
        ):
            continue
        if isinstance(m, tev.PreActionSet | tev.PreActionCleared) and m.seat != seat:
            continue
        expected.append(v)
    got = [r.sequence for r in bot.events]
    assert got == expected, f"{bot.name}: events lost, repeated or out of order"
    stored = dict(events)
    commitments: dict[int, str] = {}
    for r in bot.events:
        assert r.event.sequence == r.sequence
        assert r.event_type == type(stored[r.sequence]).DESCRIPTOR.full_name
        kind = r.event.WhichOneof("kind")
        if kind == "hole_cards_dealt":
            mine = r.event.hole_cards_dealt.seat == seat
            assert bool(r.event.hole_cards_dealt.cards) == mine
            assert r.event.hole_cards_dealt.card_count == 2
        elif kind == "action":
            m = stored[r.sequence]
            assert (r.event.action.seat, r.event.action.amount_added) == (m.seat, m.amount_added)
        elif kind == "hand_started":
            commitments[r.event.hand_started.hand_number] = r.event.hand_started.deck_commitment
        elif kind == "hand_ended" and r.event.hand_ended.hand_number in commitments:
            seed = bytes.fromhex(r.event.hand_ended.deck_seed)
            want = commitments[r.event.hand_ended.hand_number]
            assert hashlib.sha256(seed).hexdigest() == want
        elif kind == "pot_awarded":
            total = sum(w.amount for w in r.event.pot_awarded.winners)
            assert total == r.event.pot_awarded.amount
    assert bot.events[-1].event.WhichOneof("kind") == "tournament_finished"


async def test_duplicate_request_id_is_applied_once(env: Env) -> None:
    table_id = await start(env, action_timer_ms=20_000, level_ms=60_000)
    player, view = await my_turn(env, table_id)
    call = next(a for a in view.legal_actions if a.type == table_pb2.ACTION_TYPE_CALL)
    req = table_pb2.ActRequest(
        request_id="dup-1",
        table_id=table_id,
        hand_number=view.hand_number,
        action_seq=view.action_seq,
        action=call.type,
    )
    # Concurrent duplicates and a late retry: all answered OK, applied once.
    results = await asyncio.gather(
        *(env.stub.Act(req, metadata=md(player)) for _ in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, table_pb2.ActResponse) for r in results), results
    again = await env.stub.Act(req, metadata=md(player))
    assert again.table.hand_number == view.hand_number
    taken = [
        m
        for _, m in env.events(table_id)
        if isinstance(m, tev.ActionTaken) and m.request_id == "dup-1"
    ]
    assert len(taken) == 1 and taken[0].action == table_pb2.ACTION_TYPE_CALL
    # The same id for another RPC is refused.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await env.stub.SitOut(
            table_pb2.SitOutRequest(request_id="dup-1", table_id=table_id), metadata=md(player)
        )
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    # A refused request gives the same refusal on retry.
    stale = table_pb2.ActRequest(
        request_id="stale-1",
        table_id=table_id,
        hand_number=999,
        action_seq=1,
        action=table_pb2.ACTION_TYPE_FOLD,
    )
    for _ in range(2):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await env.stub.Act(stale, metadata=md(player))
        assert info.value.code() is grpc.StatusCode.FAILED_PRECONDITION


async def test_timeouts_auto_check_or_fold_and_sit_out(env: Env) -> None:
    table_id = await start(env, action_timer_ms=200, time_bank_ms=200, level_ms=60_000)

    def timeouts() -> list[Any]:
        return [
            m
            for _, m in env.events(table_id)
            if isinstance(m, tev.ActionTaken) and m.source == tev.ACTION_SOURCE_TIMEOUT
        ]

    # Nobody acts: the action timers run out and the table plays itself.
    def sitting_out_acts() -> int:
        return sum(
            1
            for _, m in env.events(table_id)
            if isinstance(m, tev.ActionTaken) and m.source == tev.ACTION_SOURCE_SITTING_OUT
        )

    await until(lambda: len(timeouts()) >= 4 and sitting_out_acts() >= 2, timeout=30)
    events = env.events(table_id)
    check_stream(events)
    for m in timeouts():
        assert m.action in (table_pb2.ACTION_TYPE_CHECK, table_pb2.ACTION_TYPE_FOLD)
    applied = [m for _, m in events if isinstance(m, tev.TimeoutApplied)]
    assert applied and all(m.kind == tev.TIMEOUT_KIND_ACTION_TIMER_EXPIRED for m in applied)
    # Two consecutive timeouts sit a player out; a sitting-out player is auto-acted at once.
    sat_out = [m for _, m in events if isinstance(m, tev.PlayerSatOut)]
    assert sat_out and all(m.reason == tev.SIT_OUT_REASON_TIMEOUT for m in sat_out)
    assert any(
        isinstance(m, tev.ActionTaken) and m.source == tev.ACTION_SOURCE_SITTING_OUT
        for _, m in events
    )
    # SitIn brings a player back (through the API, with a request id).
    who = sat_out[0].player_id
    resp = await env.stub.SitIn(
        table_pb2.SitInRequest(request_id="in-1", table_id=table_id), metadata=md(who)
    )
    mine = next(s for s in resp.table.seats if s.player_id == who)
    assert not mine.sitting_out or any(
        isinstance(m, tev.PlayerSatOut) and m.player_id == who
        for _, m in env.events(table_id)[len(events) :]
    )
    assert any(
        isinstance(m, tev.PlayerSatIn) and m.request_id == "in-1" for _, m in env.events(table_id)
    )


async def test_pre_actions_and_watch_push(env: Env) -> None:
    table_id = await start(env, action_timer_ms=20_000, level_ms=60_000)
    player, view = await my_turn(env, table_id)
    others = [p for p in PLAYERS if p != player]
    # Someone else selects a pre-turn action offered to them.
    for o in others:
        v = (
            await env.stub.GetTable(table_pb2.GetTableRequest(table_id=table_id), metadata=md(o))
        ).table
        if v.pre_actions_offered:
            pre = v.pre_actions_offered[0]
            r = await env.stub.SetPreAction(
                table_pb2.SetPreActionRequest(
                    request_id="pre-1",
                    table_id=table_id,
                    hand_number=v.hand_number,
                    action_seq=v.action_seq,
                    pre_action=pre,
                ),
                metadata=md(o),
            )
            assert r.table.your_pre_action == pre
            c = await env.stub.ClearPreAction(
                table_pb2.ClearPreActionRequest(
                    request_id="clr-1", table_id=table_id, hand_number=v.hand_number
                ),
                metadata=md(o),
            )
            assert c.table.your_pre_action == table_pb2.PRE_ACTION_TYPE_UNSPECIFIED
            break
    else:
        pytest.fail("no pre-turn action offered to anyone")
    kinds = [type(m).__name__ for _, m in env.events(table_id)]
    assert "PreActionSet" in kinds and "PreActionCleared" in kinds
    # WatchTable pushes the change caused by an Act at once.
    stream = env.stub.WatchTable(
        table_pb2.WatchTableRequest(table_id=table_id), metadata=md(others[0])
    )
    first = await stream.read()
    assert first.table.action_seq == view.action_seq
    await env.stub.Act(
        table_pb2.ActRequest(
            request_id="w-1",
            table_id=table_id,
            hand_number=view.hand_number,
            action_seq=view.action_seq,
            action=table_pb2.ACTION_TYPE_FOLD,
        ),
        metadata=md(player),
    )
    # Every stored event follows in order, the fold first; the snapshot comes with the last
    # event stored so far.
    nxt = await asyncio.wait_for(stream.read(), timeout=2)
    assert nxt.sequence == first.sequence + 1 == first.table.version + 1
    assert nxt.event_type == "electric.table.v1.ActionTaken"
    assert nxt.event.action.action == table_pb2.ACTION_TYPE_FOLD
    assert nxt.event.action.seat == view.your_seat
    while not nxt.HasField("table"):
        nxt = await asyncio.wait_for(stream.read(), timeout=2)
    assert nxt.table.version == nxt.sequence > first.table.version
    stream.cancel()


async def test_watch_opened_before_the_table_is_loaded_gets_the_running_views(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race bots hit: WatchTable looks the runtime up (nothing stored yet), then the
    consumer stores TournamentStarted (read-model row + stream), then WatchTable reads the
    row and sends its STARTING view. The stream must then follow the table once the consumer
    loads it (it used to wait on nothing until shutdown)."""
    from electric_table.tournament.api import TableApi

    table_id = str(uuid.uuid4())
    messages, _ = registration_messages(table_id, PLAYERS, action_timer_ms=5000)
    loop = asyncio.get_running_loop()
    bus = inprocess_bus()
    original = TableApi._read
    raced: list[bool] = []

    def racing_read(self: TableApi, wanted: str) -> Any:
        if wanted == table_id and not raced:
            raced.append(True)
            # The runtime lookup already found nothing; TournamentStarted arrives now.
            asyncio.run_coroutine_threadsafe(bus.publish(messages), loop).result(5)
            deadline = time.monotonic() + 10
            while original(self, wanted) is None:
                assert time.monotonic() < deadline, "the consumer never stored the table"
                time.sleep(0.01)
        return original(self, wanted)

    monkeypatch.setattr(TableApi, "_read", racing_read)
    stream = env.stub.WatchTable(
        table_pb2.WatchTableRequest(table_id=table_id), metadata=md(PLAYERS[0])
    )
    statuses: list[int] = []

    async def follow() -> None:
        async for resp in stream:
            statuses.append(resp.table.status)
            if resp.table.status == table_pb2.TABLE_STATUS_RUNNING and resp.table.legal_actions:
                return
            if resp.table.status == table_pb2.TABLE_STATUS_RUNNING and len(statuses) > 3:
                return

    try:
        await asyncio.wait_for(follow(), timeout=5)
    finally:
        stream.cancel()
    assert raced, "the race was not reproduced"
    assert statuses[0] == table_pb2.TABLE_STATUS_STARTING
    assert table_pb2.TABLE_STATUS_RUNNING in statuses
    assert env.manager.tables[table_id].notifier is env.manager.notifier(table_id)
