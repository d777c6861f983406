"""THB rounds through the real table service (K1's CasinoTableService on a ServiceHost) and
a real wallet, each round's events delivered TWICE to payout's casino handlers: every win is
credited once, and the player's balance is deposit − stakes lost + wins exactly, the casino
bankroll moving by the opposite (the issue's reconciliation, on one player, in-process)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import casino_events_pb2 as reg_casino
from electric.table.v1 import casino_pb2, casino_pb2_grpc
from electric_clients.accounts import BANKROLL
from electric_clients.wallet import WalletClient
from electric_eventlog import (
    ConsumerWorker,
    EventStore,
    IdempotentConsumer,
    InProcessBus,
    create_engine,
    envelope_message,
    migrate,
    pack,
    upgrade,
)
from electric_eventlog.bus import ReceivedMessage
from electric_payout.casino import repo as payout_repo
from electric_payout.casino.consumers import CasinoConsumers
from electric_payout.casino.crediter import CasinoCrediter
from electric_payout.casino.wins import CasinoWins
from electric_payout.consumers import TABLE_CONSUMER, TABLE_TOPIC
from electric_payout.store.tables import VERSIONS_DIR, metadata
from electric_platform import ServiceHost, load_config
from electric_platform.eventpath import inprocess_bus
from electric_table.app import make_setup
from electric_table.casino import repo as table_repo
from electric_table.casino.handlers import casino_stream
from electric_table.casino.wiring import CASINO

from tests.support import wallet_kit
from tests.support.auth import auth_env, bearer, token_source
from tests.support.table_kit import REG_TOPIC

ROUNDS = 20
ANTE = 300
ALICE = bearer("alice", "player")
D = casino_pb2
#: Call the flop, check the turn, check the river.
PLAY = (D.CASINO_DECISION_CALL_FLOP, D.CASINO_DECISION_CHECK, D.CASINO_DECISION_CHECK)


@contextlib.asynccontextmanager
async def table_host(tmp_path: Path, wallet: wallet_kit.Env) -> AsyncIterator[ServiceHost]:
    config = load_config(
        "table",
        {
            "ELECTRIC_VAR_DIR": str(tmp_path),
            **auth_env(),
            "ELECTRIC_WALLET_TARGET": wallet.target,
            "ELECTRIC_GRPC_PORT": "0",
            "ELECTRIC_METRICS_PORT": "-1",
            "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "1",
            "ELECTRIC_LOG_LEVEL": "WARNING",
        },
    )
    host = ServiceHost(config, make_setup(pause_ms=50))
    await host.start()
    try:
        yield host
    finally:
        await host.stop()


async def seat(host: ServiceHost, player: str, table_id: str) -> None:
    """Registration's CasinoSeatTaken on its topic; wait until the table has the seat."""
    payload = reg_casino.CasinoSeatTaken(
        table_id=table_id, game="thb", player_id=player, seat=1, session_id="s1"
    )
    envelope = Envelope(
        event_id=str(uuid.uuid4()),
        stream_id=f"casino-table-{table_id}",
        stream_version=1,
        event_type=payload.DESCRIPTOR.full_name,
        payload=pack(payload),
        producer="registration",
    )
    envelope.occurred_at.GetCurrentTime()
    await inprocess_bus().publish([envelope_message(REG_TOPIC, envelope)])
    handlers = CASINO[id(host)]
    for _ in range(500):
        with handlers.engine.connect() as conn:
            if table_repo.seated(conn, table_id, player):
                return
        await asyncio.sleep(0.02)
    raise AssertionError("seat never arrived")


async def test_thb_rounds_reconcile_with_every_win_credited_once(tmp_path: Path) -> None:
    async with (
        wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as wallet,
        table_host(tmp_path, wallet) as host,
    ):
        await wallet_kit.deposit(wallet, "alice", 100_000)
        await seat(host, "alice", "thb-1")
        engine = create_engine(f"sqlite:///{tmp_path / 'payout.db'}")
        migrate(engine)
        upgrade(
            engine,
            versions_dir=VERSIONS_DIR,
            version_table="alembic_version_payout",
            target_metadata=metadata,
        )
        client = WalletClient.connect(wallet.target, token_source("payout"))
        wins = CasinoWins(engine, EventStore(engine, producer="payout"))
        crediter = CasinoCrediter(wins, client)
        worker = ConsumerWorker(
            engine=engine,
            bus=InProcessBus(),
            consumer=IdempotentConsumer(TABLE_CONSUMER),
            topics=[TABLE_TOPIC],
        )
        CasinoConsumers(wins, on_owed=crediter.wake.set).register(worker)
        bankroll_before = (await client.account(BANKROLL)).posted
        table = CASINO[id(host)]
        lost = won = 0
        paid: list[int] = []
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as ch:
                stub = casino_pb2_grpc.CasinoTableServiceStub(ch)
                for n in range(ROUNDS):
                    view = (
                        await stub.Deal(
                            D.DealRequest(request_id=f"d{n}", table_id="thb-1", ante_cents=ANTE),
                            metadata=ALICE,
                        )
                    ).round
                    for i, decision in enumerate(
                        [
                            D.CASINO_DECISION_CALL_FLOP,
                            D.CASINO_DECISION_CHECK,
                            D.CASINO_DECISION_CHECK,
                        ]
                    ):
                        view = (
                            await stub.Decide(
                                D.DecideRequest(
                                    request_id=f"c{n}-{i}",
                                    round_id=view.round_id,
                                    decision=decision,
                                ),
                                metadata=ALICE,
                            )
                        ).round
                    assert view.status == "settled"
                    for r in view.results:
                        if r.outcome == "lose":
                            lost += r.stake_cents
                        elif r.outcome == "win":
                            won += r.win_cents
                            paid.append(r.stake_cents + r.win_cents)
                    with table.engine.connect() as conn:
                        envelopes = table.store.read_stream(conn, casino_stream(view.round_id))
                    for e in [*envelopes, *envelopes]:  # every event delivered twice
                        out = envelope_message(TABLE_TOPIC, e)
                        await worker.handle(
                            ReceivedMessage(out.topic, 0, 0, out.key, out.value, out.headers)
                        )
                    # The table posts the stakes as owed work: credit until nothing is owed.
                    for _ in range(200):
                        await crediter.run_once()
                        if not wins.owed():
                            break
                        await asyncio.sleep(0.02)
                    assert wins.owed() == []
            bal = await wallet_kit.balance(wallet, "alice")
            assert (bal.cash, bal.reserved) == (100_000 - lost + won, 0)
            assert (await client.account(BANKROLL)).posted == bankroll_before + lost - won
            assert worker.dead_lettered == 0
            assert paid, "no winning bet in the rounds played"  # P ~ 1e-5 with 20 rounds
            with engine.connect() as conn:
                rows, total = payout_repo.player_wins(conn, "alice", offset=0, limit=1000)
            assert len(rows) == len(paid) and total == sum(paid)
            assert {r.status for r in rows} == {"credited"}
        finally:
            await client.close()
            engine.dispose()
