"""A paused ex-owner cannot hold a takeover forever (issue 17, docs/scaling.md): a take
blocked by a writing transaction gives up after ``LOCK_TIMEOUT_MS`` (lock_not_available),
and ``break_stale_writers`` ends exactly the sessions whose writing transaction has been
idle for ``STALE_WRITER_S`` — not an idle session without a transaction, not a fresh one."""

from __future__ import annotations

import time

import pytest
from electric_eventlog import create_engine, fencing
from electric_eventlog.migrate import migrate
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

pytestmark = pytest.mark.integration


def test_a_blocked_take_times_out_and_the_stale_writer_is_ended(fresh_pg_url: str) -> None:
    engine = create_engine(fresh_pg_url)
    try:
        migrate(engine)
        with engine.begin() as conn:
            fencing.take(conn, "table-t1", owner="a")
        stale = engine.connect()  # the paused ex-owner: a write under way, never finished
        stale.begin()
        epoch = fencing.current(stale, "table-t1")
        assert epoch is not None
        fencing.check(stale, "table-t1", epoch[0])  # holds the fence row's lock
        stale_pid = stale.execute(text("SELECT pg_backend_pid()")).scalar()
        idle = engine.connect()  # idle, no transaction: must survive
        idle_pid = idle.execute(text("SELECT pg_backend_pid()")).scalar()
        idle.commit()

        began = time.monotonic()
        with pytest.raises(Exception) as blocked, engine.begin() as conn:
            fencing.take(conn, "table-t1", owner="b")
        waited = time.monotonic() - began
        assert fencing.is_lock_timeout(blocked.value)
        assert fencing.LOCK_TIMEOUT_MS / 1000 - 0.5 <= waited < fencing.LOCK_TIMEOUT_MS / 1000 + 5

        assert fencing.break_stale_writers(engine, idle_s=60) == []  # not stale for that long
        time.sleep(max(0.0, fencing.STALE_WRITER_S - (time.monotonic() - began)) + 0.5)
        assert fencing.break_stale_writers(engine) == [stale_pid]
        with engine.begin() as conn:  # the takeover goes through now
            assert fencing.take(conn, "table-t1", owner="b") == epoch[0] + 1
        assert idle.execute(text("SELECT pg_backend_pid()")).scalar() == idle_pid
        idle.close()
        with pytest.raises(DBAPIError):
            stale.execute(text("SELECT 1"))  # its session was ended: nothing it wrote stays
        stale.invalidate()
    finally:
        engine.dispose()


def test_a_writer_paused_in_the_middle_of_a_pipeline_is_ended(fresh_pg_url: str) -> None:
    """A client stopped between two statements of a psycopg pipeline (no Sync sent) leaves
    its session 'active', reading from the client, holding its locks: here a partition's
    fence row under a shared lock, which blocked every takeover of the partition in the
    fencing e2e (issue 28) until ``break_stale_writers`` learnt to end such sessions."""
    import psycopg

    engine = create_engine(fresh_pg_url)
    try:
        migrate(engine)
        with engine.begin() as conn:
            scope = fencing.take_scope(conn, "partition-x-1", owner="a", generation=None)
        dsn = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        paused = psycopg.connect(dsn)
        # Its pipeline ends in an error: the session was ended under it.
        with pytest.raises(psycopg.Error), paused.pipeline():
            paused.execute(
                "SELECT epoch FROM eventlog_fences WHERE resource = %s FOR SHARE",
                (scope.resource,),
            )
            paused.pgconn.flush()  # sent; the client "stops" before its Sync
            pid = paused.info.backend_pid
            time.sleep(fencing.STALE_WRITER_S + 0.5)
            with pytest.raises(Exception) as blocked, engine.begin() as conn:
                fencing.take_scope(conn, scope.resource, owner="b", generation=None)
            assert fencing.is_lock_timeout(blocked.value)
            assert fencing.break_stale_writers(engine) == [pid]
            with engine.begin() as conn:
                assert (
                    fencing.take_scope(conn, scope.resource, owner="b", generation=None).epoch == 2
                )
        with pytest.raises(psycopg.Error):  # its session was ended: nothing it held stays
            paused.execute("SELECT 1")
    finally:
        engine.dispose()
