"""Every event of a live UTH round names what caused it (issue 14 item 7, docs/logging.md):
a player's call → its request id and the call's correlation id; the table's clock (the
round's opening, the close of betting, the deal, a timed-out decision, the settlement) → the
round's own chain (correlation = the round id) after the event it follows (causation = the
last event stored before it; for an opening, the previous round's last event). Before, the
clock's events carried no causation and whatever ids the driver task inherited."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import casino_pb2 as A
from electric_table.journal import casino_stream

from tests.support import wallet_kit
from tests.support.table_casino_kit import UthEnv, betting, seat, table_host, windows

ANTE = A.CASINO_BET_ACTION_ANTE


@pytest.fixture
async def wallet(tmp_path: Path) -> AsyncIterator[wallet_kit.Env]:
    async with wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as w:
        yield w


def envelopes(env: UthEnv, round_id: str) -> list[Envelope]:
    store = env.handlers.store
    with store.engine.connect() as conn:
        return list(store.read_stream(conn, casino_stream(round_id)))


async def settled(env: UthEnv, round_id: str) -> None:
    for _ in range(2000):
        kinds = env.kinds(round_id)
        if "CasinoRoundSettled" in kinds or "CasinoRoundVoided" in kinds:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"round {round_id} never ended: {env.kinds(round_id)}")


async def test_clock_events_follow_the_round_chain_and_calls_keep_their_own(
    tmp_path: Path, wallet: wallet_kit.Env
) -> None:
    await wallet_kit.deposit(wallet, "alice", 10_000)
    async with table_host(tmp_path, wallet, windows(300, 100, 200, pause=200)) as env:
        await seat(env, ["alice"])
        first = (await env.wait("alice", betting)).round_id
        await env.bet("alice", ANTE, 500, rid="bet-request-1")
        await settled(env, first)  # alice never decides: every decision times out
        second = (await env.wait("alice", lambda v: v.round_id not in ("", first))).round_id
        rounds = [envelopes(env, first), envelopes(env, second)]
    ids_before: set[str] = set()
    clock = calls = 0
    for number, stream in enumerate(rounds):
        round_id = (first, second)[number]
        for i, e in enumerate(stream):
            if e.causation_id == "bet-request-1":  # alice's call
                calls += 1
                assert e.correlation_id != round_id
                continue
            clock += 1
            assert e.correlation_id == round_id, (round_id, i, e.event_type)
            if number == 0 and all(not x.causation_id for x in stream[: i + 1]):
                continue  # the opening of the table's very first round follows nothing stored
            # After an event stored before it: on this stream, or (the opening of the next
            # round) the last event of the previous round.
            expected_before = ids_before | {x.event_id for x in stream[:i]}
            assert e.causation_id in expected_before, (round_id, i, e.event_type)
            if i == 0:
                assert e.causation_id == rounds[0][-1].event_id  # the previous round's end
        ids_before |= {x.event_id for x in stream}
    assert calls >= 1 and clock >= 5, (calls, clock)
