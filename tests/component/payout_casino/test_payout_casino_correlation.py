"""Casino paths carry the request's correlation id end to end (docs/logging.md), like the
tournament paths: no round or table id stands in for it.

- Registration's lobby: JoinCasinoTable / LeaveCasinoTable called with ``x-correlation-id``
  append CasinoSeatTaken / CasinoSeatReleased with that correlation id and the call's request
  id as causation.
- A THB round played through the real table service with one ``x-correlation-id`` on every
  call, its events consumed by payout, the wins credited through a real wallet: every round
  event, CasinoWinOwed (caused by the CasinoRoundSettled), the wallet's credit transfer and
  CasinoWinCredited (both caused by the CasinoWinOwed) carry that correlation id, and payout's
  INFO ``owed_work.done`` line of each credit shows it.
"""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import grpc
from electric.payout.v1 import casino_events_pb2 as pc
from electric.registration.v1 import casino_events_pb2 as reg_casino
from electric.registration.v1 import casino_pb2 as lobby_pb2
from electric.registration.v1 import casino_pb2_grpc as lobby_grpc
from electric.table.v1 import casino_events_pb2 as tc
from electric.table.v1 import casino_pb2, casino_pb2_grpc
from electric_audit.sources import read_store
from electric_domain.casino.common.config import load_config
from electric_eventlog import EventStore
from electric_payout.casino.wins import casino_stream as payout_stream
from electric_platform.auth import AuthInterceptor
from electric_platform.log import configure_logging
from electric_platform.server import ContextInterceptor
from electric_registration.casino.api import CasinoLobbyApi
from electric_registration.casino.lobby import CasinoLobby
from electric_registration.casino.lobby import casino_stream as seat_stream
from electric_table.casino.wiring import CASINO
from electric_table.journal import casino_stream

from tests.support import wallet_kit
from tests.support.auth import KEYSET, bearer
from tests.support.casino_setup import (
    FakeClock,
    payout_casino,
    registration_engine,
    registration_event,
    serve_table,
    until_seated,
)

D = casino_pb2
#: Call the flop, check the turn, check the river.
PLAY = (D.CASINO_DECISION_CALL_FLOP, D.CASINO_DECISION_CHECK, D.CASINO_DECISION_CHECK)
MAX_ROUNDS = 40  # until a round has a winning bet (P(none in 40) ~ 1e-20)


def _ids(envelopes: list[object]) -> set[str]:
    return {e.correlation_id for e in envelopes}  # type: ignore[attr-defined]


