"""Live UTH rounds with the table service on PostgreSQL (the component tests use SQLite):
a round of three players settles with every reservation resolved, and a real restart in a
decision window resumes the next round, which settles on its own clock."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from electric.table.v1 import casino_events_pb2 as cev
from electric.table.v1 import casino_pb2 as A

from tests.component.table_casino.test_table_casino_uth_batch import one_pass_story
from tests.support import wallet_kit
from tests.support.table_casino_kit import POSTED, VOIDED, UthEnv, md, seat, table_host, windows

pytestmark = pytest.mark.integration

PLAYERS = ["ann", "ben", "cat"]
ANTE = A.CASINO_BET_ACTION_ANTE
DECISION_MS = 2500


async def ended(env: UthEnv, round_id: str, player: str) -> A.CasinoRoundView:
    for _ in range(1500):
        r = (
            await env.casino.GetRound(A.GetRoundRequest(round_id=round_id), metadata=md(player))
        ).round
        if r.status != "open":
            return r
        await asyncio.sleep(0.01)
    raise AssertionError(f"round {round_id} never ended")


async def resolved(env: UthEnv, r: A.CasinoRoundView) -> None:
    outcome = {x.spot: x.outcome for x in r.results}
    for b in r.bets:
        want = POSTED if outcome.get(b.spot) in ("win", "lose") else VOIDED
        for _ in range(500):
            if (await env.transfer(b.bet_id)).state == want:
                break
            await asyncio.sleep(0.01)
        assert (await env.transfer(b.bet_id)).state == want, (b.bet_id, outcome)


async def test_uth_on_postgres_settles_and_resumes_after_a_restart(
    tmp_path: Path, fresh_pg_url: str
) -> None:
    timing = windows(1200, 200, 600, pause=300)
    async with wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as wallet:
        for p in PLAYERS:
            await wallet_kit.deposit(wallet, p, 10_000)
        async with table_host(tmp_path, wallet, timing, fresh_pg_url) as env:
            await seat(env, PLAYERS)
            v = await env.wait("ann", lambda v: v.phase == "betting" and v.light == "green")
            first = v.round_id
            for p in PLAYERS:
                await env.bet(p, ANTE, 500)
            await env.wait("ann", lambda v: v.round_id == first and v.phase == "preflop")
            await asyncio.gather(
                *(env.decide(p, first, A.CASINO_DECISION_PLAY_4X) for p in PLAYERS)
            )
            for p in PLAYERS:
                r = await ended(env, first, p)
                assert r.status == "settled"
                await resolved(env, r)
            settled = [m for m in env.events(first) if isinstance(m, cev.CasinoRoundSettled)]
            assert [x.player_id for x in settled[0].players] == PLAYERS
            v = await env.wait("ann", lambda v: v.round_id != first and v.phase == "betting")
            second = v.round_id
            for p in PLAYERS:
                await env.bet(p, ANTE, 300)
            await env.wait("ann", lambda v: v.round_id == second and v.phase == "preflop")
        # Every window of the second round (pre-flop, flop, river) expires while down.
        await asyncio.sleep(3 * DECISION_MS / 1000 + 1.0)
        async with table_host(tmp_path, wallet, timing, fresh_pg_url) as env:
            for p in PLAYERS:
                r = await ended(env, second, p)
                assert r.status == "settled" and len(r.board) == 5
                assert {x.outcome for x in r.results if x.spot in ("ante", "blind")} == {"lose"}
                await resolved(env, r)
            for p in PLAYERS:
                bal = await wallet_kit.balance(wallet, p)
                assert bal.reserved == 0


async def test_one_pass_of_placements_on_postgres(tmp_path: Path, fresh_pg_url: str) -> None:
    """The group commit's one transaction of several appends, on PostgreSQL."""
    async with wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as wallet:
        await one_pass_story(tmp_path, wallet, fresh_pg_url)
