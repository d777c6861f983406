"""Registration under races and crashes (SQLite, real gRPC): the race for the last seat,
owed wallet work finished after a crash exactly once, abandoned reservations rolled back,
My Tables following the table topic, and WatchMyTables pushing changes."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from electric.registration.v1 import events_pb2 as reg_events
from electric.registration.v1 import registration_pb2
from electric.table.v1 import events_pb2 as table_events
from electric.wallet.v1 import ledger_pb2
from electric_clients.wallet import WalletClient
from electric_eventlog import EventStore
from electric_registration import handlers
from electric_registration.store import tables as t
from electric_registration.wallet_work import WalletWork
from sqlalchemy import func, select, update

from tests.support.auth import token_source
from tests.support.reg_harness import FakeTable, Stack, eventually, finished_event, md


def _started_count(stack: Stack, table_id: str) -> int:
    engine = stack.engine("registration")
    store = EventStore(engine, producer="registration")
    with engine.connect() as conn:
        return sum(
            isinstance(store.decode(e), reg_events.TournamentStarted)
            for e in store.read_stream(conn, f"registration-table-{table_id}")
        )


def _seat_counts(stack: Stack) -> dict[str, list[int]]:
    with stack.engine("registration").connect() as conn:
        rows = conn.execute(
            select(t.entries.c.table_id, t.entries.c.seat).where(
                t.entries.c.status != "unregistered"
            )
        ).all()
    out: dict[str, list[int]] = {}
    for r in rows:
        out.setdefault(r.table_id, []).append(r.seat)
    return out


async def test_race_for_the_last_seat_never_overfills(stack: Stack) -> None:
    for p in ("a", "b", "c", "d", "e", "f"):
        await stack.deposit(p, 1_000)
    first = await stack.register("a")
    await stack.register("b")
    table_id = first.entries[0].table_id
    # Four players race for the one remaining seat.
    results = await asyncio.gather(*(stack.register(p) for p in ("c", "d", "e", "f")))
    winners = [r for r in results if r.entries[0].table_id == table_id]
    assert len(winners) == 1
    seats = _seat_counts(stack)
    assert all(len(s) <= 3 and len(set(s)) == len(s) for s in seats.values())
    assert sorted(seats[table_id]) == [1, 2, 3]
    await eventually(lambda: _async(_started_count(stack, table_id) == 1))
    # The three losers sit together at the next table, which filled too.
    others = {r.entries[0].table_id for r in results if r not in winners}
    assert len(others) == 1


async def _async(value: object) -> object:
    return value


async def test_owed_wallet_work_survives_a_crash_exactly_once(stack: Stack) -> None:
    for p in ("x", "y", "z"):
        await stack.deposit(p, 500)
    engine = stack.engine("registration")
    await stack.register("x")
    await stack.register("y")
    r = await stack.register("z")
    table_id = r.entries[0].table_id
    await eventually(lambda: _async(_started_count(stack, table_id) == 1))
    # Pretend the process died after the wallet calls but before the rows were marked done:
    # every op is pending again and the table is back in "filled".
    with engine.begin() as conn:
        conn.execute(
            update(t.wallet_ops)
            .where(t.wallet_ops.c.table_id == table_id)
            .values(status="pending", done_at=None)
        )
    store = EventStore(engine, producer="registration")
    wallet = WalletClient.connect(
        f"127.0.0.1:{stack.hosts['wallet'].grpc_port}", token_source("registration")
    )
    try:
        work = WalletWork(engine, store, wallet)
        await work.run_pending()
        await work.run_pending()
    finally:
        await wallet.close()
    with engine.connect() as conn:
        pending = conn.execute(
            select(func.count())
            .select_from(t.wallet_ops)
            .where(t.wallet_ops.c.table_id == table_id, t.wallet_ops.c.status == "pending")
        ).scalar_one()
    assert pending == 0
    # Replayed calls moved no money twice, and TournamentStarted is still there once.
    assert (await stack.account("house:rake")).posted == 21
    assert (await stack.account("house:prize_reserve")).posted == 279
    assert (await stack.account("house:tournament_escrow")).posted == 0
    assert _started_count(stack, table_id) == 1


async def test_owed_wallet_work_of_several_tables_runs_concurrently_posts_then_moves(
    stack: Stack,
) -> None:
    # Two filled tables owe their posts and moves again (as after a crash): one pass does
    # both tables at once (issue 16: one call at a time made a burst of fills queue), each
    # table's posts together and then its moves (issue 26 item 5), no move before every
    # post of its table is done, and every transfer exactly once.
    players = [f"c{i}" for i in range(6)]
    for p in players:
        await stack.deposit(p, 500)
    tables: set[str] = set()
    for p in players:
        tables.add((await stack.register(p)).entries[0].table_id)
    assert len(tables) == 2
    for table_id in tables:
        await eventually(lambda t=table_id: _async(_started_count(stack, t) == 1))
    engine = stack.engine("registration")
    with engine.begin() as conn:
        conn.execute(
            update(t.wallet_ops)
            .where(t.wallet_ops.c.table_id.in_(sorted(tables)))
            .values(status="pending", done_at=None)
        )
    store = EventStore(engine, producer="registration")
    wallet = WalletClient.connect(
        f"127.0.0.1:{stack.hosts['wallet'].grpc_port}", token_source("registration")
    )
    try:
        # Staged whatever the database (the default stages on PostgreSQL only).
        work = WalletWork(engine, store, wallet, parallelism=4, staged=True)
        await work.run_pending()
    finally:
        await wallet.close()
    # 6 posts at once would be allowed by the stages; the bound holds them to 4.
    assert work.work.peak_in_flight == 4
    with engine.connect() as conn:
        pending = conn.execute(
            select(func.count()).select_from(t.wallet_ops).where(t.wallet_ops.c.status == "pending")
        ).scalar_one()
        done = conn.execute(
            select(t.wallet_ops.c.table_id, t.wallet_ops.c.kind, t.wallet_ops.c.done_at)
        ).all()
    assert pending == 0
    for table_id in tables:
        posts = [r.done_at for r in done if r.table_id == table_id and r.kind == "post"]
        moves = [r.done_at for r in done if r.table_id == table_id and r.kind == "move"]
        assert (len(posts), len(moves)) == (3, 6)
        assert max(posts) <= min(moves)
    assert (await stack.account("house:rake")).posted == 42
    assert (await stack.account("house:prize_reserve")).posted == 558
    assert (await stack.account("house:tournament_escrow")).posted == 0
    assert all(_started_count(stack, table_id) == 1 for table_id in tables)


async def test_abandoned_reservations_are_rolled_back(stack: Stack) -> None:
    """A crash between the wallet reservations and the seating transaction: the sweeper
    voids every reservation of the attempt; the request may then be retried."""
    await stack.deposit("eve", 500)
    engine = stack.engine("registration")
    attempt = handlers.begin_attempt(
        engine,
        player_id="eve",
        request_id="crash-1",
        tier_id="electric-100",
        entries=2,
        stale_after=timedelta(minutes=2),
    )
    assert isinstance(attempt, handlers.Attempt)
    wallet = WalletClient.connect(
        f"127.0.0.1:{stack.hosts['wallet'].grpc_port}", token_source("registration")
    )
    try:
        # Only the first of two reservations happened before the "crash".
        await wallet.reserve(handlers.buyin_transfer_id(attempt.entry_ids[0]), "eve", 100)
        assert (await stack.balance("eve")).reserved == 100
        store = EventStore(engine, producer="registration")
        await WalletWork(engine, store, wallet, stale_after=timedelta(minutes=2)).sweep()
        assert (await stack.balance("eve")).reserved == 100, "not stale yet: left alone"
        await WalletWork(engine, store, wallet, stale_after=timedelta(0)).sweep()
    finally:
        await wallet.close()
    b = await stack.balance("eve")
    assert (b.cash, b.reserved) == (500, 0)
    voided = await stack.transfer(handlers.buyin_transfer_id(attempt.entry_ids[0]))
    assert voided.state == ledger_pb2.TRANSFER_STATE_VOIDED
    status, number, _ = handlers.attempt_status(engine, attempt.key)
    assert (status, number) == ("failed", 1)
    # The client's retry of the same request id now runs as a new attempt.
    r = await stack.register("eve", entries=2, request_id="crash-1")
    assert len(r.entries) == 2 and not set(attempt.entry_ids) & {e.entry_id for e in r.entries}
    b = await stack.balance("eve")
    assert (b.cash, b.reserved) == (300, 200)


async def test_my_tables_follow_the_table_topic_and_watch_pushes(stack: Stack) -> None:
    for p in ("w1", "w2", "w3"):
        await stack.deposit(p, 500)
    call = stack.reg.WatchMyTables(registration_pb2.WatchMyTablesRequest(), metadata=md("w1"))
    first = await asyncio.wait_for(call.read(), 5)
    assert list(first.tables) == []
    r = await stack.register("w1")
    table_id = r.entries[0].table_id
    snap = await asyncio.wait_for(call.read(), 5)
    assert [(x.table_id, x.status_text) for x in snap.tables] == [(table_id, "Waiting 1/3")]
    # Another player joins: pushed at once (well under the 2 s polling fallback).
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    await stack.register("w2")
    snap = await asyncio.wait_for(call.read(), 5)
    assert snap.tables[0].players_registered == 2 and loop.time() - t0 < 1.5
    await stack.register("w3")

    async def running() -> object:
        s = await asyncio.wait_for(call.read(), 5)
        return s if s.tables[0].status == registration_pb2.TABLE_STATUS_RUNNING else None

    await eventually(running)
    fake = FakeTable(stack.urls["table"], stack.bus)
    try:
        await fake.emit(
            table_id,
            table_events.TableStarted(table_id=table_id),
            table_events.HandStarted(table_id=table_id, hand_number=1, button_seat=1),
            table_events.TableProgress(table_id=table_id, hand_number=1),
            table_events.HandStarted(table_id=table_id, hand_number=2, button_seat=2),
            table_events.TableProgress(table_id=table_id, hand_number=2),
        )

        async def hand_two() -> object:
            s = await asyncio.wait_for(call.read(), 5)
            return s if s.tables[0].current_hand_number == 2 else None

        snap = await eventually(hand_two)
        assert snap.tables[0].status_text == "Hand 2"
        # A redelivered old summary never moves the hand back.
        await fake.redeliver("electric.table.v1.TableProgress")
        await fake.emit(
            table_id,
            finished_event(
                table_id,
                [(1, 1, "w1", "e1", 1, 0), (2, 2, "w2", "e2", 1, 2), (3, 3, "w3", "e3", 1, 2)],
                2,
                200,
                prizes={1: 200},
            ),
        )

        async def final() -> object:
            s = await asyncio.wait_for(call.read(), 5)
            done = s.tables[0] if s.tables else None
            return s if done and done.status == registration_pb2.TABLE_STATUS_FINISHED else None

        # The final snapshot: the table stays listed, finished, with the place and prize.
        last = (await eventually(final)).tables[0]
        assert (last.finishing_place, last.prize.cents, last.status_text) == (
            1,
            200,
            "Finished 1st",
        )
    finally:
        fake.close()
        call.cancel()
    [done] = await stack.my_tables("w1", include_finished=True)
    assert done.status == registration_pb2.TABLE_STATUS_FINISHED
    assert done.current_hand_number == 2
    # The filter: ACTIVE leaves it out, FINISHED lists it.
    for chosen, expected in (
        (registration_pb2.MY_TABLES_FILTER_ACTIVE, []),
        (registration_pb2.MY_TABLES_FILTER_FINISHED, [table_id]),
    ):
        listed = await stack.reg.ListMyTables(
            registration_pb2.ListMyTablesRequest(status_filter=chosen), metadata=md("w1")
        )
        assert [t.table_id for t in listed.tables] == expected
