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

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from electric.table.v1 import casino_events_pb2 as cev
from electric.table.v1 import casino_pb2 as A
from sqlalchemy.exc import OperationalError

from tests.support import wallet_kit
from tests.support.table_casino_kit import TABLE, betting, seat, table_host, windows

ANTE = A.CASINO_BET_ACTION_ANTE


@pytest.fixture
async def wallet(tmp_path: Path) -> AsyncIterator[wallet_kit.Env]:
    async with wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as w:
        yield w


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
