"""A database that is away answers UNAVAILABLE (retry), not INTERNAL: the chaos run's
database restarts reached clients as INTERNAL before ``errors.database_unavailable``."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import grpc
import psycopg
import pytest
from electric_platform.errors import database_unavailable, service_error_for
from sqlalchemy import create_engine, text
from sqlalchemy import exc as sa_exc


def caught(fn: object) -> BaseException:
    with pytest.raises(Exception) as info:
        fn()  # type: ignore[operator]
    return info.value


def test_a_refused_postgres_connection_is_unavailable() -> None:
    engine = create_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")
    err = caught(lambda: engine.connect())
    assert isinstance(err, sa_exc.OperationalError) and database_unavailable(err)
    assert service_error_for(err).code is grpc.StatusCode.UNAVAILABLE


def test_a_postgres_shutdown_is_unavailable_a_constraint_is_not() -> None:
    down = sa_exc.OperationalError("SELECT 1", {}, psycopg.errors.AdminShutdown("terminating"))
    assert service_error_for(down).code is grpc.StatusCode.UNAVAILABLE
    dup = sa_exc.IntegrityError("INSERT", {}, psycopg.errors.UniqueViolation("duplicate key"))
    assert not database_unavailable(dup)
    assert service_error_for(dup).code is grpc.StatusCode.INTERNAL


def test_a_busy_sqlite_is_unavailable_a_missing_table_is_not(tmp_path: Path) -> None:
    path = tmp_path / "busy.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.execute("BEGIN EXCLUSIVE")
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": 0})
    with engine.connect() as conn:
        busy = caught(lambda: conn.execute(text("INSERT INTO t VALUES (1)")))
    holder.execute("ROLLBACK")
    holder.close()
    with engine.connect() as conn:
        missing = caught(lambda: conn.execute(text("SELECT * FROM nowhere")))
    assert service_error_for(busy).code is grpc.StatusCode.UNAVAILABLE
    assert not database_unavailable(missing)
    assert service_error_for(missing).code is grpc.StatusCode.INTERNAL


@pytest.mark.parametrize(
    "server_error",
    [
        psycopg.errors.DiskFull("could not extend file"),  # 53100
        psycopg.errors.TooManyConnections("too many clients"),  # 53300
        psycopg.errors.IoError("could not read block"),  # 58030
        psycopg.errors.QueryCanceled("canceling statement due to statement timeout"),  # 57014
        psycopg.errors.LockNotAvailable("canceling statement due to lock timeout"),  # 55P03
        psycopg.errors.IdleInTransactionSessionTimeout("terminating connection"),  # 25P03
    ],
)
def test_a_server_in_trouble_is_unavailable(server_error: Exception) -> None:
    """A slow or full disk, a stalled writer's locks, a timed-out session: the same request
    can be retried (issue 28: WatchTable answered INTERNAL around a slow disk)."""
    wrapped = sa_exc.OperationalError("SELECT 1", {}, server_error)
    assert service_error_for(wrapped).code is grpc.StatusCode.UNAVAILABLE
    assert service_error_for(server_error).code is grpc.StatusCode.UNAVAILABLE  # raw psycopg


def test_a_raw_psycopg_failure_is_unavailable_a_raw_constraint_is_not() -> None:
    """The event store's pipelined path raises psycopg's own errors, not SQLAlchemy's."""
    lost = psycopg.OperationalError("consuming input failed: server closed the connection")
    assert service_error_for(lost).code is grpc.StatusCode.UNAVAILABLE
    dup = psycopg.errors.UniqueViolation("duplicate key")
    assert not database_unavailable(dup)
    assert service_error_for(dup).code is grpc.StatusCode.INTERNAL
    dropped = sa_exc.PendingRollbackError(
        "Can't reconnect until invalid transaction is rolled back"
    )
    assert service_error_for(dropped).code is grpc.StatusCode.UNAVAILABLE