async def test_lobby_events_carry_the_calls_correlation_id(tmp_path: Path) -> None:
    engine = registration_engine(tmp_path / "reg.db")
    store = EventStore(engine, producer="registration")
    lobby = CasinoLobby(engine, store, load_config(), clock=FakeClock(), uth_tables=1)
    lobby.ensure_tables()
    server = grpc.aio.server(
        interceptors=[ContextInterceptor("registration"), AuthInterceptor(KEYSET)]
    )
    lobby_grpc.add_CasinoLobbyServiceServicer_to_server(CasinoLobbyApi(lobby), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            stub = lobby_grpc.CasinoLobbyServiceStub(ch)
            md = bearer("ann", "player")
            await stub.JoinCasinoTable(
                lobby_pb2.JoinCasinoTableRequest(game=reg_casino.CASINO_GAME_CODE_THB, table_id=""),
                metadata=(*md, ("x-correlation-id", "corr-join"), ("x-request-id", "req-join")),
            )
            await stub.JoinCasinoTable(
                lobby_pb2.JoinCasinoTableRequest(
                    game=reg_casino.CASINO_GAME_CODE_UTH, table_id="uth-1"
                ),
                metadata=(*md, ("x-request-id", "req-uth")),  # starts its own chain
            )
            await stub.LeaveCasinoTable(
                lobby_pb2.LeaveCasinoTableRequest(table_id="uth-1"),
                metadata=(*md, ("x-correlation-id", "corr-leave"), ("x-request-id", "req-l")),
            )
        with engine.connect() as conn:
            thb = [e for e in store.read_stream(conn, seat_stream("thb-1"))]
            uth = [e for e in store.read_stream(conn, seat_stream("uth-1"))]
    finally:
        await server.stop(None)
        engine.dispose()
    kinds = [e.event_type.rsplit(".", 1)[-1] for e in thb]
    assert kinds == ["CasinoTableOpened", "CasinoSeatTaken"]
    assert _ids(thb) == {"corr-join"} and {e.causation_id for e in thb} == {"req-join"}
    opened, taken, released = uth  # start-up (no request: the table id), join, leave
    assert opened.correlation_id == "uth-1"
    assert (taken.correlation_id, taken.causation_id) == ("req-uth", "req-uth")
    assert (released.correlation_id, released.causation_id) == ("corr-leave", "req-l")


async def test_thb_round_to_credited_win_keeps_one_correlation_id(tmp_path: Path) -> None:
    corr = "corr-thb-session-1"
    md = (*bearer("alice", "player"), ("x-correlation-id", corr))
    wallet_url = f"sqlite:///{tmp_path}/wallet.db"
    async with (
        wallet_kit.serve_wallet(wallet_url) as wallet,
        serve_table(tmp_path, wallet) as host,
        payout_casino(tmp_path / "payout.db", wallet.target) as payout,
    ):
        await wallet_kit.deposit(wallet, "alice", 100_000)
        seat = reg_casino.CasinoSeatTaken(
            table_id="thb-1", game="thb", player_id="alice", seat=1, session_id="s1"
        )
        await registration_event(seat, "thb-1", stream_version=1)
        table = CASINO[id(host)]
        await until_seated(table.engine, "thb-1", "alice")
        buffer = io.StringIO()
        configure_logging("INFO", "json", stream=buffer)
        try:
            won: list[str] = []
            async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as ch:
                stub = casino_pb2_grpc.CasinoTableServiceStub(ch)
                for n in range(MAX_ROUNDS):
                    view = (
                        await stub.Deal(
                            D.DealRequest(request_id=f"d{n}", table_id="thb-1", ante_cents=300),
                            metadata=md,
                        )
                    ).round
                    for i, decision in enumerate(
                        (
                            D.CASINO_DECISION_CALL_FLOP,
                            D.CASINO_DECISION_CHECK,
                            D.CASINO_DECISION_CHECK,
                        )
                    ):
                        request = D.DecideRequest(
                            request_id=f"c{n}-{i}", round_id=view.round_id, decision=decision
                        )
                        view = (await stub.Decide(request, metadata=md)).round
                    assert view.status == "settled"
                    if any(r.outcome == "win" for r in view.results):
                        won.append(view.round_id)
                        break
            assert won, "no winning bet"
            (round_id,) = won
            with table.engine.connect() as conn:
                played = table.store.read_stream(conn, casino_stream(round_id))
            await payout.deliver(played)
            for _ in range(200):
                await payout.crediter.run_once()
                if not payout.wins.owed():
                    break
                await asyncio.sleep(0.02)
            assert payout.wins.owed() == []
        finally:
            configure_logging("INFO", "json")
    # The round's events (table service): the calls' correlation id.
    assert _ids(played) == {corr}
    (settled,) = [e for e in played if e.event_type == tc.CasinoRoundSettled.DESCRIPTOR.full_name]
    # Payout: owed by the settlement, credited under the owed event; one correlation id.
    with payout.engine.connect() as conn:
        paid = EventStore(payout.engine, producer="payout").read_stream(
            conn, payout_stream(round_id)
        )
    owed = [e for e in paid if e.event_type == pc.CasinoWinOwed.DESCRIPTOR.full_name]
    credited = [e for e in paid if e.event_type == pc.CasinoWinCredited.DESCRIPTOR.full_name]
    assert owed and len(credited) == len(owed)
    assert _ids(paid) == {corr}
    assert {e.causation_id for e in owed} == {settled.event_id}
    owed_by_key = {}
    for e in owed:
        msg = pc.CasinoWinOwed()
        e.payload.Unpack(msg)
        owed_by_key[msg.idempotency_key] = e.event_id
    for e in credited:
        done_msg = pc.CasinoWinCredited()
        e.payload.Unpack(done_msg)
        assert e.causation_id == owed_by_key[done_msg.idempotency_key]
    # The wallet's credit transfers: the same correlation id, caused by the owed event.
    transfers = [
        x.envelope
        for x in read_store(wallet_url).events
        if any(key in x.envelope.stream_id for key in owed_by_key)
    ]
    assert transfers and _ids(transfers) == {corr}
    assert {e.causation_id for e in transfers} == set(owed_by_key.values())
    # Payout's log line of each credit shows the chain.
    lines = [json.loads(x) for x in buffer.getvalue().splitlines() if x.startswith("{")]
    done = [x for x in lines if x.get("event") == "owed_work.done" and x["op_id"] in owed_by_key]
    assert {x["op_id"] for x in done} == set(owed_by_key)
    assert {x.get("correlation_id") for x in done} == {corr}
