"""Engine factory: thread-safe SQLAlchemy engines for PostgreSQL (psycopg 3) and SQLite.

An :class:`~sqlalchemy.engine.Engine` is safe to share between threads (each thread checks a
connection out of the pool), which is what services calling us via ``asyncio.to_thread``
need. For SQLite the factory turns on WAL (readers do not block the writer), a busy
timeout, and ``BEGIN IMMEDIATE`` for every transaction: SQLite has one writer at a time, and
taking the write lock up front avoids the deadlock-prone read-to-write lock upgrade.
Read-only work can opt out with :func:`read_only`.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import Connection, Engine, event, exc
from sqlalchemy import create_engine as sa_create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

#: Execution option consulted at BEGIN on SQLite: "IMMEDIATE" (default) or "DEFERRED".
SQLITE_BEGIN_OPTION = "electric_sqlite_begin"

#: PostgreSQL: a pooled connection idle for longer than this is pinged at checkout.
PING_AFTER_IDLE_SECONDS = 1.0
_CHECKED_IN_AT = "electric_checked_in_at"


def create_engine(url: str, **kwargs: Any) -> Engine:
    """Create an engine for ``url`` (``postgresql+psycopg://...`` or ``sqlite:///path``).

    ``sqlite://`` (in memory) shares one connection (StaticPool): fine for single-threaded
    tests only; use a file for anything concurrent.
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        ping_after = kwargs.pop("ping_after_idle", PING_AFTER_IDLE_SECONDS)
        kwargs.setdefault("pool_size", 10)
        kwargs.setdefault("max_overflow", 20)
        engine = sa_create_engine(url, **kwargs)
        if not kwargs.get("pool_pre_ping"):
            _ping_when_idle(engine, ping_after)
        return engine
    in_memory = parsed.database in (None, "", ":memory:")
    connect_args = dict(kwargs.pop("connect_args", {}))
    connect_args.setdefault("check_same_thread", False)
    connect_args.setdefault("timeout", 30.0)
    if in_memory:
        kwargs.setdefault("poolclass", StaticPool)
    else:
        kwargs.setdefault("pool_size", 10)
        kwargs.setdefault("max_overflow", 20)
    engine = sa_create_engine(url, connect_args=connect_args, **kwargs)
    _configure_sqlite(engine, wal=not in_memory)
    return engine


def _ping_when_idle(engine: Engine, idle_seconds: float) -> None:
    """Ping a pooled connection at checkout only when it sat idle for ``idle_seconds``.

    SQLAlchemy's ``pool_pre_ping`` pings at every checkout: under load that was one extra
    round trip per transaction or read, 7-12 % of each service's samples in the issue 16
    profile (docs/benchmarks.md). A connection returned moments ago is as good as the last
    statement it ran; one idle for longer (a PostgreSQL restart may have killed it) is still
    pinged, and a dead one is replaced before the caller sees it (``DisconnectionError``
    makes the pool connect afresh). A restart within ``idle_seconds`` of a connection's last
    use fails that one statement instead, exactly like a statement in flight during the
    restart; SQLAlchemy then invalidates the rest of the pool, so the next checkouts
    reconnect.
    """
    dialect = engine.dialect

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_connection: Any, record: Any) -> None:
        if record is not None:
            record.info[_CHECKED_IN_AT] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        returned = record.info.get(_CHECKED_IN_AT)
        if returned is None or time.monotonic() - returned <= idle_seconds:
            return  # just connected, or used moments ago
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as err:
            if dialect.is_disconnect(err, dbapi_connection, None):
                raise exc.DisconnectionError(str(err)) from err
            raise


def _configure_sqlite(engine: Engine, *, wal: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy (below) emit BEGIN itself instead of pysqlite's implicit one.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if wal:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get(SQLITE_BEGIN_OPTION, "IMMEDIATE")
        conn.exec_driver_sql(f"BEGIN {mode}")


def read_only(conn: Connection) -> Connection:
    """Mark a not-yet-begun connection as a reader (SQLite: ``BEGIN DEFERRED``).

    ``with read_only(engine.connect()) as conn: store.read_all(conn, ...)``; a no-op on
    PostgreSQL.
    """
    return conn.execution_options(**{SQLITE_BEGIN_OPTION: "DEFERRED"})


def reading(engine: Engine) -> Connection:
    """A connection for reads that need no transaction of their own: one statement, or
    several that need no common snapshot.

    PostgreSQL: autocommit, so a read costs its statement's round trip only, not also a
    BEGIN and a ROLLBACK (a hot watch loop re-reading on every change paid three round
    trips for one; docs/event-store.md). SQLite: :func:`read_only` (``BEGIN DEFERRED``).
    ``with reading(engine) as conn: ...``.
    """
    conn = engine.connect()
    if engine.dialect.name == "postgresql":
        return conn.execution_options(isolation_level="AUTOCOMMIT")
    return read_only(conn)
