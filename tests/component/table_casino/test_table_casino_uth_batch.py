"""Group commit of a live UTH table's PlaceBets (``electric_table.casino.uth.batch``): a
queue of placements carried by one pass keeps each one's own answer — a wallet refusal or
a domain refusal stops only its placement, a retried request id places nothing twice, and
each placement's events carry its own request as their causation."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from electric.table.v1 import casino_events_pb2 as cev
from electric.table.v1 import casino_pb2 as A
from electric_table.casino.uth.batch import MAX_BATCH, Queued, take_batch
from electric_table.journal import casino_stream

from tests.support import wallet_kit
from tests.support.table_casino_kit import TABLE, UthEnv, betting, seat, table_host, windows

ANTE, TRIPS = A.CASINO_BET_ACTION_ANTE, A.CASINO_BET_ACTION_TRIPS
PASSES = "electric_table_casino_uth_placements_per_pass_count"


@pytest.fixture
async def wallet(tmp_path: Path) -> AsyncIterator[wallet_kit.Env]:
    async with wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as w:
        yield w


def item(player: str, action: str = "ante") -> Queued:
    return Queued(player, action, 100, uuid.uuid4().hex)


def test_a_pass_takes_one_placement_per_player_in_queue_order() -> None:
    a1, b1, a2, c1 = item("a"), item("b"), item("a", "trips"), item("c")
    pending = [a1, b1, a2, c1]
    assert take_batch(pending) == [a1, b1, c1]
    assert pending == [a2]  # a's second placement waits for the next pass
    many = [item(f"p{i}") for i in range(MAX_BATCH + 5)]
    assert len(take_batch(many)) == MAX_BATCH and len(many) == 5


async def place(env: UthEnv, player: str, action: int, amount: int, rid: str) -> grpc.StatusCode:
    try:
        await env.bet(player, action, amount, rid=rid)
    except grpc.aio.AioRpcError as err:
        return err.code()
    return grpc.StatusCode.OK


async def test_one_pass_keeps_each_placements_own_answer(
    tmp_path: Path, wallet: wallet_kit.Env
) -> None:
    await one_pass_story(tmp_path, wallet)


async def one_pass_story(tmp_path: Path, wallet: wallet_kit.Env, database_url: str = "") -> None:
    """Two passes of 12 queued placements (antes, then trips) with a domain refusal and a
    wallet refusal among them; then the retries (also run on PostgreSQL)."""
    players = [f"g{i:02d}" for i in range(12)]
    broke, bad = players[3], players[7]
    for p in players:
        await wallet_kit.deposit(wallet, p, 200 if p == broke else 50_000)
    timing = windows(20_000, 300, 2000, pause=5000)
    async with table_host(tmp_path, wallet, timing, database_url) as env:
        await seat(env, players)
        round_id = (await env.wait(players[0], betting)).round_id
        live = env.uth.tables[TABLE]
        rids = {p: uuid.uuid4().hex for p in players}
        trips = {p: uuid.uuid4().hex for p in players}

        async def queued(calls: list[tuple[str, int, int, str]]) -> list[grpc.StatusCode]:
            """Hold the table while every call queues, so ONE pass carries them all."""
            passes = env.metric(PASSES)
            async with live.lock:
                tasks = [asyncio.create_task(place(env, *c)) for c in calls]
                while len(live.pending) < len(calls):
                    await asyncio.sleep(0.01)
            codes = await asyncio.gather(*tasks)
            assert env.metric(PASSES) == passes + 1
            return list(codes)

        antes = [(p, ANTE, 1 if p == bad else 100, rids[p]) for p in players]
        codes = await queued(antes)
        ok, invalid = grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT
        assert codes == [invalid if p == bad else ok for p in players]
        # The broke player's Trips is refused by the wallet; the others stand.
        codes = await queued([(p, TRIPS, 100, trips[p]) for p in players if p != bad])
        refused = grpc.StatusCode.FAILED_PRECONDITION
        assert codes == [refused if p == broke else ok for p in players if p != bad]
        # Retries answer as the first time and place nothing more.
        again = await asyncio.gather(*(place(env, *c) for c in antes))
        assert again == [invalid if p == bad else ok for p in players]

        envelopes = env.handlers.store
        with envelopes.engine.connect() as conn:
            stored = envelopes.read_stream(conn, casino_stream(round_id))
        placed = [
            (e.causation_id, m)
            for e in stored
            if isinstance(m := envelopes.decode(e), cev.CasinoBetsPlaced)
        ]
        by_cause = {cause: m for cause, m in placed}
        assert len(placed) == len(by_cause) == 2 * (len(players) - 1) - 1
        for p in players:
            if p == bad:
                assert rids[p] not in by_cause and trips[p] not in by_cause
                continue
            assert by_cause[rids[p]].player_id == p
            assert (trips[p] in by_cause) is (p != broke)
        held = {p: (await wallet_kit.balance(wallet, p)).reserved for p in players}
        assert held[bad] == 0 and held[broke] == 200  # ante + blind only
        assert all(held[p] == 300 for p in players if p not in (bad, broke))


async def test_one_pass_carries_a_decision_window(tmp_path: Path, wallet: wallet_kit.Env) -> None:
    """Decisions queue like placements: one pass, each with its own answer (a Play
    reserves its bet; a stale round id or a player without a seat is refused alone)."""
    players = [f"d{i:02d}" for i in range(8)]
    for p in players:
        await wallet_kit.deposit(wallet, p, 50_000)
    timing = windows(1500, 200, 30_000, pause=5000)
    async with table_host(tmp_path, wallet, timing) as env:
        await seat(env, players)
        round_id = (await env.wait(players[0], betting)).round_id
        await asyncio.gather(*(env.bet(p, ANTE, 100) for p in players))
        await env.wait(players[0], lambda v: v.phase == "preflop", timeout=30)
        live = env.uth.tables[TABLE]
        play, check = A.CASINO_DECISION_PLAY_4X, A.CASINO_DECISION_CHECK
        calls = [(p, round_id, play if i % 2 else check) for i, p in enumerate(players)]
        calls[-1] = (players[-1], "uth-r-" + "0" * 32, play)  # a round that is not live

        async def decide(player: str, rid: str, decision: int) -> grpc.StatusCode:
            try:
                await env.decide(player, rid, decision)
            except grpc.aio.AioRpcError as err:
                return err.code()
            return grpc.StatusCode.OK

        passes = env.metric(PASSES)
        async with live.lock:
            tasks = [asyncio.create_task(decide(*c)) for c in calls]
            while len(live.pending) < len(calls) - 1:  # the stale id fails before queueing
                await asyncio.sleep(0.01)
        codes = await asyncio.gather(*tasks)
        assert env.metric(PASSES) == passes + 1
        ok = grpc.StatusCode.OK
        assert codes == [ok] * (len(players) - 1) + [grpc.StatusCode.NOT_FOUND]
        made = [m for m in env.events(round_id) if isinstance(m, cev.CasinoDecisionMade)]
        assert sorted(m.player_id for m in made) == sorted(players[:-1])
        held = {p: (await wallet_kit.balance(wallet, p)).reserved for p in players}
        for i, p in enumerate(players[:-1]):
            assert held[p] == 200 + (400 if i % 2 else 0), (p, held[p])  # Play 4x the ante


async def test_a_placement_whose_intent_was_voided_since_reserves_nothing(
    tmp_path: Path, wallet: wallet_kit.Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The UTH twin of THB's chaos seed 11 finding: an earlier attempt of the request left
    an intent that the auto-void rule resolved since (the wallet never had the transfer).
    The retry must not reserve that bet again: nothing would resolve the reservation. It is
    refused alone; the other placements of its pass stand."""
    from electric_table.casino import repo
    from electric_table.casino.uth import batch as uth_batch
    from electric_table.store import tables as t
    from sqlalchemy import update

    players = ["v1", "v2"]
    for p in players:
        await wallet_kit.deposit(wallet, p, 50_000)
    real = repo.record_intent

    def voided_since(conn: object, b: repo.BetRow) -> bool:
        if b.player_id == "v1":  # what the auto-void left of the first attempt
            real(conn, b)  # type: ignore[arg-type]
            conn.execute(  # type: ignore[attr-defined]
                update(t.casino_bets)
                .where(t.casino_bets.c.bet_id == b.bet_id)
                .values(owed_op=repo.VOID, op_done=True)
            )
        return real(conn, b)  # type: ignore[arg-type]

    async with table_host(tmp_path, wallet, windows(20_000, 300, 2000, pause=5000)) as env:
        await seat(env, players)
        await env.wait(players[0], betting)
        monkeypatch.setattr(uth_batch.repo, "record_intent", voided_since)
        codes = [await place(env, p, ANTE, 100, uuid.uuid4().hex) for p in players]
        assert codes == [grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.OK]
        held = {p: (await wallet_kit.balance(wallet, p)).reserved for p in players}
        assert held == {"v1": 0, "v2": 200}  # v2: ante + blind; v1: nothing held
        monkeypatch.setattr(uth_batch.repo, "record_intent", real)
        assert await place(env, "v1", ANTE, 100, uuid.uuid4().hex) == grpc.StatusCode.OK
        assert (await wallet_kit.balance(wallet, "v1")).reserved == 200  # a new request bets
