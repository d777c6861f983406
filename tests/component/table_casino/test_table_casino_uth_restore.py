"""A live UTH change that could not be stored must not stay in memory (issue 18, found by
the chaos run: a PostgreSQL fast restart).

A player's Decide reserved the Play bet, then the commit failed (the connection was lost)
and the reload of the round from its stream failed too (the server was still starting).
Before the fix the live round kept the decision in memory anyway: the table went on from
it, and the settlement paid a Play bet that no CasinoDecisionMade / CasinoBetPlaced event
on the stream explains. Now the table retries the reload (under its lock) until the round in
memory is the stored one again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from electric.table.v1 import casino_events_pb2 as cev
from electric.table.v1 import casino_pb2 as A
from sqlalchemy.exc import OperationalError

from tests.support import wallet_kit
from tests.support.table_casino_kit import TABLE, betting, md, seat, table_host, windows

ANTE = A.CASINO_BET_ACTION_ANTE


@pytest.fixture
async def wallet(tmp_path: Path) -> AsyncIterator[wallet_kit.Env]:
    async with wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as w:
        yield w


async def until_whole(live: Any) -> None:
    """Until the table's driver has repaired it (at most 15 s)."""
    for _ in range(1500):
        if not live.broken:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"still broken: {live.broken}")


def assert_memory_is_stored(live: Any, load: Any) -> None:
    _, stored_round, _, stored_version, _ = load(TABLE)
    assert len(live.round.history) == len(stored_round.history)
    assert live.version == stored_version


async def bobs_ante_past_its_deadline(env: Any) -> None:
    """Bob's ante, whose call gives up after 2 s (the reloads' waits end at 0.1, 0.3, 0.7,
    1.5 and 3.1 s): the server cancels its handler."""
    with pytest.raises(grpc.aio.AioRpcError) as got:
        await env.casino.PlaceBets(
            A.PlaceBetsRequest(
                request_id="bob-ante", table_id=TABLE, action=ANTE, amount_cents=500
            ),
            metadata=md("bob"),
            timeout=2.0,
        )
    assert got.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


def lost() -> OperationalError:
    return OperationalError("commit", {}, ConnectionError("the connection is lost"))


async def test_a_failed_commit_and_reload_leave_no_unstored_decision(
    tmp_path: Path, wallet: wallet_kit.Env
) -> None:
    for p in ("alice", "bob"):
        await wallet_kit.deposit(wallet, p, 10_000)
    # A long decision window: nothing times out while the test looks.
    async with table_host(tmp_path, wallet, windows(800, 200, 20_000, pause=5000)) as env:
        await seat(env, ["alice", "bob"])
        round_id = (await env.wait("alice", betting)).round_id
        await env.bet("alice", ANTE, 500)
        await env.bet("bob", ANTE, 500)
        await env.wait("bob", lambda v: v.phase == "preflop")

        uth: Any = env.uth
        commit, load = uth._commit_parts, uth._load
        fails = {"commit": 1, "load": 2}

        async def failing_commit(*args: Any, **kwargs: Any) -> None:
            if fails["commit"]:
                fails["commit"] -= 1
                raise lost()
            await commit(*args, **kwargs)

        def failing_load(table_id: str) -> Any:
            if fails["load"]:
                fails["load"] -= 1
                raise lost()
            return load(table_id)

        uth._commit_parts, uth._load = failing_commit, failing_load
        with pytest.raises(grpc.aio.AioRpcError):
            await env.decide("bob", round_id, A.CASINO_DECISION_PLAY_4X)

        # The round in memory is the stored one: bob's decision is not in it.
        live = uth.tables[TABLE]
        _, stored_round, _, stored_version, _ = load(TABLE)
        assert len(live.round.history) == len(stored_round.history)
        assert live.version == stored_version
        assert "CasinoDecisionMade" not in env.kinds(round_id)
        assert fails == {"commit": 0, "load": 0}  # the reload was retried

        # Bob decides again; the round goes on from the stored state.
        await env.decide("bob", round_id, A.CASINO_DECISION_PLAY_4X)
        made = [m for m in env.events(round_id) if isinstance(m, cev.CasinoDecisionMade)]
        assert [(m.player_id, m.decision) for m in made] == [("bob", "play_4x")]


