"""Idle expiry across services (issue 13 points 1 and 4): registration's casino lobby with an
INJECTED clock releases a THB seat after 20 minutes without activity while the player has a
round open at the real table service (with a real wallet). The rule (docs/casino-services.md,
"Idle expiry and unfinished rounds"):

* the seat ends: the table drops it (``CasinoSeatReleased``, reason IDLE_EXPIRED), so a new
  Deal is refused until the player joins again;
* the unfinished THB round is neither voided nor settled by the expiry: it stays resumable —
  listed by ``ListUnfinishedRounds``, the player's next Decide plays it to the end, and
  ``AckResult`` clears it; its stakes stay reserved meanwhile and are posted or voided at
  settlement exactly as for any round;
* joining again gives the player their own table back (a new session) and Deal works.

Registration's events travel to the table as they would through Kafka: read from
registration's store and published on the in-process bus the table service consumes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from electric.registration.v1 import casino_events_pb2 as reg_ev
from electric.table.v1 import casino_pb2, casino_pb2_grpc
from electric_domain.casino.common.config import load_config as load_casino_config
from electric_domain.lobby.casino import CasinoGame
from electric_eventlog import EventStore, envelope_message
from electric_platform import ServiceHost
from electric_platform.eventpath import inprocess_bus
from electric_registration.casino.lobby import CasinoLobby, casino_stream
from electric_table.casino.wiring import CASINO

from tests.support import table_casino_kit as uth_kit
from tests.support import wallet_kit
from tests.support.auth import bearer
from tests.support.casino_setup import FakeClock, registration_engine, serve_table
from tests.support.casino_setup import until_seated as seated
from tests.support.table_kit import REG_TOPIC

ALICE = bearer("alice", "player")
D = casino_pb2


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def lobby(tmp_path: Path, clock: FakeClock) -> Iterator[CasinoLobby]:
    engine = registration_engine(tmp_path / "reg.db")
    yield CasinoLobby(
        engine, EventStore(engine, producer="registration"), load_casino_config(), clock=clock
    )
    engine.dispose()


class Relay:
    """Registration's casino events to the table, in order, each once (like the outbox)."""

    def __init__(self, lobby: CasinoLobby) -> None:
        self.lobby = lobby
        self.sent: set[str] = set()

    async def flush(self, table_id: str) -> list[object]:
        with self.lobby.engine.connect() as conn:
            envelopes = self.lobby.store.read_stream(conn, casino_stream(table_id))
        new = [e for e in envelopes if e.event_id not in self.sent]
        await inprocess_bus().publish([envelope_message(REG_TOPIC, e) for e in new])
        self.sent |= {e.event_id for e in new}
        return [self.lobby.store.decode(e) for e in new]


async def until_seated(host: ServiceHost, table_id: str, player: str, want: bool) -> None:
    await seated(CASINO[id(host)].engine, table_id, player, want)


async def test_idle_expiry_ends_the_thb_seat_and_the_open_round_stays_resumable(
    tmp_path: Path, lobby: CasinoLobby, clock: FakeClock
) -> None:
    relay = Relay(lobby)
    async with (
        wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as wallet,
        serve_table(tmp_path, wallet) as host,
        grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as ch,
    ):
        stub = casino_pb2_grpc.CasinoTableServiceStub(ch)
        await wallet_kit.deposit(wallet, "alice", 10_000)
        table_id = lobby.join(CasinoGame.THB, "alice").session.table_id
        await relay.flush(table_id)
        await until_seated(host, table_id, "alice", True)
        view = (
            await stub.Deal(
                D.DealRequest(request_id="d1", table_id=table_id, ante_cents=500), metadata=ALICE
            )
        ).round
        view = (
            await stub.Decide(
                D.DecideRequest(
                    request_id="c1", round_id=view.round_id, decision=D.CASINO_DECISION_CALL_FLOP
                ),
                metadata=ALICE,
            )
        ).round
        assert view.status == "open" and "bet_turn" in view.legal
        # 19:59 without activity: still seated; 20:00: the sweep releases the seat.
        clock.advance(minutes=19, seconds=59)
        assert lobby.sweep() == []
        clock.advance(seconds=1)
        released = lobby.sweep()
        assert [(s.player_id, s.table_id) for s in released] == [("alice", table_id)]
        events = await relay.flush(table_id)
        assert any(
            isinstance(e, reg_ev.CasinoSeatReleased)
            and e.reason == reg_ev.CASINO_SEAT_RELEASE_REASON_IDLE_EXPIRED
            for e in events
        ), events
        await until_seated(host, table_id, "alice", False)

        # The seat is gone: no new round ...
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.Deal(
                D.DealRequest(request_id="d2", table_id=table_id, ante_cents=500), metadata=ALICE
            )
        assert refused.value.code() is grpc.StatusCode.PERMISSION_DENIED
        # ... but the open round was neither voided nor settled: it waits for the player.
        unfinished = (
            await stub.ListUnfinishedRounds(D.ListUnfinishedRoundsRequest(), metadata=ALICE)
        ).rounds
        assert [(r.round_id, r.status) for r in unfinished] == [(view.round_id, "open")]
        bal = await wallet_kit.balance(wallet, "alice")
        assert bal.reserved == 1500  # Ante + 2x flop call, still pending
        for n in range(2):
            view = (
                await stub.Decide(
                    D.DecideRequest(
                        request_id=f"k{n}", round_id=view.round_id, decision=D.CASINO_DECISION_CHECK
                    ),
                    metadata=ALICE,
                )
            ).round
        assert view.status == "settled" and not view.acknowledged
        unfinished = (
            await stub.ListUnfinishedRounds(D.ListUnfinishedRoundsRequest(), metadata=ALICE)
        ).rounds
        assert [r.round_id for r in unfinished] == [view.round_id]
        acked = (
            await stub.AckResult(D.AckResultRequest(round_id=view.round_id), metadata=ALICE)
        ).round
        assert acked.acknowledged
        assert not (
            await stub.ListUnfinishedRounds(D.ListUnfinishedRoundsRequest(), metadata=ALICE)
        ).rounds
        # Settled once: the stakes are no longer reserved (posted or voided, per result).
        for _ in range(200):
            bal = await wallet_kit.balance(wallet, "alice")
            if bal.reserved == 0:
                break
            await asyncio.sleep(0.02)
        # Lost and won stakes were posted to the bankroll (payout, not running here, credits
        # stake + win of a win); a pushed stake was voided back.
        posted = sum(r.stake_cents for r in view.results if r.outcome in ("lose", "win"))
        assert (bal.reserved, bal.cash) == (0, 10_000 - posted)

        # Joining again: the player's own table back, a new session, and Deal works.
        again = lobby.join(CasinoGame.THB, "alice")
        assert again.session.table_id == table_id and not again.already_seated
        await relay.flush(table_id)
        await until_seated(host, table_id, "alice", True)
        nxt = (
            await stub.Deal(
                D.DealRequest(request_id="d3", table_id=table_id, ante_cents=500), metadata=ALICE
            )
        ).round
        assert nxt.status == "open" and nxt.round_id != view.round_id


