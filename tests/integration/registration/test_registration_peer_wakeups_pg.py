"""Registration instances on one PostgreSQL database wake each other's WatchMyTables
streams (LISTEN/NOTIFY, ``electric_registration.peer_wakeups``) instead of leaving a change
made on one instance to the other's 2 s re-read (issue 17, docs/scaling.md "Left" 6)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from electric_eventlog import create_engine
from electric_registration.notify import Notifier, TableMoved
from electric_registration.peer_wakeups import (
    PLAYERS_PER_PAYLOAD,
    PeerWakeups,
    announced,
    packed,
)
from sqlalchemy import Engine


def payloads(instance: str, players: list[str], moved: TableMoved | None = None) -> list[str]:
    """The payloads announcing one change."""
    return list(packed(instance, [(players, moved)]))


def players_from(payload: str, instance: str) -> list[str]:
    """Every player a payload names, for ``instance``."""
    return [p for players, _ in announced(payload, instance) for p in players]


pytestmark = pytest.mark.integration


@pytest.fixture
def engine(fresh_pg_url: str) -> Iterator[Engine]:
    eng = create_engine(fresh_pg_url)
    yield eng
    eng.dispose()


async def _listening(*instances: PeerWakeups) -> None:
    for instance in instances:
        instance.start()
    start = time.monotonic()
    while not all(i.listening.is_set() for i in instances):
        assert time.monotonic() - start < 30, "LISTEN never in place"
        await asyncio.sleep(0.02)


async def test_a_change_on_one_instance_wakes_the_streams_on_the_other(engine: Engine) -> None:
    here, there = Notifier(), Notifier()
    a, b = PeerWakeups(engine, here, "instance-a"), PeerWakeups(engine, there, "instance-b")
    await _listening(a, b)
    try:
        mine, theirs, other = here.subscribe("ava"), there.subscribe("ava"), there.subscribe("bo")
        a.notify(["ava"])
        assert mine.is_set()  # the local stream at once, as before
        start = time.monotonic()
        await asyncio.wait_for(theirs.wait(), timeout=10)
        took = time.monotonic() - start
        assert took < 2.0, f"no faster than the 2 s re-read ({took:.2f} s)"
        assert not other.is_set()  # only the players named
        # The announcement does not come back to wake the sender's streams a second time.
        mine.clear()
        await asyncio.sleep(1.5)
        assert not mine.is_set()
        assert (b.received, a.received) == (1, 0)
    finally:
        a.stop()
        b.stop()


async def test_many_players_are_announced_in_payloads_under_the_limit(engine: Engine) -> None:
    players = [f"player-{n:03d}-" + "x" * 88 for n in range(150)]  # 100-character ids
    chunks = list(payloads("instance-a", players + players[:10]))  # duplicates merged
    assert len(chunks) == 3 and all(len(c.encode()) < 8000 for c in chunks)
    assert sorted(p for c in chunks for p in players_from(c, "instance-b")) == sorted(players)
    assert players_from(chunks[0], "instance-a") == []  # its own
    assert players_from("not json", "instance-b") == []
    assert PLAYERS_PER_PAYLOAD * 3 >= 150

    here, there = Notifier(), Notifier()
    a, b = PeerWakeups(engine, here, "instance-a"), PeerWakeups(engine, there, "instance-b")
    await _listening(a, b)
    try:
        first, last = there.subscribe(players[0]), there.subscribe(players[-1])
        a.notify(players)
        await asyncio.wait_for(asyncio.gather(first.wait(), last.wait()), timeout=10)
        start = time.monotonic()
        while a.sent < 3:  # counted once its statement returned, just after delivery
            assert time.monotonic() - start < 10
            await asyncio.sleep(0.02)
        assert a.sent == 3
    finally:
        a.stop()
        b.stop()


async def test_a_move_reaches_the_peer_as_a_move_in_order(engine: Engine) -> None:
    """A table's move is announced with the move itself (the peer's bars move on with no
    read, issue 26 item 2), under the size limit, and in order with the other changes."""
    deadline = datetime(2026, 12, 7, 6, 0, 1, 250_000, tzinfo=UTC)
    moved = TableMoved("t-1", 3, ((1, 1490), (2, 1510), (3, 0)), 2, deadline)
    players = [f"player-{n:03d}-" + "x" * 88 for n in range(60)]
    [chunk] = payloads("instance-a", players, moved)
    assert len(chunk.encode()) < 8000
    assert announced(chunk, "instance-b") == [(sorted(players), moved)]
    # Several changes of one send share payloads, in order, each under the limit.
    many = [(players, moved), (["ava"], None), (players, None)] * 10
    chunks = list(packed("instance-a", many))
    assert all(len(c.encode()) < 8000 for c in chunks) and len(chunks) < len(many)
    got = [change for c in chunks for change in announced(c, "instance-b")]
    assert got == [(sorted(p), m) for p, m in many]
    # A peer still on the format before the packing: one change that needs a read.
    assert announced('{"i": "old", "p": ["ava"]}', "instance-b") == [(["ava"], None)]
    here, there = Notifier(), Notifier()
    a, b = PeerWakeups(engine, here, "instance-a"), PeerWakeups(engine, there, "instance-b")
    await _listening(a, b)
    try:
        theirs = there.subscribe("ava")
        later = TableMoved("t-1", 3, ((1, 1490), (2, 1510), (3, 0)), 1, None)
        a.notify(["ava"], moved)
        a.notify(["ava"])  # a change that needs a read
        a.notify(["ava"], later)
        start = time.monotonic()
        while there.generation("ava") < 3:
            assert time.monotonic() - start < 10, there.generation("ava")
            await asyncio.sleep(0.02)
        assert theirs.is_set()
        assert there.moves_between("ava", 0, 1) == [moved]
        assert there.moves_between("ava", 0, 3) is None  # the change in between: a read
        assert there.moves_between("ava", 2, 3) == [later]
    finally:
        a.stop()
        b.stop()


async def test_a_lone_instance_announces_nothing_until_a_peer_listens(engine: Engine) -> None:
    """Announcing to nobody cost a lone instance about 5 % of its busy time (its own
    announcements read back): it now sends only while another instance's listener is
    connected."""
    here, there = Notifier(), Notifier()
    a = PeerWakeups(engine, here, "instance-a", peers_check_seconds=0.1)
    b = PeerWakeups(engine, there, "instance-b", peers_check_seconds=0.1)
    await _listening(a)
    try:
        a.notify(["ava"])
        start = time.monotonic()
        while a.skipped < 1:
            assert time.monotonic() - start < 10, "the send was never attempted"
            await asyncio.sleep(0.02)
        assert a.sent == 0
        await _listening(b)
        theirs = there.subscribe("ava")
        await asyncio.sleep(0.2)  # past a's next check of its peers
        a.notify(["ava"])
        await asyncio.wait_for(theirs.wait(), timeout=10)
        start = time.monotonic()
        while a.sent < 1:  # counted once its statement returned, just after delivery
            assert time.monotonic() - start < 10
            await asyncio.sleep(0.02)
        assert (a.sent, a.skipped) == (1, 1)
    finally:
        a.stop()
        b.stop()
