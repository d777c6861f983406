"""THB rounds through the real table service (K1's CasinoTableService on a ServiceHost) and
a real wallet, each round's events delivered TWICE to payout's casino handlers: every win is
credited once, and the player's balance is deposit − stakes lost + wins exactly, the casino
bankroll moving by the opposite (the issue's reconciliation, on one player, in-process)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
from electric.registration.v1 import casino_events_pb2 as reg_casino
from electric.table.v1 import casino_pb2, casino_pb2_grpc
from electric_clients.accounts import BANKROLL
from electric_payout.casino import repo as payout_repo
from electric_platform import ServiceHost
from electric_table.casino.wiring import CASINO
from electric_table.journal import casino_stream

from tests.support import wallet_kit
from tests.support.auth import bearer
from tests.support.casino_setup import payout_casino, registration_event, serve_table, until_seated

ROUNDS = 20
ANTE = 300
ALICE = bearer("alice", "player")
D = casino_pb2
#: Call the flop, check the turn, check the river.
PLAY = (D.CASINO_DECISION_CALL_FLOP, D.CASINO_DECISION_CHECK, D.CASINO_DECISION_CHECK)


async def seat(host: ServiceHost, player: str, table_id: str) -> None:
    """Registration's CasinoSeatTaken on its topic; wait until the table has the seat."""
    payload = reg_casino.CasinoSeatTaken(
        table_id=table_id, game="thb", player_id=player, seat=1, session_id="s1"
    )
    await registration_event(payload, table_id, stream_version=1)
    await until_seated(CASINO[id(host)].engine, table_id, player)


async def test_thb_rounds_reconcile_with_every_win_credited_once(tmp_path: Path) -> None:
    async with (
        wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as wallet,
        serve_table(tmp_path, wallet) as host,
        payout_casino(tmp_path / "payout.db", wallet.target) as payout,
    ):
        await wallet_kit.deposit(wallet, "alice", 100_000)
        await seat(host, "alice", "thb-1")
        engine, wins, crediter, client = payout.engine, payout.wins, payout.crediter, payout.client
        worker = payout.worker
        bankroll_before = (await client.account(BANKROLL)).posted
        table = CASINO[id(host)]
        lost = won = 0
        paid: list[int] = []
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
                await payout.deliver([*envelopes, *envelopes])  # every event delivered twice
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