async def test_idle_expiry_mid_uth_round_settles_on_its_clock_and_the_result_waits(
    tmp_path: Path, lobby: CasinoLobby, clock: FakeClock
) -> None:
    """UTH: the seat expires while bob's Ante is in a live round and he decides nothing.
    The round goes on on its own clock (auto-check pre-flop and flop, auto-fold at the river)
    and settles; the result waits in ListUnfinishedRounds until AckResult; the next round
    does not seat him (PlaceBets refused) until he joins again."""
    lobby.ensure_tables()
    relay = Relay(lobby)
    async with (
        wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as wallet,
        uth_kit.table_host(tmp_path, wallet, uth_kit.windows(800, 200, 600, pause=300)) as env,
    ):
        bob = uth_kit.md("bob")
        await wallet_kit.deposit(wallet, "bob", 10_000)
        lobby.join(CasinoGame.UTH, "bob", "uth-1")
        await relay.flush("uth-1")
        await until_seated(env.host, "uth-1", "bob", True)
        view = await env.wait("bob", lambda v: v.phase == "betting" and v.light == "green")
        view = await env.bet("bob", D.CASINO_BET_ACTION_ANTE, 200)
        assert view.ante_cents == 200
        round_id = view.round_id
        clock.advance(minutes=20)
        assert [s.player_id for s in lobby.sweep()] == ["bob"]
        await relay.flush("uth-1")
        await until_seated(env.host, "uth-1", "bob", False)
        # The round is not voided by the expiry: it runs to the end on the table's clock.
        for _ in range(300):
            got = (
                await env.casino.GetRound(D.GetRoundRequest(round_id=round_id), metadata=bob)
            ).round
            if got.status != "open":
                break
            await asyncio.sleep(0.05)
        assert got.status == "settled", got
        made = [m for m in env.events(round_id) if type(m).__name__ == "CasinoDecisionMade"]
        assert [(m.street, m.decision, m.timed_out) for m in made] == [
            ("preflop", "check", True),
            ("flop", "check", True),
            ("river", "fold", True),
        ]
        assert {r.spot: r.outcome for r in got.results} == {"ante": "lose", "blind": "lose"}
        unfinished = (
            await env.casino.ListUnfinishedRounds(D.ListUnfinishedRoundsRequest(), metadata=bob)
        ).rounds
        assert [r.round_id for r in unfinished] == [round_id]
        await env.casino.AckResult(D.AckResultRequest(round_id=round_id), metadata=bob)
        assert not (
            await env.casino.ListUnfinishedRounds(D.ListUnfinishedRoundsRequest(), metadata=bob)
        ).rounds
        # The settlement's posts run as owed work after the round is stored as settled.
        for _ in range(500):
            bal = await wallet_kit.balance(wallet, "bob")
            if bal.reserved == 0:
                break
            await asyncio.sleep(0.02)
        assert (bal.cash, bal.reserved) == (10_000 - 400, 0)
        # No seat any more: the table refuses his bets in the next rounds.
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await env.bet("bob", D.CASINO_BET_ACTION_ANTE, 200)
        assert refused.value.code() in (
            grpc.StatusCode.PERMISSION_DENIED,
            grpc.StatusCode.NOT_FOUND,
        ), refused.value
