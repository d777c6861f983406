"""Live UTH tables across rebalances under partition ownership (issue 28 item 4), on SQLite
and PostgreSQL, with a real wallet service: a table given back to its own instance goes on
as it is (and no second copy of it is loaded while it waits to be resumed; one dropped
while suspended is loaded anew), and a round in progress goes on after its table moved."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from electric_eventlog import EventStore
from electric_eventlog.fencing import current
from electric_table.casino import repo
from electric_table.casino.uth.ownership import uth_partition, uth_resource
from electric_table.casino.uth.tables import UthTables
from electric_table.journal import casino_stream
from electric_table.refusals import TryAgain
from sqlalchemy import Engine

from tests.support import wallet_kit
from tests.support.backends import Backend
from tests.support.uth_ownership_kit import (
    NOW,
    PARTS,
    PLAYERS,
    TABLE,
    instance,
    run_scenario,
    stored,
)


async def _kept_scenario(engine: Engine, wallet: wallet_kit.Env) -> None:
    """A rebalance that gives the partition back (Kafka's eager protocol revokes every
    partition, then assigns): the UTH table is the same object afterwards, never dropped, so
    its watchers see no error; its round goes on (a bet placed during the rebalance is
    refused UNAVAILABLE, its retry after it is placed); its epoch moved on (issue 28 item 4).
    Before, every rebalance dropped the table and ended its watchers."""
    stopping = asyncio.Event()
    with engine.begin() as conn:
        for seat, player in enumerate(PLAYERS, start=1):
            repo.take_seat(conn, TABLE, player, "uth", seat, f"s-{player}")
    part = uth_partition(TABLE, PARTS)
    everything = set(range(PARTS))
    async with instance(engine, "instance-a", wallet.target, stopping) as a:
        await a.ownership.on_assigned(everything)
        t = a.uth.tables[TABLE]
        async with t.lock:
            await a.uth.open_next(t, PLAYERS, NOW)
        assert t.book is not None
        round_id = t.book.round_id
        await a.uth.place("ann", TABLE, "ante", 500, "r-ann")
        watching = t.changed
        assert t.fence is not None
        epoch = t.fence.epoch

        await a.ownership.on_revoked(everything)
        assert t.suspended and not t.disowned and TABLE not in a.uth.tables
        with pytest.raises(TryAgain):  # during the rebalance: retry
            await a.uth.place("ben", TABLE, "ante", 700, "r-ben")
        await a.ownership.on_assigned(everything)
        assert a.uth.tables[TABLE] is t and a.uth_ownership.kept == 1
        assert not t.suspended and not t.disowned and watching.is_set()  # woken, not ended
        assert t.fence is not None and t.fence.epoch == epoch + 1
        assert t.book is not None and t.book.round_id == round_id  # the same round
        await a.uth.place("ben", TABLE, "ante", 700, "r-ben")  # the retry is placed
        assert stored(engine, round_id)[1] == ["ann", "ben"]

        # Revoked and the next assignment goes without the partition: dropped, watchers told.
        await a.ownership.on_revoked(everything)
        await a.ownership.on_assigned(everything - {part})
        assert t.disowned and TABLE not in a.uth.tables
        stopping.set()


def test_a_uth_table_given_back_by_a_rebalance_goes_on_as_it_is(
    backend: Backend, tmp_path: Path
) -> None:
    run_scenario(backend.url, tmp_path, _kept_scenario, PLAYERS)


async def _moved_round_scenario(engine: Engine, wallet: wallet_kit.Env) -> None:
    """A round in progress survives its table moving (issue 28 item 4): A hosts the round,
    ann bets; the partition goes to B mid-round. B rebuilds the same round from its stream:
    the same bets, the same betting and decision deadlines (facts of the round's log, not of
    A's memory); B plays it on, tick by tick, to its settlement, and ann's ante is settled."""
    stopping = asyncio.Event()
    with engine.begin() as conn:
        repo.take_seat(conn, TABLE, "ann", "uth", 1, "s-ann")
    part = uth_partition(TABLE, PARTS)
    async with (
        instance(engine, "instance-a", wallet.target, stopping) as a,
        instance(engine, "instance-b", wallet.target, stopping) as b,
    ):
        await a.ownership.on_assigned([part])
        t_a = a.uth.tables[TABLE]
        async with t_a.lock:
            await a.uth.open_next(t_a, ["ann"], NOW)
        assert t_a.book is not None and t_a.round is not None
        round_id = t_a.book.round_id
        await a.uth.place("ann", TABLE, "ante", 500, "r-ann")
        wakeups_a = (t_a.round.state.yellow_at, t_a.round.state.close_at)

        await a.ownership.on_revoked([part])  # the rebalance moves the table to B
        await b.ownership.on_assigned([part])
        await a.ownership.on_assigned([])  # A's assignment without it: A's copy dropped
        assert t_a.disowned
        t_b = b.uth.tables[TABLE]
        assert t_b.book is not None and t_b.round is not None and t_b.book.round_id == round_id
        assert (t_b.round.state.yellow_at, t_b.round.state.close_at) == wakeups_a
        assert stored(engine, round_id)[1] == ["ann"]
        for _ in range(20):  # B's clock: every window to its deadline (ann never decides)
            wake = t_b.round.next_wakeup_at()
            if wake is None:
                break
            async with t_b.lock:
                await b.uth._tick(t_b, wake)
        assert t_b.round.finished
        store = EventStore(engine, producer="probe")
        with engine.connect() as conn:
            kinds = [
                type(store.decode(e)).__name__
                for e in store.read_stream(conn, casino_stream(round_id))
            ]
            row = repo.get_round(conn, round_id)
        assert "CasinoRoundSettled" in kinds and row is not None and row.status == repo.SETTLED
        stopping.set()


def test_a_uth_round_in_progress_goes_on_after_its_table_moved(
    backend: Backend, tmp_path: Path
) -> None:
    run_scenario(backend.url, tmp_path, _moved_round_scenario, ["ann"])


class _CallInTheWindow:
    """A follower told of the assignment before the UTH tables are (as a bot's call that
    waited in the router while the table was suspended, or ``casino-uth-tables``, runs the
    moment the partition's scope is held): it asks for the table there."""

    def __init__(self, uth: UthTables) -> None:
        self.uth = uth
        self.answers: list[str] = []

    async def on_assigned(self, partitions: set[int]) -> int:
        try:
            got = await self.uth.table(TABLE)
            self.answers.append("served" if not got.suspended else "suspended")
        except TryAgain:
            self.answers.append("unavailable")
        return 0

    async def on_revoked(self, partitions: set[int]) -> int:
        return 0

    async def sweep(self) -> None:
        return None


async def _resume_race_scenario(engine: Engine, wallet: wallet_kit.Env) -> None:
    """A rebalance gives uth-1's partition back mid-round; a call for the table arrives
    after the partition's scope is taken but before the suspended table is settled (chaos
    run, two table instances: uth-1's round stayed open through the whole drain). Before
    the fix that call loaded a second copy of the table (epoch 2), the resume of the
    suspended one then took epoch 3 over it and dropped itself: the copy kept hosting the
    table under a stale epoch, its next write was fenced and the table marked lost here —
    driven nowhere, the open round and its reservations never settled. Now the suspended
    table is the only copy until the settle decides: the call is refused (UNAVAILABLE,
    retry), the table goes on as it was under the epoch it holds."""
    stopping = asyncio.Event()
    with engine.begin() as conn:
        for seat, player in enumerate(PLAYERS, start=1):
            repo.take_seat(conn, TABLE, player, "uth", seat, f"s-{player}")
    part = uth_partition(TABLE, PARTS)
    async with instance(engine, "instance-a", wallet.target, stopping) as a:
        await a.ownership.on_assigned([part])
        t = a.uth.tables[TABLE]
        async with t.lock:
            await a.uth.open_next(t, PLAYERS, NOW)
        assert t.book is not None
        round_id = t.book.round_id
        await a.uth.place("ann", TABLE, "ante", 500, "r-ann")

        caller = _CallInTheWindow(a.uth)
        a.ownership.followers.insert(0, caller)
        await a.ownership.on_revoked([part])
        await a.ownership.on_assigned([part])
        hosted = a.uth.tables[TABLE]
        with engine.connect() as conn:
            held = current(conn, uth_resource(TABLE))
        # The hosted copy holds the table's current epoch: its writes are not fenced (before
        # the fix: a copy under epoch 2, the store at 3 — "moved to another instance").
        assert hosted.fence is not None and held == (hosted.fence.epoch, "instance-a")
        await a.uth.place("ben", TABLE, "ante", 700, "r-ben")
        assert TABLE not in a.uth.lost and TABLE in a.uth.tables
        assert stored(engine, round_id)[1] == ["ann", "ben"]
        # The call was answered UNAVAILABLE (retry); the suspended table went on as it was.
        assert caller.answers == ["unavailable"]
        assert hosted is t and not t.suspended and not t.disowned and a.uth_ownership.kept == 1
        stopping.set()


def test_a_call_during_the_rebalance_loads_no_second_copy_of_a_suspended_uth_table(
    backend: Backend, tmp_path: Path
) -> None:
    run_scenario(backend.url, tmp_path, _resume_race_scenario, PLAYERS)


async def _disowned_while_suspended_scenario(engine: Engine, wallet: wallet_kit.Env) -> None:
    """A suspended table dropped meanwhile (a command of it in flight through the
    revocation was fenced when the assignment took the partition's scope anew, or its load
    was refused by the revocation) is not resumed: before the fix the assignment put it
    back as it was, disowned — hosted, so never loaded again, yet its driver stopped at once
    and every call answered "moved to another instance" until the partition moved away. Now
    the assignment drops it and hosts a fresh copy, which goes on with the round."""
    stopping = asyncio.Event()
    with engine.begin() as conn:
        for seat, player in enumerate(PLAYERS, start=1):
            repo.take_seat(conn, TABLE, player, "uth", seat, f"s-{player}")
    part = uth_partition(TABLE, PARTS)
    async with instance(engine, "instance-a", wallet.target, stopping) as a:
        await a.ownership.on_assigned([part])
        t = a.uth.tables[TABLE]
        async with t.lock:
            await a.uth.open_next(t, PLAYERS, NOW)
        assert t.book is not None
        round_id = t.book.round_id
        await a.uth.place("ann", TABLE, "ante", 500, "r-ann")

        await a.ownership.on_revoked([part])
        a.uth.moved(t)  # its write in flight was fenced while it was suspended
        assert t.disowned and TABLE not in a.uth.lost
        await a.ownership.on_assigned([part])
        hosted = a.uth.tables[TABLE]
        assert hosted is not t and not hosted.disowned and not hosted.suspended
        assert hosted.book is not None and hosted.book.round_id == round_id
        await a.uth.place("ben", TABLE, "ante", 700, "r-ben")
        assert stored(engine, round_id)[1] == ["ann", "ben"]
        stopping.set()


def test_a_uth_table_dropped_while_suspended_is_hosted_afresh_not_resumed(
    backend: Backend, tmp_path: Path
) -> None:
    run_scenario(backend.url, tmp_path, _disowned_while_suspended_scenario, PLAYERS)
