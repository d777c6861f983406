"""Group commit when no connection can be had (found by the chaos run, issue 18).

During a PostgreSQL restart (``pg_ctl restart -m fast``) the wallet's pinned connection
died; the batch was retried on a new connection, and ``engine.connect()`` raised while the
server was still starting. Before the fix that exception escaped the leader's batch with
every unit of the batch put back in the queue — the leader's own unit at its head, though
its thread had left with the exception — so nobody ever led again: every later unit of
work waited forever, and the wallet answered no write until it was restarted.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from electric_eventlog.group import GroupCommit
from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.exc import OperationalError


class FlakyEngine:
    """An engine whose next ``failures`` connects fail like a server that is restarting."""

    def __init__(self, real: Engine, failures: int) -> None:
        self.real, self.failures = real, failures
        self.dialect = real.dialect

    def connect(self) -> Connection:
        if self.failures > 0:
            self.failures -= 1
            raise OperationalError("connect", {}, ConnectionRefusedError("server starting"))
        return self.real.connect()


def one(conn: Connection) -> int:
    return int(conn.execute(text("select 1")).scalar_one())


def run_in_thread(group: GroupCommit, timeout: float = 10.0) -> Any:
    """``group.run(one)`` in a thread; fails the test when it does not return in time."""
    got: list[Any] = []

    def call() -> None:
        try:
            got.append(group.run(one))
        except Exception as exc:
            got.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(timeout)
    assert not worker.is_alive(), "group commit deadlocked after a failed connect"
    return got[0]


def test_a_failed_connect_fails_the_batch_and_the_next_unit_runs() -> None:
    group = GroupCommit(FlakyEngine(create_engine("sqlite://"), failures=1))  # type: ignore[arg-type]
    with pytest.raises(OperationalError):
        group.run(one)
    assert run_in_thread(group) == 1
    assert group.queued() == 0


def test_units_queued_behind_a_failed_connect_are_not_stranded() -> None:
    """Several callers at once while connects fail: each gets the error or its result,
    none waits forever, and the store works afterwards."""
    engine = FlakyEngine(create_engine("sqlite://"), failures=3)
    group = GroupCommit(engine)  # type: ignore[arg-type]
    results: list[Any] = []
    lock = threading.Lock()

    def call() -> None:
        try:
            got: Any = group.run(one)
        except OperationalError as exc:
            got = exc
        with lock:
            results.append(got)

    workers = [threading.Thread(target=call, daemon=True) for _ in range(8)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(10)
    assert not any(w.is_alive() for w in workers), "units stranded in the queue"
    assert len(results) == 8
    assert all(r == 1 or isinstance(r, OperationalError) for r in results)
    assert run_in_thread(group) == 1
