"""Live UTH rounds through the table service's CasinoTableService (real gRPC host, real
wallet service, short windows): several players, betting buttons with their wallet
reservations, timeouts, per-player views."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from electric.common.v1 import errors_pb2
from electric.table.v1 import casino_events_pb2 as cev
from electric.table.v1 import casino_pb2
from electric_clients.errors import error_detail
from electric_table.casino import repo

from tests.support import wallet_kit
from tests.support.table_casino_kit import (
    PENDING,
    POSTED,
    TABLE,
    VOIDED,
    UthEnv,
    betting,
    md,
    seat,
    table_host,
    windows,
)

A = casino_pb2
ANTE, TRIPS = A.CASINO_BET_ACTION_ANTE, A.CASINO_BET_ACTION_TRIPS
UNDO, DOUBLE = A.CASINO_BET_ACTION_UNDO, A.CASINO_BET_ACTION_DOUBLE
REPEAT, CLEAR = A.CASINO_BET_ACTION_REPEAT, A.CASINO_BET_ACTION_CLEAR


async def settled_transfers(
    env: UthEnv, results: list[cev.CasinoBetResult], bets: list[cev.CasinoBetPlaced]
) -> None:
    """Every reservation of a won/lost spot ends posted, of a pushed spot voided (the owed
    wallet calls run right after the settling commit)."""
    outcome = {r.spot: r.outcome for r in results}
    for b in bets:
        want = POSTED if outcome.get(b.spot) in ("win", "lose") else VOIDED
        for _ in range(500):
            t = await env.transfer(b.bet_id)
            if t.state == want:
                break
            await asyncio.sleep(0.01)
        assert t.state == want, (b, outcome, t.state)


async def unfinished(env: UthEnv, player: str) -> list[A.CasinoRoundView]:
    resp = await env.casino.ListUnfinishedRounds(
        A.ListUnfinishedRoundsRequest(), metadata=md(player)
    )
    return list(resp.rounds)


@pytest.fixture
async def wallet(tmp_path: Path) -> AsyncIterator[wallet_kit.Env]:
    async with wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as w:
        yield w


async def test_uth_round_with_several_players(tmp_path: Path, wallet: wallet_kit.Env) -> None:
    players = ["alice", "bob", "carol"]
    for p in players:
        await wallet_kit.deposit(wallet, p, 20_000)
    async with table_host(tmp_path, wallet, windows(1500, 300, 4000)) as env:
        await seat(env, players)
        v = await env.wait("alice", lambda v: betting(v) and v.seated == 3)
        round_id = v.round_id
        assert v.seat == 0 and v.seated == 3 and list(v.legal) == ["ante"]
        v = await env.bet("alice", ANTE, 500)
        assert [(b.spot, b.amount_cents) for b in v.bets] == [("ante", 500), ("blind", 500)]
        v = await env.bet("alice", TRIPS, 200)
        assert (v.ante_cents, v.trips_cents) == (500, 200)
        await env.bet("bob", ANTE, 1000)
        await env.bet("carol", ANTE, 500)
        assert (await wallet_kit.balance(wallet, "alice")).reserved == 1200
        # alice sees only her own bets
        assert {b.player_id for b in v.bets} == {"alice"}

        v = await env.wait("alice", lambda v: v.phase == "preflop")
        assert v.round_id == round_id and len(v.player_cards) == 2 and v.light == "red"
        assert set(v.legal) == {"play_4x", "play_3x", "check"} and v.decision_deadline_ms > 0
        assert [r.round_id for r in await unfinished(env, "alice")] == [round_id]
        with pytest.raises(grpc.aio.AioRpcError) as early:
            await env.casino.AckResult(A.AckResultRequest(round_id=round_id), metadata=md("bob"))
        assert early.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        r = await env.decide("alice", round_id, A.CASINO_DECISION_PLAY_4X)
        assert {b.spot: b.amount_cents for b in r.bets}["play"] == 2000
        await env.decide("bob", round_id, A.CASINO_DECISION_CHECK)
        await env.decide("carol", round_id, A.CASINO_DECISION_CHECK)
        v = await env.wait("bob", lambda v: v.phase == "flop")
        assert len(v.board) == 3 and set(v.legal) == {"play_2x", "check"}
        assert not (await env.view("alice")).legal  # alice played: not asked again
        await env.decide("bob", round_id, A.CASINO_DECISION_PLAY_2X)
        await env.decide("carol", round_id, A.CASINO_DECISION_CHECK)
        v = await env.wait("carol", lambda v: v.phase == "river")
        assert len(v.board) == 5 and set(v.legal) == {"play_1x", "fold"}
        await env.decide("carol", round_id, A.CASINO_DECISION_FOLD)

        views = {
            p: await env.wait(p, lambda v: v.round_id != round_id or v.status != "open")
            for p in players
        }
        for p in players:
            got = (
                await env.casino.GetRound(A.GetRoundRequest(round_id=round_id), metadata=md(p))
            ).round
            assert got.status == "settled" and len(got.dealer_cards) == 2
            assert {b.player_id for b in got.bets} == {p}
            await settled_transfers(env, list(got.results), list(got.bets))
            posted = sum(r.stake_cents for r in got.results if r.outcome in ("win", "lose"))
            bal = await wallet_kit.balance(wallet, p)
            assert (bal.balance, bal.reserved) == (20_000 - posted, 0), (p, got.results)
        carol = (
            await env.casino.GetRound(A.GetRoundRequest(round_id=round_id), metadata=md("carol"))
        ).round
        assert {r.spot: r.outcome for r in carol.results}["ante"] == "lose"
        assert views

        msgs = env.events(round_id)
        settled = [m for m in msgs if isinstance(m, cev.CasinoRoundSettled)]
        assert len(settled) == 1 and settled[0].game == "uth"
        assert [p.player_id for p in settled[0].players] == players
        for pr in settled[0].players:
            kinds = [r.spot for r in pr.results]
            assert len(kinds) == len(set(kinds)) and all(r.bet_id for r in pr.results)
        assert sum(isinstance(m, cev.CasinoSeatSettled) for m in msgs) == 3
        kinds = env.kinds(round_id)
        assert kinds[0] == "CasinoRoundStarted" and kinds[-1] == "CasinoRoundEnded"
        assert (
            "CasinoDeckRevealed" in kinds and kinds.count("CasinoBetPlaced") == 3 + 2 + 2 + 2
        )  # + 2 plays
        # each result waits for its player until acknowledged (AckResult is idempotent)
        for _ in range(2):
            acked = await env.casino.AckResult(
                A.AckResultRequest(round_id=round_id), metadata=md("alice")
            )
            assert acked.round.acknowledged and acked.round.status == "settled"
        assert await unfinished(env, "alice") == []
        assert [r.round_id for r in await unfinished(env, "bob")] == [round_id]
        assert env.kinds(round_id).count("CasinoResultAcknowledged") == 1
        # the next round opens by itself with the seated players
        nxt = await env.wait("alice", lambda v: v.round_id != round_id and betting(v))
        assert nxt.seat == 0 and "repeat" in nxt.legal


async def test_betting_buttons_and_their_reservations(
    tmp_path: Path, wallet: wallet_kit.Env
) -> None:
    await wallet_kit.deposit(wallet, "alice", 10_000)
    await wallet_kit.deposit(wallet, "poor", 700)
    async with table_host(tmp_path, wallet, windows(2500, 300, 150)) as env:
        await seat(env, ["alice", "poor"])
        v = await env.wait("alice", betting)
        round_id = v.round_id

        async def reserved() -> int:
            return (await wallet_kit.balance(wallet, "alice")).reserved

        first = await env.bet("alice", ANTE, 500, rid="a1")
        again = await env.bet("alice", ANTE, 500, rid="a1")  # a retry places nothing twice
        assert [b.bet_id for b in again.bets] == [b.bet_id for b in first.bets]
        await env.bet("alice", TRIPS, 200)
        assert await reserved() == 1200
        v = await env.bet("alice", DOUBLE)
        assert (v.ante_cents, v.trips_cents, await reserved()) == (1000, 400, 2400)
        doubled = [b.bet_id for b in v.bets[3:]]
        assert len(doubled) == 3 and "double" not in v.legal
        v = await env.bet("alice", UNDO)
        assert (v.ante_cents, v.trips_cents, await reserved()) == (500, 200, 1200)
        for bet_id in doubled:
            assert (await env.transfer(bet_id)).state == VOIDED
        kept = [b.bet_id for b in v.bets]
        v = await env.bet("alice", CLEAR)
        assert (v.ante_cents, list(v.bets), await reserved()) == (0, [], 0)
        for bet_id in kept:
            assert (await env.transfer(bet_id)).state == VOIDED
        with pytest.raises(grpc.aio.AioRpcError) as nothing:
            await env.bet("alice", UNDO)
        assert nothing.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        with pytest.raises(grpc.aio.AioRpcError) as bad:
            await env.bet("alice", ANTE, 1)
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        v = await env.bet("alice", ANTE, 300)
        assert await reserved() == 600

        # the Ante is reserved, its Blind is refused: the Ante's reservation is voided too
        with pytest.raises(grpc.aio.AioRpcError) as short:
            await env.bet("poor", ANTE, 500)
        assert short.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert error_detail(short.value, errors_pb2.InsufficientFunds())
        bal = await wallet_kit.balance(wallet, "poor")
        assert (bal.balance, bal.reserved) == (700, 0)
        assert (await env.view("poor")).ante_cents == 0

        # nobody decides: the round settles on its own; REPEAT in the next one
        nxt = await env.wait("alice", lambda v: v.round_id != round_id and betting(v))
        assert "repeat" in nxt.legal
        v = await env.bet("alice", REPEAT)
        assert (v.ante_cents, v.trips_cents) == (300, 0)
        assert [b.spot for b in v.bets] == ["ante", "blind"]
        bal = await wallet_kit.balance(wallet, "alice")
        # the first round's Ante and Blind were auto-folded (lost); the repeat is reserved
        assert (bal.balance, bal.reserved) == (10_000 - 600 - 600, 600)
        with pytest.raises(grpc.aio.AioRpcError) as twice:
            await env.bet("alice", REPEAT)
        assert twice.value.code() == grpc.StatusCode.FAILED_PRECONDITION


async def test_a_player_who_never_decides_is_auto_checked_then_auto_folded(
    tmp_path: Path, wallet: wallet_kit.Env
) -> None:
    await wallet_kit.deposit(wallet, "idle", 5_000)
    async with table_host(tmp_path, wallet, windows(600, 200, 250)) as env:
        await seat(env, ["idle"])
        v = await env.wait("idle", betting)
        round_id = v.round_id
        await env.bet("idle", ANTE, 500)
        await env.bet("idle", TRIPS, 100)
        await env.wait("idle", lambda v: v.round_id == round_id and v.status == "settled")
        got = (
            await env.casino.GetRound(A.GetRoundRequest(round_id=round_id), metadata=md("idle"))
        ).round
        decisions = [m for m in env.events(round_id) if isinstance(m, cev.CasinoDecisionMade)]
        assert [(d.street, d.decision, d.timed_out) for d in decisions] == [
            ("preflop", "check", True),
            ("flop", "check", True),
            ("river", "fold", True),
        ]
        outcome = {r.spot: r.outcome for r in got.results}
        assert outcome["ante"] == outcome["blind"] == "lose"
        await settled_transfers(env, list(got.results), list(got.bets))
        # the player's own view says so too
        view = await env.view("idle")
        if view.round_id == round_id:
            assert [d.timed_out for d in view.decisions] == [True, True, True]


async def test_unknown_tables_and_stale_intents(tmp_path: Path, wallet: wallet_kit.Env) -> None:
    await wallet_kit.deposit(wallet, "alice", 5_000)
    async with table_host(tmp_path, wallet, windows(1000, 200, 200)) as env:
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await env.casino.GetCasinoTable(
                A.GetCasinoTableRequest(table_id="uth-77"), metadata=md("alice")
            )
        assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(grpc.aio.AioRpcError) as unseated:
            await env.bet("alice", ANTE, 500)
        assert unseated.value.code() == grpc.StatusCode.PERMISSION_DENIED
        await seat(env, ["alice"])
        v = await env.wait("alice", betting)

        async def orphan(bet_id: str, round_id: str) -> None:
            with env.handlers.engine.begin() as conn:
                repo.record_intent(
                    conn, repo.BetRow(bet_id, round_id, "alice", "ante", 100, "", False)
                )
            await env.handlers.wallet.reserve(
                bet_id, "alice", 100, to_account="house:casino_bankroll"
            )

        await orphan("gone-round:0:1-x:ante", "gone-round")
        await orphan(f"{v.round_id}:0:9-x:ante", v.round_id)
        assert await env.handlers.sweep_intents(min_age_s=0) == 2
        assert (await env.transfer("gone-round:0:1-x:ante")).state == VOIDED
        # an intent of the live round is left to the round's end, which voids it
        assert (await env.transfer(f"{v.round_id}:0:9-x:ante")).state == PENDING
        await env.wait("alice", lambda x: x.round_id != v.round_id)
        for _ in range(300):
            if (await env.transfer(f"{v.round_id}:0:9-x:ante")).state == VOIDED:
                break
            await asyncio.sleep(0.01)
        assert (await env.transfer(f"{v.round_id}:0:9-x:ante")).state == VOIDED
        bal = await wallet_kit.balance(wallet, "alice")
        assert (bal.balance, bal.reserved) == (5_000, 0)


async def test_catch_up_events_stand_when_the_command_is_refused(
    tmp_path: Path, wallet: wallet_kit.Env
) -> None:
    await wallet_kit.deposit(wallet, "alice", 5_000)
    async with table_host(tmp_path, wallet, windows(1500, 300, 5000)) as env:
        await seat(env, ["alice"])
        v = await env.wait("alice", betting)
        t = env.uth.tables[TABLE]
        assert t.task is not None
        t.task.cancel()  # no driver: only the command moves the clock
        await env.bet("alice", ANTE, 500)
        late = v.betting_closes_at_ms + 10
        env.handlers.now_ms = lambda: late
        with pytest.raises(grpc.aio.AioRpcError) as closed:
            await env.bet("alice", TRIPS, 100)
        assert closed.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        kinds = env.kinds(v.round_id)
        assert kinds[-4:] == [
            "CasinoLightChanged",
            "CasinoBettingClosed",
            "CasinoHoleCardsDealt",
            "CasinoDecisionWindowOpened",
        ]
        lights = [m.light for m in env.events(v.round_id) if isinstance(m, cev.CasinoLightChanged)]
        assert lights == ["yellow", "red"]
        with env.handlers.engine.connect() as conn:
            row = repo.get_round(conn, v.round_id)
        _, replayed, _, version, _ = env.uth.load_round(row)
        assert replayed is not None and t.round is not None
        assert replayed.state == t.round.state and version == t.version
        assert (await env.view("alice")).phase == "preflop"
