"""Fencing epochs (issue 17 item 2) on SQLite and PostgreSQL: taking ownership increments
the epoch; a stale owner's fenced write fails with FencedError and stores nothing."""

from __future__ import annotations

import threading
import time

import pytest
from electric_eventlog import EventStore, migrate, schema
from electric_eventlog.fencing import (
    Fence,
    FencedError,
    StaleGenerationError,
    check,
    current,
    take,
    take_scope,
)
from electric_eventlog.model import NO_STREAM
from electric_eventlog.testing import event
from sqlalchemy import Engine, func, select

STREAM = "table-t1"


def _count(engine: Engine, stream: str = STREAM) -> int:
    with engine.connect() as conn:
        value = conn.execute(
            select(func.count()).where(schema.events.c.stream_id == stream)
        ).scalar()
    return int(value or 0)


def _fenced_append(store: EventStore, fence: Fence, expected: int, name: str) -> None:
    with store.engine.begin() as conn:
        fence.check(conn)
        store.append(conn, fence.resource, expected, [event(name)])


def test_taking_ownership_increments_the_epoch(backend_engine: Engine) -> None:
    migrate(backend_engine)
    with backend_engine.begin() as conn:
        assert current(conn, STREAM) is None
        assert take(conn, STREAM, owner="a") == 1
    with backend_engine.begin() as conn:
        assert take(conn, STREAM, owner="b") == 2
        assert take(conn, "table-t2", owner="b") == 1
    with backend_engine.connect() as conn:
        assert current(conn, STREAM) == (2, "b")
        check(conn, STREAM, 2)
        with pytest.raises(FencedError) as info:
            check(conn, "table-none", 1)
    assert info.value.current is None


def test_a_stale_owner_cannot_append_after_the_takeover(backend_engine: Engine) -> None:
    migrate(backend_engine)
    store = EventStore(backend_engine, producer="fence")
    with backend_engine.begin() as conn:
        old = Fence(STREAM, take(conn, STREAM, owner="instance-a"))
    _fenced_append(store, old, NO_STREAM, "by-a-1")  # the owner writes
    with backend_engine.begin() as conn:  # instance-b takes the table over
        new = Fence(STREAM, take(conn, STREAM, owner="instance-b"))
    assert new.epoch == old.epoch + 1
    with pytest.raises(FencedError) as info:
        _fenced_append(store, old, 1, "by-a-2")  # a paused instance-a wakes up
    assert (info.value.epoch, info.value.current) == (old.epoch, new.epoch)
    assert "fenced" in str(info.value)
    with backend_engine.connect() as conn:
        stored = store.read_stream(conn, STREAM)
        outbox = conn.execute(select(func.count()).select_from(schema.outbox)).scalar()
    assert [store.decode(e).value for e in stored] == ["by-a-1"]  # type: ignore[attr-defined]
    assert outbox == 1  # the rolled-back write left no outbox row either
    _fenced_append(store, new, 1, "by-b-1")  # the new owner continues
    assert _count(backend_engine) == 2


def test_a_takeover_waits_for_the_owners_write_in_flight(backend_engine: Engine) -> None:
    """The check holds the fence row: a takeover during a write is ordered after it, so the
    new owner (rebuilding after its take) sees that write; never a write after the take."""
    migrate(backend_engine)
    store = EventStore(backend_engine, producer="fence")
    with backend_engine.begin() as conn:
        old = Fence(STREAM, take(conn, STREAM, owner="instance-a"))
    checked = threading.Event()
    took: list[tuple[int, int]] = []

    def takeover() -> None:
        checked.wait(10)
        with backend_engine.begin() as conn:
            epoch = take(conn, STREAM, owner="instance-b")
        took.append((epoch, _count(backend_engine)))

    thread = threading.Thread(target=takeover)
    thread.start()
    with backend_engine.begin() as conn:
        old.check(conn)
        checked.set()
        time.sleep(0.5)  # the takeover is waiting on the fence row meanwhile
        store.append(conn, STREAM, NO_STREAM, [event("by-a-in-flight")])
    thread.join(30)
    assert took == [(old.epoch + 1, 1)]  # the take committed after the write, and saw it
    with pytest.raises(FencedError):
        _fenced_append(store, old, 1, "by-a-late")
    assert _count(backend_engine) == 1


