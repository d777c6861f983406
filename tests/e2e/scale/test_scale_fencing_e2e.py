"""Fencing between processes (issue 17, "a fencing test"): three table-service processes with
``ELECTRIC_TABLE_OWNERSHIP=partitions`` on one PostgreSQL database and Kafka. The instance A
owning the most tables is stopped with SIGSTOP; the consumer group moves its partitions to
B and C, which take the tables' epochs and drive them on. Then B and C are stopped and A is
resumed, so A is the ONLY table process running: its tables' timers are long overdue and it
tries to write at once. The store shows no write after the move: every moved table whose
fence still names its new owner has exactly the stream it had when B and C stopped, while A
logged its refused writes (fenced, or failed on a lock the stopped B or C holds: either way
nothing stored). B and C resume and the tables go on.

No bots: the players never act, every turn ends on the action timer, so each table writes
every couple of seconds by itself (the driver's writes are the ones fencing must stop).
"""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from electric_eventlog import EventStore
from electric_eventlog.kafka import KafkaBus
from scale_fleet import StoreProbe, TableFleet, base_env

from tests.support.auth import auth_env
from tests.support.table_kit import check_stream, decode_stream, registration_messages

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

TABLES = 12
PLAYERS = ("ann", "ben", "cat")


async def _until(check: Callable[[], bool], what: str, timeout: float, fleet: TableFleet) -> float:
    """Poll ``check`` (a blocking read, run in a thread) every 0.1 s; seconds it took."""
    began = time.monotonic()
    while not await asyncio.to_thread(check):
        if time.monotonic() - began > timeout:
            raise AssertionError(f"{what}: not within {timeout}s\n{fleet.logs()}")
        await asyncio.sleep(0.1)
    return time.monotonic() - began


async def _publish_tables(kafka: str, namespace: str, ids: list[str]) -> None:
    bus = KafkaBus(kafka, client_id="e2e-scale-fencing", namespace=namespace)
    await bus.start()
    try:
        for table_id in ids:
            players = [f"{p}-{table_id[:6]}" for p in PLAYERS]
            # Long levels: the blinds stay small and nobody busts while the test runs.
            messages, _ = registration_messages(
                table_id, players, action_timer_ms=1500, time_bank_ms=0, level_ms=600_000
            )
            await bus.publish(messages)
    finally:
        await bus.stop()


async def test_a_paused_instance_cannot_write_to_its_moved_tables(
    fresh_pg_url: str, kafka_bootstrap: str, tmp_path: Path
) -> None:
    namespace = f"e2e-scale-fence-{uuid.uuid4().hex[:10]}"
    env = {
        **base_env(),
        **auth_env(),
        "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap,
        "ELECTRIC_KAFKA_NAMESPACE": namespace,
        "ELECTRIC_TABLE_HAND_PAUSE_MS": "100",
        "ELECTRIC_VAR_DIR": str(tmp_path / "var"),
        "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "3",
    }
    fleet = TableFleet(fresh_pg_url, env, tmp_path)
    probe = StoreProbe(fresh_pg_url)
    try:
        for _ in range(3):  # together: one migrates (advisory lock), the others wait
            fleet.add()
        await asyncio.to_thread(fleet.wait_serving)
        ids = [str(uuid.uuid4()) for _ in range(TABLES)]
        await _publish_tables(kafka_bootstrap, namespace, ids)
        addresses = {m.address for m in fleet.members}

        def split() -> bool:  # every table taken, by the three instances, all of them
            owners = probe.owners()
            held = {owners[t][1] for t in ids if t in owners}
            return set(ids) <= set(owners) and held == addresses

        await _until(split, "tables split over the three instances", 120, fleet)
        await asyncio.sleep(3)  # let the group settle (joins come in rebalance waves)
        await _until(split, "tables split over the three instances", 60, fleet)
        owners = probe.owners()
        by_owner: dict[str, list[str]] = {}
        for t in ids:
            by_owner.setdefault(owners[t][1], []).append(t)
        a = fleet.by_address(max(by_owner, key=lambda k: len(by_owner[k])))
        others = [m for m in fleet.members if m is not a]
        moved = by_owner[a.address]
        before = probe.heads(moved)

        # A stops; its partitions move to B and C, which take the epochs and drive on.
        fleet.signal(a, signal.SIGSTOP)
        taken = {t: owners[t][0] for t in moved}

        def moved_and_driven() -> bool:
            now, heads = probe.owners(), probe.heads(moved)
            return all(
                now[t][1] != a.address and now[t][0] > taken[t] and heads[t] > before[t]
                for t in moved
            )

        failover = await _until(moved_and_driven, "A's tables moved and driven on", 60, fleet)
        print(
            f"\n{len(moved)} tables of the paused instance driven elsewhere after {failover:.1f}s"
        )

        # Only A runs now: whatever reaches the store is A's.
        for m in others:
            fleet.signal(m, signal.SIGSTOP)
        # A write of A is refused by its fence (table.fenced), or fails before that on a
        # lock held by the stopped B or C (table.write_failed after a lock timeout).
        tried = r'"table\.(fenced|write_failed)"'
        fenced_before, tried_before = a.count(r'"table\.fenced"'), a.count(tried)
        s1_owners, s1_heads = probe.owners(), probe.heads(moved)
        fleet.signal(a, signal.SIGCONT)
        try:
            # A's timers are overdue: it writes at once and is refused. Wait for its
            # refusals (or, at most, a few seconds: B and C must be back before their
            # session times out, else the group would give A everything again).
            deadline = time.monotonic() + 4.5
            while time.monotonic() < deadline and a.count(tried) == tried_before:
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)  # any write A could still make has had its chance
            s2_owners, s2_heads = probe.owners(), probe.heads(moved)
        finally:
            for m in others:
                fleet.signal(m, signal.SIGCONT)
        fenced = a.count(r'"table\.fenced"') - fenced_before
        attempts = a.count(tried) - tried_before
        still_theirs = [t for t in moved if s2_owners[t] == s1_owners[t]]
        print(
            f"A resumed alone: {attempts} write attempts failed, {fenced} of them fenced; "
            f"{len(still_theirs)} tables checked"
        )
        # The store: nothing appended to a table A lost while it ran alone.
        assert still_theirs, "every moved table was taken again during the check"
        assert {t: s2_heads[t] for t in still_theirs} == {t: s1_heads[t] for t in still_theirs}
        assert attempts >= 1, f"A never tried to write\n{a.log()}"
        assert a.count(r'"table\.disowned"') >= 1

        # B and C (or A, after a new assignment) carry on: every moved table advances.
        resumed = probe.heads(moved)
        await _until(
            lambda: all(h > resumed[t] for t, h in probe.heads(moved).items()),
            "moved tables go on after the check",
            60,
            fleet,
        )
        store = EventStore(probe.engine, producer="table")
        with probe.engine.connect() as conn:
            for t in moved:
                check_stream(decode_stream(store.read_stream(conn, f"table-{t}")))
    finally:
        fleet.stop_all()
        probe.close()
