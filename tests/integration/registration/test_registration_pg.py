"""Registration on real PostgreSQL (wallet and registration each on their own database, real
gRPC): the 3-entries / unregister / refused-after-fill flow, and many concurrent Register
calls racing for seats (row locks, optimistic appends, partial unique indexes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from electric.registration.v1 import events_pb2 as reg_events
from electric.registration.v1 import registration_pb2
from electric.wallet.v1 import ledger_pb2
from electric_registration.store import tables as t
from sqlalchemy import select

from tests.support.reg_harness import Stack, eventually, fresh_databases, md, running_stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def pg_urls(postgres_url: str) -> Iterator[dict[str, str]]:
    with fresh_databases(postgres_url, "reg_", ("wallet", "registration", "payout")) as urls:
        yield urls


@pytest.fixture
async def stack(tmp_path: Path, pg_urls: dict[str, str]) -> AsyncIterator[Stack]:
    async with running_stack(tmp_path, pg_urls, payout=False) as s:
        yield s


async def test_three_entries_unregister_and_refused_after_fill_pg(stack: Stack) -> None:
    await stack.deposit("alice", 1_000)
    r = await stack.register("alice", entries=3, request_id="alice-1")
    assert len({e.table_id for e in r.entries}) == 3
    again = await stack.register("alice", entries=3, request_id="alice-1")
    assert again.replayed and [e.entry_id for e in again.entries] == [e.entry_id for e in r.entries]
    gone = r.entries[0]
    await stack.reg.Unregister(
        registration_pb2.UnregisterRequest(request_id="u1", table_id=gone.table_id),
        metadata=md("alice"),
    )
    assert (await stack.transfer(gone.wallet_transfer_id)).state == (
        ledger_pb2.TRANSFER_STATE_VOIDED
    )
    b = await stack.balance("alice")
    assert (b.cash, b.reserved) == (800, 200)
    joined = set()
    for p in ("bob", "carol"):
        await stack.deposit(p, 100)
        joined |= {e.table_id for e in (await stack.register(p)).entries}
    # Both went to the same table of Alice's (the most filled first).
    [kept] = [e for e in r.entries if e.table_id in joined]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stack.reg.Unregister(
            registration_pb2.UnregisterRequest(request_id="u2", entry_id=kept.entry_id),
            metadata=md("alice"),
        )
    assert info.value.code() is grpc.StatusCode.FAILED_PRECONDITION
    started = await stack.tournament_started(kept.table_id)
    assert started.prize_pool.cents == started.multiplier * 100
    assert (await stack.transfer(kept.wallet_transfer_id)).state == (
        ledger_pb2.TRANSFER_STATE_POSTED
    )
    assert (await stack.account("house:rake")).posted == 21
    assert (await stack.account("house:prize_reserve")).posted == 279


async def test_concurrent_registrations_never_overfill_pg(stack: Stack) -> None:
    players = [f"p{i:02d}" for i in range(18)]
    await asyncio.gather(*(stack.deposit(p, 500) for p in players))
    # Everyone at once; some buy two entries.
    results = await asyncio.gather(
        *(stack.register(p, entries=2 if i % 3 == 0 else 1) for i, p in enumerate(players))
    )
    seats_sold = sum(len(r.entries) for r in results)
    with stack.engine("registration").connect() as conn:
        rows = conn.execute(
            select(t.entries.c.table_id, t.entries.c.player_id, t.entries.c.seat).where(
                t.entries.c.status != "unregistered"
            )
        ).all()
        tables = {
            r.table_id: r
            for r in conn.execute(
                select(t.tables.c.table_id, t.tables.c.status, t.tables.c.players_registered)
            )
        }
    assert len(rows) == seats_sold
    by_table: dict[str, list[tuple[str, int]]] = {}
    for row in rows:
        by_table.setdefault(row.table_id, []).append((row.player_id, row.seat))
    for table_id, seated in by_table.items():
        assert len(seated) <= 3, f"table {table_id} overfilled: {seated}"
        assert len({p for p, _ in seated}) == len(seated), "a player sits twice at a table"
        assert len({s for _, s in seated}) == len(seated), "two entries in one seat"
        assert tables[table_id].players_registered == len(seated)
    full = [tid for tid, seated in by_table.items() if len(seated) == 3]
    assert full, "some tables filled"
    for tid in full:
        evs = await eventually(lambda tid=tid: _started_once(stack, tid), timeout=20)
        assert sum(isinstance(e, reg_events.TournamentStarted) for e in evs) == 1
        assert sum(isinstance(e, reg_events.TableFilled) for e in evs) == 1
    assert (await stack.account("house:rake")).posted == 7 * 3 * len(full)
    assert (await stack.account("house:prize_reserve")).posted == 93 * 3 * len(full)
    reserved = sum([(await stack.balance(p)).reserved for p in players])
    assert reserved == 100 * (seats_sold - 3 * len(full))


async def _started_once(stack: Stack, table_id: str) -> list[object] | None:
    evs = stack.registration_events(table_id)
    return evs if any(isinstance(e, reg_events.TournamentStarted) for e in evs) else None


async def test_concurrent_retries_of_one_request_reserve_once_pg(stack: Stack) -> None:
    await stack.deposit("fay", 300)
    results = await asyncio.gather(
        *(stack.register("fay", entries=3, request_id="same-pg") for _ in range(4))
    )
    assert len({tuple(e.entry_id for e in r.entries) for r in results}) == 1
    assert sum(not r.replayed for r in results) == 1
    b = await stack.balance("fay")
    assert (b.cash, b.reserved) == (0, 300)