def test_a_scope_taken_over_fences_its_resources_and_their_takes(backend_engine: Engine) -> None:
    """A resource fenced under a scope (a table under its partition): once another owner
    takes the scope, the old holder can neither write nor take the resource again, even
    though nobody took the resource itself."""
    migrate(backend_engine)
    store = EventStore(backend_engine, producer="fence")
    with backend_engine.begin() as conn:
        scope_a = take_scope(conn, "partition-3", owner="instance-a", generation=4)
        fence_a = Fence(STREAM, take(conn, STREAM, owner="instance-a", scope=scope_a), scope_a)
    _fenced_append(store, fence_a, NO_STREAM, "by-a-1")
    with backend_engine.begin() as conn:  # the group gives partition 3 to instance-b
        scope_b = take_scope(conn, "partition-3", owner="instance-b", generation=5)
    assert scope_b.epoch == scope_a.epoch + 1
    with pytest.raises(FencedError) as info:
        _fenced_append(store, fence_a, 1, "by-a-2")
    assert info.value.scope == "partition-3" and info.value.resource == STREAM
    with pytest.raises(FencedError), backend_engine.begin() as conn:
        take(conn, STREAM, owner="instance-a", scope=scope_a)  # no taking it back
    with backend_engine.connect() as conn:
        assert current(conn, STREAM) == (1, "instance-a")  # untouched by the refused take
    with backend_engine.begin() as conn:
        fence_b = Fence(STREAM, take(conn, STREAM, owner="instance-b", scope=scope_b), scope_b)
    _fenced_append(store, fence_b, 1, "by-b-1")
    assert _count(backend_engine) == 2


def test_a_scope_take_of_an_older_generation_is_refused_unless_forced(
    backend_engine: Engine,
) -> None:
    migrate(backend_engine)
    with backend_engine.begin() as conn:
        assert take_scope(conn, "partition-1", owner="b", generation=9).epoch == 1
    with pytest.raises(StaleGenerationError) as info, backend_engine.begin() as conn:
        take_scope(conn, "partition-1", owner="a", generation=8)
    assert (info.value.generation, info.value.current) == (8, 9)
    with backend_engine.begin() as conn:
        assert current(conn, "partition-1") == (1, "b")
        assert take_scope(conn, "partition-1", owner="b", generation=9).epoch == 2  # same gen
        # The coordinator confirmed generation 1 (the group was deleted, generations
        # restarted): the caller forces the take.
        assert take_scope(conn, "partition-1", owner="a", generation=1, force=True).epoch == 3
        assert take_scope(conn, "partition-1", owner="b", generation=2).epoch == 4


def test_writers_of_one_scope_do_not_wait_for_each_other(backend_engine: Engine) -> None:
    """The scope is checked under a shared lock: two tables of one partition write at once
    (on PostgreSQL; SQLite has one writer anyway)."""
    if backend_engine.dialect.name != "postgresql":
        pytest.skip("SQLite serialises every writer")
    migrate(backend_engine)
    with backend_engine.begin() as conn:
        scope = take_scope(conn, "partition-2", owner="a", generation=None)
        one = Fence("table-one", take(conn, "table-one", owner="a", scope=scope), scope)
        two = Fence("table-two", take(conn, "table-two", owner="a", scope=scope), scope)
    with backend_engine.begin() as first:
        one.check(first)
        with backend_engine.begin() as second:  # would hang on an exclusive scope lock
            second.exec_driver_sql("SET LOCAL lock_timeout = '2s'")
            two.check(second)
