"""Registration's casino lobby on SQLite with an injected clock: THB private tables on demand,
UTH one seat each, leave, and idle expiry after 20 minutes by the sweeper (fake clock, no
waiting), each with its CasinoSeatTaken / CasinoSeatReleased event; the gRPC API with auth."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, timedelta
from pathlib import Path

import grpc
import pytest
from electric.registration.v1 import casino_events_pb2 as ev
from electric.registration.v1 import casino_pb2, casino_pb2_grpc
from electric.table.v1 import casino_events_pb2 as tc
from electric_domain.casino.common.config import load_config
from electric_domain.lobby.casino import CasinoGame, NotSeated, PrivateTable
from electric_eventlog import (
    NO_STREAM,
    ConsumerWorker,
    EventStore,
    IdempotentConsumer,
    InProcessBus,
    topic_for,
)
from electric_eventlog.bus import ReceivedMessage, envelope_message
from electric_platform.auth import AuthInterceptor
from electric_platform.server import ContextInterceptor
from electric_registration.casino.activity import register_activity
from electric_registration.casino.api import CasinoLobbyApi
from electric_registration.casino.lobby import CasinoLobby, ExpirySweeper, casino_stream

from tests.support.auth import KEYSET, bearer
from tests.support.casino_setup import T0, FakeClock, registration_engine


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def lobby(tmp_path: Path, clock: FakeClock) -> Iterator[CasinoLobby]:
    engine = registration_engine(tmp_path / "reg.db")
    lob = CasinoLobby(
        engine,
        EventStore(engine, producer="registration"),
        load_config(),
        clock=clock,
        uth_tables=2,
    )
    assert lob.ensure_tables() == ["uth-1", "uth-2"]
    assert lob.ensure_tables() == []
    yield lob
    engine.dispose()


def events(lobby: CasinoLobby, table_id: str) -> list[object]:
    with lobby.engine.connect() as conn:
        return [
            lobby.store.decode(e) for e in lobby.store.read_stream(conn, casino_stream(table_id))
        ]


def test_thb_private_table_on_demand_and_back(lobby: CasinoLobby) -> None:
    a = lobby.join(CasinoGame.THB, "ann")
    assert a.created_table is not None and a.session.table_id == "thb-1"
    b = lobby.join(CasinoGame.THB, "bob")
    assert b.session.table_id == "thb-2"
    assert lobby.join(CasinoGame.THB, "ann").already_seated
    with pytest.raises(PrivateTable):
        lobby.join(CasinoGame.THB, "bob", "thb-1")
    lobby.leave("thb-1", "ann")
    again = lobby.join(CasinoGame.THB, "ann")  # her own table again, a new session
    assert again.session.table_id == "thb-1" and again.created_table is None
    assert again.session.session_id != a.session.session_id
    kinds = [type(e).__name__ for e in events(lobby, "thb-1")]
    assert kinds == [
        "CasinoTableOpened",
        "CasinoSeatTaken",
        "CasinoSeatReleased",
        "CasinoSeatTaken",
    ]
    games, _ = lobby.lobby("ann")
    thb = games[0]
    assert [t.table_id for t in thb.tables] == ["thb-1"] and thb.seated == 2


def test_uth_seats_and_idle_expiry_on_an_injected_clock(
    lobby: CasinoLobby, clock: FakeClock
) -> None:
    seats = [lobby.join(CasinoGame.UTH, p, "uth-1").session.seat for p in ["ann", "bob", "cat"]]
    assert seats == [1, 2, 3]
    clock.advance(minutes=15)
    lobby.touch("uth-1", "bob")
    clock.advance(minutes=5, seconds=-1)
    assert lobby.sweep() == []  # 19:59 idle
    clock.advance(seconds=1)
    released = lobby.sweep()
    assert sorted(s.player_id for s in released) == ["ann", "cat"]
    assert lobby.sweep() == []
    rel = [e for e in events(lobby, "uth-1") if isinstance(e, ev.CasinoSeatReleased)]
    assert {(e.player_id, e.reason) for e in rel} == {
        ("ann", ev.CASINO_SEAT_RELEASE_REASON_IDLE_EXPIRED),
        ("cat", ev.CASINO_SEAT_RELEASE_REASON_IDLE_EXPIRED),
    }
    with pytest.raises(NotSeated):
        lobby.touch("uth-1", "ann")
    assert lobby.next_expiry() == T0 + timedelta(minutes=35)
    clock.advance(minutes=15)
    assert [s.player_id for s in lobby.sweep()] == ["bob"]
    dan = lobby.join(CasinoGame.UTH, "dan", "uth-1")
    assert dan.session.seat == 1


async def test_sweeper_loop_uses_the_clock(lobby: CasinoLobby, clock: FakeClock) -> None:
    lobby.join(CasinoGame.UTH, "ann", "uth-2")
    sweeper = ExpirySweeper(lobby)
    seen: list[str] = []
    sweeper.on_released = lambda ss: seen.extend(s.player_id for s in ss)
    assert await sweeper.run_once() == []
    clock.advance(minutes=20)
    assert [s.player_id for s in await sweeper.run_once()] == ["ann"]
    assert seen == ["ann"]


@pytest.fixture
async def stub(lobby: CasinoLobby) -> AsyncIterator[casino_pb2_grpc.CasinoLobbyServiceStub]:
    server = grpc.aio.server(
        interceptors=[ContextInterceptor("registration"), AuthInterceptor(KEYSET)]
    )
    casino_pb2_grpc.add_CasinoLobbyServiceServicer_to_server(CasinoLobbyApi(lobby), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
        yield casino_pb2_grpc.CasinoLobbyServiceStub(ch)
    await server.stop(None)


async def test_api(stub: casino_pb2_grpc.CasinoLobbyServiceStub) -> None:
    ann = bearer("ann", "player")
    r = await stub.JoinCasinoTable(
        casino_pb2.JoinCasinoTableRequest(game=ev.CASINO_GAME_CODE_UTH, table_id="uth-1"),
        metadata=ann,
    )
    assert (r.session.table_id, r.session.seat, r.already_seated) == ("uth-1", 1, False)
    assert r.session.expires_at.ToDatetime(tzinfo=UTC) == T0 + timedelta(minutes=20)
    lob = await stub.ListCasinoLobby(casino_pb2.ListCasinoLobbyRequest(), metadata=ann)
    uth = lob.games[1]
    assert uth.game == ev.CASINO_GAME_CODE_UTH and uth.seated == 1
    assert [lim.spot for lim in uth.limits] == ["ante", "trips"]
    assert {p.name for p in uth.pay_tables} == {"blind", "trips"}
    assert [s.table_id for s in lob.my_sessions] == ["uth-1"]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.JoinCasinoTable(
            casino_pb2.JoinCasinoTableRequest(
                game=ev.CASINO_GAME_CODE_UTH, table_id="uth-1", player_id="bob"
            ),
            metadata=ann,
        )
    assert info.value.code() is grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.JoinCasinoTable(
            casino_pb2.JoinCasinoTableRequest(game=ev.CASINO_GAME_CODE_UTH, table_id="uth-9"),
            metadata=ann,
        )
    assert info.value.code() is grpc.StatusCode.NOT_FOUND
    await stub.TouchSession(casino_pb2.TouchSessionRequest(table_id="uth-1"), metadata=ann)
    left = await stub.LeaveCasinoTable(
        casino_pb2.LeaveCasinoTableRequest(table_id="uth-1"), metadata=ann
    )
    assert left.session_id == r.session.session_id
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.LeaveCasinoTable(
            casino_pb2.LeaveCasinoTableRequest(table_id="uth-1"), metadata=ann
        )
    assert info.value.code() is grpc.StatusCode.FAILED_PRECONDITION


async def test_table_activity_events_keep_the_session_alive(
    lobby: CasinoLobby, clock: FakeClock
) -> None:
    lobby.join(CasinoGame.UTH, "ann", "uth-1")
    lobby.join(CasinoGame.UTH, "bob", "uth-1")
    worker = ConsumerWorker(
        engine=lobby.engine,
        bus=InProcessBus(),
        consumer=IdempotentConsumer("registration.test-activity"),
        topics=[topic_for("table")],
    )
    register_activity(worker)
    table = EventStore(lobby.engine, producer="table")
    with lobby.engine.begin() as conn:
        table.append(
            conn,
            "casino-r1",
            NO_STREAM,
            [
                tc.CasinoBetPlaced(round_id="r1", table_id="uth-1", player_id="ann", spot="ante"),
                tc.CasinoDecisionMade(round_id="r1", player_id="bob", timed_out=True),
            ],
            correlation_id="r1",
            occurred_at=T0 + timedelta(minutes=10),
        )
    with lobby.engine.connect() as conn:
        envelopes = table.read_stream(conn, "casino-r1")
    for e in envelopes:
        out = envelope_message(topic_for("table"), e)
        await worker.handle(ReceivedMessage(out.topic, 0, 0, out.key, out.value, out.headers))
    clock.advance(minutes=20)
    assert [s.player_id for s in lobby.sweep()] == ["bob"]  # a timeout is not activity
    clock.advance(minutes=10)
    assert [s.player_id for s in lobby.sweep()] == ["ann"]