async def test_a_table_broken_by_a_cancelled_change_is_repaired_by_its_driver(
    tmp_path: Path, wallet: wallet_kit.Env
) -> None:
    """A change cancelled mid-commit (the caller's deadline passed: the server cancels its
    handler) gets one reload only; when that fails too the table is marked broken. Before
    the fix nothing ever repaired it: the round stayed open with its bets reserved and every
    driver step and call refused (short chaos run in CI: a UTH round left open, its bots
    stuck). Now the table's driver reloads it once the database answers, and play goes on."""
    for p in ("alice", "bob"):
        await wallet_kit.deposit(wallet, p, 10_000)
    # A minute of betting: no clock step of the table's driver meets the hanging commit.
    async with table_host(tmp_path, wallet, windows(60_000, 200, 20_000, pause=5000)) as env:
        await seat(env, ["alice", "bob"])
        round_id = (await env.wait("alice", betting)).round_id
        await env.bet("alice", ANTE, 500)

        uth: Any = env.uth
        commit, load = uth._commit_parts, uth._load
        fails = {"load": 1}

        async def hanging_commit(*args: Any, **kwargs: Any) -> None:
            await asyncio.sleep(30)  # cancelled by the caller's deadline before it ends

        def failing_load(table_id: str) -> Any:
            if fails["load"]:
                fails["load"] -= 1
                raise lost()
            return load(table_id)

        broke: list[str] = []
        mark = uth._broke

        def marked(t: Any, why: str) -> None:
            broke.append(why)
            mark(t, why)

        uth._commit_parts, uth._load, uth._broke = hanging_commit, failing_load, marked
        await bobs_ante_past_its_deadline(env)
        live = uth.tables[TABLE]
        for _ in range(500):  # the server sees the cancel shortly after the client
            if broke:
                break
            await asyncio.sleep(0.01)
        assert fails == {"load": 0} and broke == [
            "round could not be reloaded after a cancelled change"
        ]
        uth._commit_parts = commit

        # Repaired by the driver: the round goes on from its stream (bob's ante is not on
        # it: the change was never stored) and bob's retry is placed.
        await until_whole(live)
        assert uth.tables[TABLE] is live
        await env.bet("bob", ANTE, 500, rid="bob-ante")
        assert_memory_is_stored(live, load)
        placed = [m for m in env.events(round_id) if isinstance(m, cev.CasinoBetPlaced)]
        assert sorted(m.player_id for m in placed) == ["alice", "alice", "bob", "bob"]  # +blinds


async def test_a_change_cancelled_while_its_reload_waits_leaves_nothing_in_memory(
    tmp_path: Path, wallet: wallet_kit.Env
) -> None:
    """The commit failed (the database away) and the reload is retried, backing off; the
    caller's deadline passes during a wait between two reloads. That cancel escaped the
    table's restore: the round in memory kept the unstored bet and play went on from it."""
    for p in ("alice", "bob"):
        await wallet_kit.deposit(wallet, p, 10_000)
    async with table_host(tmp_path, wallet, windows(60_000, 200, 20_000, pause=5000)) as env:
        await seat(env, ["alice", "bob"])
        round_id = (await env.wait("alice", betting)).round_id
        await env.bet("alice", ANTE, 500)

        uth: Any = env.uth
        commit, load = uth._commit_parts, uth._load
        away = [True]

        async def failing_commit(*args: Any, **kwargs: Any) -> None:
            raise lost()

        def failing_load(table_id: str) -> Any:
            if away[0]:
                raise lost()
            return load(table_id)

        uth._commit_parts, uth._load = failing_commit, failing_load
        await bobs_ante_past_its_deadline(env)
        live = uth.tables[TABLE]
        for _ in range(300):  # the server sees the cancel shortly after the client
            if live.broken:
                break
            await asyncio.sleep(0.01)
        assert live.broken  # not whole: its driver re-reads it once the store answers
        uth._commit_parts, away[0] = commit, False

        await until_whole(live)
        assert_memory_is_stored(live, load)  # bob's unstored ante is not in it
        placed = [m for m in env.events(round_id) if isinstance(m, cev.CasinoBetPlaced)]
        assert {m.player_id for m in placed} == {"alice"}
