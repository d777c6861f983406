"""Live UTH tables under partition ownership (issue 17; docs/scaling.md "Casino tables"), on
SQLite and PostgreSQL, with a real wallet service: two table instances on one store. The
owner of the partition of ``casino-table-uth-1`` hosts the table under its fence; while A
is paused the partition moves to B (A gets no revocation), B rebuilds the round with A's
bet; A's next PlaceBets is fenced (ABORTED) and stores nothing — no event, no bet row, no
request row, no wallet reservation — and A drops the table; B takes the same request.
Revocation drops the table. Also THB: two instances recovering at once void an orphaned
round exactly once, and ``partitions`` start-up leaves a peer's fresh intent alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import electric_domain.casino.thb.events as thb
import grpc
import pytest
from electric.table.v1 import casino_events_pb2 as cev
from electric_eventlog.fencing import current
from electric_table.casino import money, repo
from electric_table.casino.thb import records
from electric_table.casino.uth.ownership import uth_partition, uth_resource
from electric_table.errors import service_error
from electric_table.journal import casino_stream
from electric_table.refusals import ConcurrentChange, TableMoved, TryAgain
from sqlalchemy import Engine

from tests.support import wallet_kit
from tests.support.backends import Backend
from tests.support.table_casino_kit import PENDING, VOIDED
from tests.support.uth_ownership_kit import (
    NOW,
    PARTS,
    PLAYERS,
    TABLE,
    instance,
    repo_bets,
    run_scenario,
    stored,
    txn,
)


async def _uth_scenario(engine: Engine, wallet: wallet_kit.Env) -> None:
    stopping = asyncio.Event()
    with engine.begin() as conn:
        for seat, player in enumerate(PLAYERS, start=1):
            repo.take_seat(conn, TABLE, player, "uth", seat, f"s-{player}")
    part = uth_partition(TABLE, PARTS)
    others = [p for p in range(PARTS) if p != part]
    # Another UTH table of the same partition, seated (so hosted by whoever owns it).
    sibling = next(
        n for n in (f"uth-{k}" for k in range(2, 500)) if uth_partition(n, PARTS) == part
    )
    with engine.begin() as conn:
        repo.take_seat(conn, sibling, "dan", "uth", 1, "s-dan")
    async with (
        instance(engine, "instance-a", wallet.target, stopping) as a,
        instance(engine, "instance-b", wallet.target, stopping) as b,
    ):
        # Not A's partition: not hosted, and refused.
        await a.ownership.on_assigned(others)
        assert TABLE not in a.uth.tables
        with pytest.raises(TryAgain, match="another instance"):
            await a.uth.table(TABLE)
        await a.ownership.on_assigned([part])
        t_a = a.uth.tables[TABLE]
        assert t_a.fence is not None and t_a.fence.epoch == 1
        with engine.connect() as conn:
            assert current(conn, uth_resource(TABLE)) == (1, "instance-a")
        async with t_a.lock:
            await a.uth.open_next(t_a, PLAYERS, NOW)
        assert t_a.book is not None
        round_id = t_a.book.round_id
        await a.uth.place("ann", TABLE, "ante", 500, "r-ann")  # the owner writes
        before = stored(engine, round_id)
        assert before[1] == ["ann"] and not before[2]

        # A is paused; the group gives the partition to B (A never hears of it).
        await b.ownership.on_assigned([part])
        t_b = b.uth.tables[TABLE]
        assert t_b.fence is not None and t_b.fence.epoch == 2
        assert t_b.book is not None and t_b.book.round_id == round_id
        assert t_b.version == t_a.version  # B rebuilt everything A stored

        # A resumes: its PlaceBets is fenced and stores nothing, not even a reservation.
        with pytest.raises(TableMoved, match="moved to another instance") as fenced:
            await a.uth.place("ben", TABLE, "ante", 700, "r-ben")
        assert service_error(fenced.value).code is grpc.StatusCode.ABORTED
        assert stored(engine, round_id) == before
        assert (await wallet_kit.balance(wallet, "ben")).balance == 10_000
        for _ in range(100):  # dropped from a task of its own
            if TABLE not in a.uth.tables:
                break
            await asyncio.sleep(0.01)
        assert TABLE not in a.uth.tables and t_a.disowned and TABLE in a.uth.lost
        with pytest.raises(TryAgain):  # A does not take it back while it is lost
            await a.uth.table(TABLE)
        # Nor any other table of the partition, though A never wrote to it and still
        # believes the partition is its own (issue 28: it took such tables back before).
        await a.uth.disown(sibling)
        with pytest.raises(TryAgain, match="moving"):
            await a.uth.table(sibling)
        assert not a.ownership.holds_partition(part) and part in a.ownership.lost
        with engine.connect() as conn:
            assert current(conn, uth_resource(TABLE)) == (2, "instance-b")
            assert current(conn, uth_resource(sibling)) == (2, "instance-b")

        # The same request through the owner is placed (A stored no answer for it).
        await b.uth.place("ben", TABLE, "ante", 700, "r-ben")
        events, players, ben = stored(engine, round_id)
        assert events > before[0] and players == ["ann", "ben"] and ben
        ben_bets = [x for x in repo_bets(engine, round_id) if x.player_id == "ben"]
        assert ben_bets and [await txn(wallet, x.bet_id) for x in ben_bets] == [PENDING] * 2

        # Revocation suspends the table at B (not driven, not served: its watchers wait);
        # the next assignment, without the partition, drops it; it comes back to A.
        revoked = await b.ownership.on_revoked({part})
        assert revoked == len(b.uth_ownership.suspended) >= 1  # UTH tables only: no tournament
        assert TABLE not in b.uth.tables and t_b.suspended and not t_b.disowned
        with pytest.raises(TryAgain):
            await b.uth.table(TABLE)
        await b.ownership.on_assigned(others)
        assert t_b.disowned and not b.uth_ownership.suspended
        await a.ownership.on_revoked(set(range(PARTS)))  # A's own (late) revocation
        await a.ownership.on_assigned([part])
        t_a2 = a.uth.tables[TABLE]
        assert t_a2.fence is not None and t_a2.fence.epoch == 3 and t_a2 is not t_a
        assert t_a2.version == events and TABLE not in a.uth.lost
        await a.uth.place("cat", TABLE, "ante", 300, "r-cat")
        assert stored(engine, round_id)[1] == PLAYERS
        stopping.set()


def test_a_stale_uth_owner_is_fenced_and_stores_nothing(backend: Backend, tmp_path: Path) -> None:
    run_scenario(backend.url, tmp_path, _uth_scenario, PLAYERS)


# ----------------------------------------------------------------------------------- THB


async def _thb_scenario(engine: Engine, wallet: wallet_kit.Env) -> None:
    stopping = asyncio.Event()
    with engine.begin() as conn:
        repo.take_seat(conn, "thb-1", "ann", "thb", 1, "s-ann")
    async with (
        instance(engine, "instance-a", wallet.target, stopping) as a,
        instance(engine, "instance-b", wallet.target, stopping) as b,
    ):
        round_id = await a.handlers.deal("ann", "thb-1", 500, "deal-1")
        # A crashed inside Decide: the flop bet reserved in the wallet, never appended.
        flop = repo.BetRow(
            records.bet_id(round_id, "flop"), round_id, "ann", "flop", 1000, "", False
        )
        with engine.begin() as conn:
            repo.record_intent(conn, flop)
        await money.reserve(a.wallet, flop.bet_id, "ann", 1000)

        # `partitions` start-up: the intent may be a live peer's command: left alone.
        assert (await b.handlers.recover(resolve_intents=False))["auto_voided"] == 0
        with engine.connect() as conn:
            assert [x.bet_id for x in repo.intents(conn)] == [flop.bet_id]

        # Two instances apply the auto-void rule at once: one void, every bet voided once.
        got = await asyncio.gather(a.handlers.recover(), b.handlers.recover())
        assert all(g["auto_voided"] == 1 for g in got), got
        store = b.handlers.store
        with engine.connect() as conn:
            events = [store.decode(e) for e in store.read_stream(conn, casino_stream(round_id))]
        assert sum(isinstance(m, cev.CasinoRoundVoided) for m in events) == 1
        for inst in (a, b):
            await inst.handlers.work.run_pass()
        ante = records.bet_id(round_id, "ante")
        assert [await txn(wallet, x) for x in (ante, flop.bet_id)] == [VOIDED, VOIDED]
        assert (await wallet_kit.balance(wallet, "ann")).balance == 10_000
        stopping.set()


def test_two_instances_recovering_at_once_void_an_orphaned_thb_round_once(
    backend: Backend, tmp_path: Path
) -> None:
    run_scenario(backend.url, tmp_path, _thb_scenario, ["ann"])


# ------------------------------------------------------------------------ stale copies


async def _stale_copy_scenario(engine: Engine, wallet: wallet_kit.Env) -> None:
    """A copy of the table that was replaced (revoked, then hosted again under a newer
    epoch) and whose write is fenced must not drop the copy that replaced it, nor mark the
    table lost here: before the fix it did both, and uth-1 stopped opening rounds for good
    (chaos run, seed 18, two table instances: every call "moving between instances")."""
    stopping = asyncio.Event()
    with engine.begin() as conn:
        repo.take_seat(conn, TABLE, "ann", "uth", 1, "s-ann")
    part = uth_partition(TABLE, PARTS)
    async with instance(engine, "instance-a", wallet.target, stopping) as a:
        await a.ownership.on_assigned([part])
        old = a.uth.tables[TABLE]
        await a.ownership.on_revoked([part])
        # A copy left behind (as when its resume failed): the assignment hosts a new one.
        a.uth_ownership.suspended.clear()
        await a.ownership.on_assigned([part])
        new = a.uth.tables[TABLE]
        assert new is not old and new.fence is not None and new.fence.epoch == 2
        a.uth.moved(old)  # the stale copy's write was fenced
        await asyncio.sleep(0.05)
        assert a.uth.tables.get(TABLE) is new and TABLE not in a.uth.lost
        assert old.disowned and not new.disowned
        assert await a.uth.table(TABLE) is new
        a.uth.moved(new)  # the hosted copy fenced: dropped, lost until reassigned
        await asyncio.sleep(0.05)
        assert TABLE not in a.uth.tables and TABLE in a.uth.lost
        stopping.set()


def test_a_replaced_uth_copy_fenced_leaves_the_hosted_one(backend: Backend, tmp_path: Path) -> None:
    run_scenario(backend.url, tmp_path, _stale_copy_scenario)


async def _thb_paused_scenario(engine: Engine, wallet: wallet_kit.Env) -> None:
    """THB has no owner (any instance serves a round; docs/scaling.md "Casino tables"): what
    fences a paused instance is the round's stream version, checked in the append's
    transaction. A's Decide is paused between its wallet reservation and its append; the
    player's retry (same request id) is served by B meanwhile, and the player goes on. A
    resumes: its append fails (ABORTED), nothing of it is stored, and the reservation it made
    is the very one B's bet holds (same transfer id: reserved once)."""
    stopping = asyncio.Event()
    with engine.begin() as conn:
        repo.take_seat(conn, "thb-1", "ann", "thb", 1, "s-ann")
    async with (
        instance(engine, "instance-a", wallet.target, stopping) as a,
        instance(engine, "instance-b", wallet.target, stopping) as b,
    ):
        round_id = await a.handlers.deal("ann", "thb-1", 500, "deal-1")
        paused, resume = asyncio.Event(), asyncio.Event()
        real_reserve = a.handlers._reserve

        async def reserve_then_pause(bets: list[repo.BetRow]) -> None:
            await real_reserve(bets)
            paused.set()
            await resume.wait()  # SIGSTOP: the append has not run

        a.handlers._reserve = reserve_then_pause  # type: ignore[method-assign]
        in_flight = asyncio.create_task(
            a.handlers.decide("ann", round_id, thb.CallFlop(NOW), "call-1")
        )
        await asyncio.wait_for(paused.wait(), 10)
        await b.handlers.decide("ann", round_id, thb.CallFlop(NOW), "call-1")  # the retry
        await b.handlers.decide("ann", round_id, thb.Check(NOW), "check-1")  # and on
        store = b.handlers.store
        with engine.connect() as conn:
            before = [e.event_id for e in store.read_stream(conn, casino_stream(round_id))]
        resume.set()
        with pytest.raises(ConcurrentChange, match="changed concurrently"):
            await in_flight
        with engine.connect() as conn:
            after = store.read_stream(conn, casino_stream(round_id))
            flop_bets = [x for x in repo.bets(conn, round_id) if x.spot == "flop"]
        assert [e.event_id for e in after] == before  # nothing of A's stored
        assert sum(isinstance(store.decode(e), cev.CasinoBetPlaced) for e in after) == 2
        assert [x.bet_id for x in flop_bets] == [records.bet_id(round_id, "flop")]
        assert await txn(wallet, flop_bets[0].bet_id) == PENDING
        # ante + flop reserved once each, nothing else.
        assert (await wallet_kit.balance(wallet, "ann")).balance == 10_000 - 500 - 1000
        stopping.set()


def test_a_paused_thb_decision_stores_nothing_after_another_instance_served_it(
    backend: Backend, tmp_path: Path
) -> None:
    run_scenario(backend.url, tmp_path, _thb_paused_scenario, ["ann"])
