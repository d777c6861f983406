"""Table ownership by partition and fencing (issue 17 items 1-2), on SQLite and PostgreSQL:
two table-service instances (managers) on one store; the partition moves from A to B while
A is paused (no revocation reaches A); A's next write is fenced and stores nothing."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest
from aiokafka.partitioner import DefaultPartitioner
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import events_pb2 as registration_events
from electric_domain.tournament import DealHand, Tick
from electric_eventlog import EventStore, migrate, upgrade
from electric_eventlog.fencing import FencedError, current
from electric_table.host import ownership as ownership_module
from electric_table.host.ownership import (
    PARTITIONS,
    SINGLE,
    PartitionOwnership,
    ownership_mode,
    partition_for,
    start_key,
)
from electric_table.journal import table_stream
from electric_table.refusals import TableMoved
from electric_table.store.tables import VERSIONS_DIR, metadata
from electric_table.tournament.consumers import on_table_filled, start_table
from electric_table.tournament.handlers import TableHandlers
from electric_table.tournament.ownership import TournamentOwnership
from electric_table.tournament.runtime import TableManager
from sqlalchemy import Engine

from tests.support.table_kit import registration_messages

PARTS = 6


def test_a_table_maps_to_the_partition_kafka_puts_its_starting_events_on() -> None:
    all_partitions = list(range(PARTS))
    for n in range(200):
        table_id = f"t-{n}"
        expected = DefaultPartitioner()(start_key(table_id), all_partitions, all_partitions)
        assert partition_for(table_id, PARTS) == expected
    assert len({partition_for(f"t-{n}", PARTS) for n in range(200)}) == PARTS
    assert ownership_mode({}) == SINGLE
    assert ownership_mode({"ELECTRIC_TABLE_OWNERSHIP": "Partitions"}) == PARTITIONS
    with pytest.raises(ValueError):
        ownership_mode({"ELECTRIC_TABLE_OWNERSHIP": "leader"})


def _create_table(engine: Engine, store: EventStore, table_id: str) -> None:
    messages, _ = registration_messages(table_id, ["ann", "ben", "cat"])
    with engine.begin() as conn:
        for message in messages:
            envelope = Envelope.FromString(message.value)
            payload = store.decode(envelope)
            if isinstance(payload, registration_events.TableFilled):
                on_table_filled(conn, envelope, payload)
            else:
                assert isinstance(payload, registration_events.TournamentStarted)
                start_table(store, conn, envelope, payload)


def _migrate(engine: Engine) -> None:
    migrate(engine)
    upgrade(
        engine,
        versions_dir=VERSIONS_DIR,
        version_table="alembic_version_table",
        target_metadata=metadata,
    )


class Instance:
    def __init__(self, engine: Engine, name: str, stopping: asyncio.Event) -> None:
        self.store = EventStore(engine, producer="table")
        self.manager = TableManager(engine, self.store, stopping=stopping)
        self.handlers = TableHandlers(self.manager, hand_pause_ms=0)
        self.ownership = PartitionOwnership(engine, owner=name, partitions=PARTS)
        self.tournaments = TournamentOwnership(self.manager, self.ownership)

    async def deal(self, table_id: str) -> None:
        rt = self.manager.tables[table_id]
        async with rt.lock:
            now = self.manager.now_for(rt)
            await self.handlers.apply(rt, DealHand(now, os.urandom(32), ()))

    async def time_out(self, table_id: str) -> None:
        """A minute later: the player to act timed out (events to store)."""
        rt = self.manager.tables[table_id]
        async with rt.lock:
            await self.handlers.apply(rt, Tick(self.manager.now_for(rt) + 60_000))


async def _scenario(engine: Engine) -> None:
    stopping = asyncio.Event()
    a, b = Instance(engine, "instance-a", stopping), Instance(engine, "instance-b", stopping)
    table_id = "fenced-1"
    _create_table(engine, a.store, table_id)
    part = partition_for(table_id, PARTS)
    others = [p for p in range(PARTS) if p != part]

    assert await a.ownership.on_assigned(others) == 0  # not A's partition: not loaded
    assert await a.manager.load(table_id) is None  # and not loadable (another's table)
    assert await a.ownership.on_assigned([part]) == 1
    rt_a = a.manager.tables[table_id]
    assert rt_a.fence is not None and rt_a.fence.epoch == 1
    await a.deal(table_id)  # the owner writes
    with engine.connect() as conn:
        before = a.store.read_stream(conn, table_stream(table_id))
    assert len(before) > rt_a.fence.epoch and before[-1].stream_version == rt_a.version

    # A is paused; the group gives A's partition to B (A never hears of it).
    assert await b.ownership.on_assigned([part]) == 1
    rt_b = b.manager.tables[table_id]
    assert rt_b.fence is not None and rt_b.fence.epoch == 2
    assert rt_b.version == rt_a.version  # B rebuilt everything A stored

    # A resumes and tries to write: fenced, nothing stored, A stops driving the table.
    with pytest.raises(TableMoved, match="moved to another instance"):
        await a.time_out(table_id)
    await asyncio.sleep(0.05)  # disown_soon runs
    assert table_id not in a.manager.tables
    with engine.connect() as conn:
        after = a.store.read_stream(conn, table_stream(table_id))
        assert current(conn, table_stream(table_id)) == (2, "instance-b")
    assert [e.event_id for e in after] == [e.event_id for e in before]

    # A, still believing the partition is its own (no revocation reached it), is asked for
    # the table again (a retried Act): it must not take the table back. Before issue 28's
    # fix it did (the load took epoch 3), and went on writing for a table it did not own.
    assert await a.manager.load(table_id) is None
    assert not a.tournaments.owns(table_id) and part in a.ownership.lost
    assert await a.ownership.sweep() == 0  # nor does its sweep
    with engine.connect() as conn:
        assert current(conn, table_stream(table_id)) == (2, "instance-b")

    # B carries on; revoking B's partition stops it there.
    await b.time_out(table_id)
    with engine.connect() as conn:
        assert len(b.store.read_stream(conn, table_stream(table_id))) > len(before)
    assert await b.ownership.on_revoked([part]) == 1
    assert table_id not in b.manager.tables
    stopping.set()
    await a.manager.close()
    await b.manager.close()


def test_a_paused_owner_cannot_write_after_its_partition_moved(backend_engine: Engine) -> None:
    _migrate(backend_engine)
    asyncio.run(_scenario(backend_engine))


async def _fenced_from_the_assignment(engine: Engine) -> None:
    """The epoch moves when the partition moves: B's assignment alone (B has not loaded nor
    written the table: its load is slow) already fences A's writes, and A cannot take the
    table back."""
    stopping = asyncio.Event()
    a, b = Instance(engine, "instance-a", stopping), Instance(engine, "instance-b", stopping)
    table_id = "fenced-2"
    _create_table(engine, a.store, table_id)
    part = partition_for(table_id, PARTS)
    assert await a.ownership.on_assigned([part]) == 1
    await a.deal(table_id)
    with engine.connect() as conn:
        before = [e.event_id for e in a.store.read_stream(conn, table_stream(table_id))]

    async def slow_load(tid: str) -> None:  # B's rebuild has not happened yet
        return None

    b.manager.load = slow_load  # type: ignore[method-assign]
    b.ownership.generation = a.ownership.generation = None
    assert await b.ownership.on_assigned([part]) == 0
    assert b.ownership.holds_partition(part) and table_id not in b.manager.tables
    rt_a = a.manager.tables[table_id]
    with pytest.raises(TableMoved, match="moved to another instance"):
        await a.time_out(table_id)
    # A's revocation arrives before its disown ran: the fenced runtime is suspended.
    await a.ownership.on_revoked([part])
    assert a.tournaments.suspended[table_id][0] is rt_a
    with engine.connect() as conn:
        after = [e.event_id for e in a.store.read_stream(conn, table_stream(table_id))]
        assert current(conn, table_stream(table_id)) == (1, "instance-a")  # nobody took it
    assert after == before
    # The partition comes back to A (B's revoked), the table's own epoch unchanged: A's
    # aggregate holds the timeout that is on no stream, so it is rebuilt from its events,
    # never resumed as it is (the resume's epoch test alone would have kept it).
    await b.ownership.on_revoked([part])
    assert await a.ownership.on_assigned([part]) == 1
    fresh = a.manager.tables[table_id]
    assert fresh is not rt_a and a.tournaments.kept == 0
    with engine.connect() as conn:
        assert fresh.version == len(a.store.read_stream(conn, table_stream(table_id)))
    stopping.set()
    await a.manager.close()
    await b.manager.close()


def test_the_epoch_moves_with_the_assignment_not_the_new_owners_first_write(
    backend_engine: Engine,
) -> None:
    _migrate(backend_engine)
    asyncio.run(_fenced_from_the_assignment(backend_engine))


async def _stale_generation(engine: Engine) -> None:
    """An assignment callback of an older group generation (its instance was paused inside
    the rebalance) takes nothing from the newer one; once the coordinator confirms a
    generation (the group was deleted and its generations restarted), it is taken."""
    stopping = asyncio.Event()
    a, b = Instance(engine, "instance-a", stopping), Instance(engine, "instance-b", stopping)
    table_id = "generation-1"
    _create_table(engine, a.store, table_id)
    part = partition_for(table_id, PARTS)
    b.ownership.generation = 8
    assert await b.ownership.on_assigned([part]) == 1
    a.ownership.generation = 7  # A's late callback, of the generation before
    assert await a.ownership.on_assigned([part]) == 0
    assert a.ownership.refused == {part: 7} and not a.tournaments.owns(table_id)
    with engine.connect() as conn:
        assert current(conn, table_stream(table_id)) == (1, "instance-b")
    await b.time_out(table_id)  # B is not fenced
    answers = [False, True]

    async def verify() -> bool:
        return answers.pop(0)

    a.ownership.verify_generation = verify
    await a.ownership.sweep()  # not confirmed: still refused
    assert a.ownership.refused == {part: 7}
    assert await a.ownership.sweep() == 1  # confirmed current: taken, table loaded
    assert a.ownership.refused == {} and a.tournaments.owns(table_id)
    fence_b = b.manager.tables[table_id].fence
    assert fence_b is not None
    with pytest.raises(FencedError), engine.begin() as conn:  # B's writes are fenced now
        fence_b.check(conn)
    stopping.set()
    await a.manager.close()
    await b.manager.close()


def test_a_late_assignment_of_an_older_generation_takes_nothing(backend_engine: Engine) -> None:
    _migrate(backend_engine)
    asyncio.run(_stale_generation(backend_engine))


def test_the_rebalance_listener_passes_only_the_registration_partitions() -> None:
    from aiokafka import TopicPartition
    from electric_table.host.ownership import OwnershipListener

    calls: list[tuple[str, list[int]]] = []

    class Recorder:
        async def on_assigned(self, partitions: list[int]) -> int:
            calls.append(("assigned", list(partitions)))
            return 0

        async def on_revoked(self, partitions: list[int]) -> int:
            calls.append(("revoked", list(partitions)))
            return 0

    topic = "ns.electric.registration.events"
    listener = OwnershipListener(Recorder(), topic)  # type: ignore[arg-type]
    tps = [TopicPartition(topic, 3), TopicPartition("other", 1), TopicPartition(topic, 0)]
    asyncio.run(listener.on_partitions_assigned(tps))
    asyncio.run(listener.on_partitions_revoked(tps[:2]))
    assert calls == [("assigned", [0, 3]), ("revoked", [3])]


async def _assignment_while_the_database_is_away(engine: Engine) -> None:
    stopping = asyncio.Event()
    inst = Instance(engine, "instance-a", stopping)
    table_id = "owed-1"
    _create_table(engine, inst.store, table_id)
    part = partition_for(table_id, PARTS)
    # Its first owner took it (a fence row: the sweep of untaken tables skips it) and died.
    gone = Instance(engine, "instance-gone", stopping)
    assert await gone.ownership.on_assigned([part]) == 1
    await gone.manager.disown(table_id)
    real_load = inst.manager.load
    failing = {"n": 2}

    async def flaky_load(tid: str) -> object:
        if failing["n"] > 0:
            failing["n"] -= 1
            raise OSError("connection refused")
        return await real_load(tid)

    inst.manager.load = flaky_load  # type: ignore[method-assign]
    assert await inst.ownership.on_assigned([part]) == 0  # did not raise into the group
    assert inst.tournaments.unloaded == {part} and table_id not in inst.manager.tables
    assert await inst.ownership.sweep() == 0  # still away: still owed
    assert inst.tournaments.unloaded == {part}
    assert await inst.ownership.sweep() == 1  # back: the owed partition is loaded
    assert inst.tournaments.unloaded == set() and table_id in inst.manager.tables
    assert await inst.ownership.on_revoked([part]) == 1
    stopping.set()
    await inst.manager.close()


def test_an_assignment_the_database_failed_is_finished_by_the_sweep(
    backend_engine: Engine,
) -> None:
    _migrate(backend_engine)
    asyncio.run(_assignment_while_the_database_is_away(backend_engine))


async def _kept_across_rebalances(engine: Engine) -> None:
    stopping = asyncio.Event()
    a, b = Instance(engine, "instance-a", stopping), Instance(engine, "instance-b", stopping)
    table_id = "kept-1"
    _create_table(engine, a.store, table_id)
    part = partition_for(table_id, PARTS)
    everything = list(range(PARTS))
    rebuilds = {"n": 0}
    real_rebuild = a.manager.rebuild

    def counted_rebuild(tid: str) -> object:
        rebuilds["n"] += 1
        return real_rebuild(tid)

    a.manager.rebuild = counted_rebuild  # type: ignore[method-assign]
    # A stand-in driver (the real one would play the table on its own): a task per table.
    a.manager.start_driver = lambda rt: asyncio.create_task(asyncio.sleep(3600))
    assert await a.ownership.on_assigned(everything) == 1
    rt = a.manager.tables[table_id]
    first_driver = rt.task
    assert first_driver is not None
    await a.deal(table_id)
    assert rebuilds["n"] == 1 and rt.fence is not None and rt.fence.epoch == 1

    # 1. An eager rebalance that gives the partition back: the same runtime goes on, under
    #    the next epoch, without a rebuild, and its watchers are not interrupted.
    watching = rt.changed
    assert await a.ownership.on_revoked(everything) == 1
    assert table_id not in a.manager.tables and rt.task is None  # not driven meanwhile
    assert first_driver.cancelled()
    assert not watching.is_set()
    assert await a.ownership.on_assigned(everything) == 0  # nothing rebuilt...
    assert a.manager.tables[table_id] is rt and a.tournaments.kept == 1  # ...it was kept
    assert rt.fence.epoch == 2 and rebuilds["n"] == 1 and not watching.is_set()
    assert rt.task is not None and not rt.task.done()  # driven again
    await a.time_out(table_id)  # and it writes under the new epoch

    # 2. The partition went to B, which wrote, and came back: A's kept runtime is stale
    #    (the epoch moved on), so it is dropped (watchers told) and rebuilt from the events.
    assert await a.ownership.on_revoked(everything) == 1
    assert await b.ownership.on_assigned([part]) == 1
    await b.time_out(table_id)
    stored = b.manager.tables[table_id].version
    assert await b.ownership.on_revoked([part]) == 1
    assert await b.ownership.on_assigned([]) == 0
    assert await a.ownership.on_assigned(everything) == 1
    fresh = a.manager.tables[table_id]
    assert fresh is not rt and fresh.version == stored and rebuilds["n"] == 2
    assert watching.is_set() and a.tournaments.kept == 1

    # 3. A write committed that the runtime never applied (its driver was cancelled
    #    mid-write): the stream is ahead, so it is rebuilt rather than resumed.
    assert await a.ownership.on_revoked(everything) == 1
    fresh.version -= 1
    assert await a.ownership.on_assigned(everything) == 1
    assert a.manager.tables[table_id] is not fresh and rebuilds["n"] == 3

    # 4. Revoked and not given back: dropped at the assignment, watchers told.
    watching = a.manager.tables[table_id].changed
    assert await a.ownership.on_revoked(everything) == 1
    assert await a.ownership.on_assigned([p for p in everything if p != part]) == 0
    assert table_id not in a.tournaments.suspended and watching.is_set()
    assert table_id not in a.manager.tables

    # 5. Revoked and no assignment at all (the member left): the sweep drops it after the
    #    grace, not before.
    assert await a.ownership.on_assigned([part]) == 1
    watching = a.manager.tables[table_id].changed
    assert await a.ownership.on_revoked(everything) == 1
    await a.ownership.sweep()
    assert table_id in a.tournaments.suspended and not watching.is_set()
    ownership_module.SUSPEND_GRACE_S = 0.0
    try:
        await a.ownership.sweep()
    finally:
        ownership_module.SUSPEND_GRACE_S = 10.0
    assert table_id not in a.tournaments.suspended and watching.is_set()
    stopping.set()
    await a.manager.close()
    await b.manager.close()


def test_tables_are_kept_across_an_eager_rebalance_unless_they_moved(
    backend_engine: Engine,
) -> None:
    _migrate(backend_engine)
    asyncio.run(_kept_across_rebalances(backend_engine))


async def _load_in_the_resume_window(engine: Engine) -> None:
    """A rebalance gives a suspended table back, and a call loads the table in the window
    between the partition's scope being taken and the settle of its suspended runtime. The
    load takes no epoch and loads nothing (calls answer UNAVAILABLE meanwhile: ``serves``),
    and the suspended runtime is resumed under the next epoch: ONE runtime, driven, writing.
    Before the fix the load took epoch 2 and the resume epoch 3 over it, refused itself
    (the epoch had moved) and left the copy hosted under a stale epoch, fenced at its next
    write. A load installing over a resumed runtime without stopping it, the older form of
    this race, left a stale driver fenced at every step (chaos run, seed 18, epochs 2 → 8)."""
    stopping = asyncio.Event()
    inst = Instance(engine, "instance-a", stopping)
    forever = asyncio.Event()
    inst.manager.start_driver = lambda rt: asyncio.create_task(forever.wait())
    table_id = "raced-1"
    _create_table(engine, inst.store, table_id)
    part = partition_for(table_id, PARTS)
    assert await inst.ownership.on_assigned([part]) == 1
    await inst.deal(table_id)
    assert await inst.ownership.on_revoked([part]) == 1  # suspended, epoch 1
    old = inst.tournaments.suspended[table_id][0]

    in_the_window: list[object] = []
    take_scopes = inst.ownership._take_scopes

    async def take_then_a_call_loads(partitions: object, *, force: bool = False) -> None:
        await take_scopes(partitions, force=force)  # type: ignore[arg-type]
        in_the_window.append(inst.tournaments.serves(table_id))
        in_the_window.append(await inst.manager.load(table_id))

    inst.ownership._take_scopes = take_then_a_call_loads  # type: ignore[method-assign]
    assert await inst.ownership.on_assigned([part]) == 0  # resumed, not rebuilt
    assert in_the_window == [False, None]
    held = inst.manager.tables[table_id]
    assert held is old and inst.tournaments.kept == 1 and inst.tournaments.serves(table_id)
    assert held.fence is not None and held.fence.epoch == 2
    with engine.connect() as conn:
        assert current(conn, table_stream(table_id))[0] == 2
    assert held.task is not None and not held.task.done()
    await inst.time_out(table_id)  # it writes under the epoch it holds
    forever.set()
    stopping.set()
    await inst.manager.close()


def test_a_load_in_the_resume_window_leaves_one_runtime(backend_engine: Engine) -> None:
    _migrate(backend_engine)
    asyncio.run(_load_in_the_resume_window(backend_engine))


async def _play_until_a_hand_is_stored(inst: Instance, table_id: str) -> None:
    """Drive the table like its driver would (a deal when none is running, else a minute
    passes: the player to act times out) until the stream holds a HandStarted."""
    for _ in range(40):
        rt = inst.manager.tables[table_id]
        with inst.manager.engine.connect() as conn:
            stored = inst.store.read_stream(conn, table_stream(table_id))
        if any(e.event_type.endswith(".HandStarted") for e in stored):
            return
        if rt.tournament.awaiting_deal():
            await inst.deal(table_id)
        else:
            await inst.time_out(table_id)
    raise AssertionError("no hand was stored")


async def _write_cut_off_by_the_revocation(engine: Engine, *, served: bool) -> None:
    """The table's driver is cancelled in the middle of a write whose transaction never runs
    (under load, still queued for a worker thread: cancelled with the driver) — by the
    revocation of an eager rebalance (``served`` False: the kill -9 of another instance),
    or, the runtime still served, by the end of the call that wrote (a client's deadline).
    The aggregate had applied the deal; the stream has none of it. The runtime must not go
    on as it is: resumed (or served) with memory ahead of the log, its next writes passed
    the expected-version check and the stream skipped a hand (failover e2e: "hand numbers
    not consecutive")."""
    from concurrent.futures import ThreadPoolExecutor

    from tests.support.table_kit import check_stream, decode_stream

    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=1))  # a busy machine, in small
    stopping = asyncio.Event()
    inst = Instance(engine, "instance-a", stopping)
    forever = asyncio.Event()
    inst.manager.start_driver = lambda rt: asyncio.create_task(forever.wait())
    table_id = "cut-off-1"
    _create_table(engine, inst.store, table_id)
    part = partition_for(table_id, PARTS)
    assert await inst.ownership.on_assigned([part]) == 1
    rt = inst.manager.tables[table_id]
    before = rt.version

    gate = threading.Event()
    busy = loop.run_in_executor(None, gate.wait)  # the only worker thread is busy
    try:
        dealing = asyncio.create_task(inst.deal(table_id))
        if not served:  # the driver deals
            assert rt.task is not None
            rt.task.cancel()
            rt.task = dealing
        await asyncio.sleep(0.05)  # dealt in memory; its transaction waits for a thread
        assert rt.tournament.state.hand_no == 1 and rt.version == before
        if served:
            dealing.cancel()  # the call that dealt ended (the runtime stays served)
            await asyncio.sleep(0.05)  # (its queued transaction is cancelled with it)
        else:
            assert await inst.ownership.on_revoked([part]) == 1  # cancels the write
            assert dealing.cancelled()
    finally:
        gate.set()
    await busy
    with pytest.raises(asyncio.CancelledError):
        await dealing
    with engine.connect() as conn:
        assert inst.store.current_version(conn, table_stream(table_id)) == before  # nothing
    if not served:
        await inst.ownership.on_assigned([part])  # the partition comes back
    await _play_until_a_hand_is_stored(inst, table_id)
    with engine.connect() as conn:
        envelopes = inst.store.read_stream(conn, table_stream(table_id))
    check_stream(decode_stream(envelopes), envelopes)  # hand 1 first, versions contiguous
    assert inst.manager.tables[table_id].tournament.state.hand_no == 1
    if not served:
        assert inst.tournaments.kept == 0  # rebuilt from the stream, not resumed as it was
    forever.set()
    stopping.set()
    await inst.manager.close()


def test_a_write_cut_off_by_a_revocation_is_never_resumed_from_memory(
    backend_engine: Engine,
) -> None:
    _migrate(backend_engine)
    asyncio.run(_write_cut_off_by_the_revocation(backend_engine, served=False))


def test_a_write_cut_off_by_its_call_ending_is_not_built_on(backend_engine: Engine) -> None:
    _migrate(backend_engine)
    asyncio.run(_write_cut_off_by_the_revocation(backend_engine, served=True))
