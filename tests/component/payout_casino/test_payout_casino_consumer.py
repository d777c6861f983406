"""CasinoRoundSettled / CasinoRoundVoided of the table service through payout's real
``payout.table-events`` worker (typed handlers), against a real wallet in-process: the same
message delivered twice owes and credits each win once; ListCasinoWinnings shows them."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from electric.payout.v1 import casino_pb2, casino_pb2_grpc
from electric.table.v1 import casino_events_pb2 as tc
from electric_eventlog import (
    NO_STREAM,
    ConsumerWorker,
    EventStore,
    create_engine,
    migrate,
)
from electric_eventlog.bus import ReceivedMessage, envelope_message
from electric_payout.casino.api import CasinoPayoutApi
from electric_payout.casino.crediter import CasinoCrediter
from electric_payout.consumers import TABLE_TOPIC
from electric_platform.auth import AuthInterceptor
from electric_platform.server import ContextInterceptor
from sqlalchemy import Engine

from tests.support.auth import KEYSET, bearer
from tests.support.casino_setup import payout_casino
from tests.support.wallet_kit import Env, balance, deposit, serve_wallet


def _engine(path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{path}")
    migrate(engine)
    return engine


Setup = tuple[ConsumerWorker, CasinoCrediter, Engine, Env]


def _message(
    tmp_path: Path, payload: tc.CasinoRoundSettled | tc.CasinoRoundVoided
) -> ReceivedMessage:
    """The table service's event as the bus delivers it."""
    engine = _engine(tmp_path / f"table-{uuid.uuid4().hex}.db")
    store = EventStore(engine, producer="table")
    stream = f"casino-round-{payload.round_id}"
    with engine.begin() as conn:
        store.append(conn, stream, NO_STREAM, [payload], correlation_id=payload.round_id)
    with engine.connect() as conn:
        [envelope] = store.read_stream(conn, stream)
    engine.dispose()
    out = envelope_message(TABLE_TOPIC, envelope)
    return ReceivedMessage(out.topic, 0, 0, out.key, out.value, out.headers)


def _settled() -> tc.CasinoRoundSettled:
    def res(spot: str, stake: int, outcome: str, win: int = 0) -> tc.CasinoBetResult:
        returned = stake + win if outcome == "win" else (stake if outcome == "push" else 0)
        return tc.CasinoBetResult(
            bet_id="",
            spot=spot,
            stake_cents=stake,
            outcome=outcome,
            win_cents=win,
            returned_cents=returned,
        )

    return tc.CasinoRoundSettled(
        round_id="rnd-1",
        table_id="thb-7",
        game="thb",
        players=[
            tc.CasinoPlayerResult(
                player_id="ann",
                results=[
                    res("ante", 500, "win", 500),
                    res("trips", 100, "lose"),
                    res("bonus", 100, "push"),
                ],
            )
        ],
    )


@pytest.fixture
async def setup(
    tmp_path: Path,
) -> AsyncIterator[tuple[ConsumerWorker, CasinoCrediter, Engine, object]]:
    async with (
        serve_wallet(f"sqlite:///{tmp_path / 'wallet.db'}") as env,
        payout_casino(tmp_path / "payout.db", env.target) as payout,
    ):
        yield payout.worker, payout.crediter, payout.engine, env


async def test_redelivered_round_settled_pays_once(tmp_path: Path, setup: Setup) -> None:
    worker, crediter, engine, env = setup
    await deposit(env, "ann", 1_000)
    message = _message(tmp_path, _settled())
    await worker.handle(message)
    assert crediter.wake.is_set()
    crediter.wake.clear()
    await worker.handle(message)  # redelivery
    assert worker.applied == 1 and worker.dead_lettered == 0
    assert not crediter.wake.is_set()
    assert await crediter.run_once() == 1
    assert await crediter.run_once() == 0
    assert (await balance(env, "ann")).cash == 1_000 + 1_000

    # ListCasinoWinnings over gRPC: the player's own, credited.
    server = grpc.aio.server(interceptors=[ContextInterceptor("payout"), AuthInterceptor(KEYSET)])
    casino_pb2_grpc.add_CasinoPayoutServiceServicer_to_server(CasinoPayoutApi(engine), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            stub = casino_pb2_grpc.CasinoPayoutServiceStub(ch)
            r = await stub.ListCasinoWinnings(
                casino_pb2.ListCasinoWinningsRequest(), metadata=bearer("ann", "player")
            )
            assert [(w.round_id, w.bet_kind, w.stake.cents, w.win.cents) for w in r.wins] == [
                ("rnd-1", "ante", 500, 500)
            ]
            assert r.wins[0].status == casino_pb2.CASINO_WIN_STATUS_CREDITED
            assert r.total.cents == 1_000
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await stub.ListCasinoWinnings(
                    casino_pb2.ListCasinoWinningsRequest(player_id="ann"),
                    metadata=bearer("bob", "player"),
                )
            assert info.value.code() is grpc.StatusCode.PERMISSION_DENIED
    finally:
        await server.stop(None)


async def test_voided_round_then_settled_pays_nothing(tmp_path: Path, setup: Setup) -> None:
    worker, crediter, _, _ = setup
    await worker.handle(
        _message(
            tmp_path,
            tc.CasinoRoundVoided(
                round_id="rnd-1", table_id="thb-7", game="thb", reason="malfunction"
            ),
        )
    )
    await worker.handle(_message(tmp_path, _settled()))
    assert worker.applied == 2
    assert await crediter.run_once() == 0
