"""Fencing epochs: a writer that lost ownership of a resource cannot write to it any more.

A resource (for the table service: one table, ``table-<id>``) has one row in
``eventlog_fences`` holding its owner's **epoch**. Taking ownership increments it
(:func:`take`, its own short transaction); every write of the owner then checks, in the
write's transaction, that the epoch it took is still the current one (:func:`check`). An
instance that was paused, partitioned or slow while ownership moved therefore fails with
:class:`FencedError` and its transaction (events, outbox rows, its own rows) rolls back:
nothing it writes after the takeover is stored.

Why the check cannot race the takeover: :func:`check` is an ``UPDATE ... WHERE epoch = :mine``
of the fence row, so it holds that row's lock until the writer commits. A concurrent
:func:`take` waits for the writer's commit (the write is then ordered *before* the takeover,
and the new owner, which rebuilds from the store after taking the epoch, sees it); a check
that runs after a committed take finds the new epoch (PostgreSQL re-evaluates the ``WHERE``
on the latest row version under READ COMMITTED) and matches no row. On SQLite a write
transaction excludes every other writer (``BEGIN IMMEDIATE``), which orders them the same way.

Usage::

    epoch = fencing.take(conn, "table-t1", owner=instance_id)   # on assignment
    ...
    with engine.begin() as conn:                                 # every write
        fencing.check(conn, "table-t1", epoch)
        store.append(conn, "table-t1", expected, events)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, Engine, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from . import schema
from .errors import EventLogError


class FencedError(EventLogError):
    """A write by a holder of an epoch older than the resource's current one (or of a
    resource nobody took). Nothing of the write's transaction may commit. At a gRPC edge it
    is ``ABORTED``: the command was not applied; retry it, it reaches the new owner."""

    def __init__(self, resource: str, epoch: int, current: int | None) -> None:
        self.resource = resource
        self.epoch = epoch
        self.current = current
        held = "nobody" if current is None else f"epoch {current}"
        super().__init__(
            f"{resource!r} is fenced: this writer holds epoch {epoch}, the owner holds {held}"
        )


def take(conn: Connection, resource: str, *, owner: str, at: datetime | None = None) -> int:
    """Take ownership of ``resource`` for ``owner``: its epoch + 1 (1 the first time).

    Run in its own transaction and commit before writing with the epoch: the takeover is
    what fences the previous owner. Waits for an in-flight fenced write of the previous
    owner to commit (see the module docstring)."""
    values = {
        "resource": resource,
        "epoch": 1,
        "owner": owner,
        "taken_at": at or datetime.now(UTC),
    }
    table = schema.fences
    statement: Any
    if conn.dialect.name == "postgresql":
        pg = pg_insert(table).values(values)
        statement = pg.on_conflict_do_update(
            index_elements=[table.c.resource],
            set_={"epoch": table.c.epoch + 1, "owner": owner, "taken_at": values["taken_at"]},
        )
    elif conn.dialect.name == "sqlite":
        lite = sqlite_insert(table).values(values)
        statement = lite.on_conflict_do_update(
            index_elements=[table.c.resource],
            set_={"epoch": table.c.epoch + 1, "owner": owner, "taken_at": values["taken_at"]},
        )
    else:  # pragma: no cover - the event log supports PostgreSQL and SQLite only
        raise NotImplementedError(conn.dialect.name)
    _bound_waits(conn, write=False)
    epoch = conn.execute(statement.returning(table.c.epoch)).scalar_one()
    return int(epoch)


#: How long a fenced write's transaction may sit idle on PostgreSQL (milliseconds) before
#: the server aborts it. The check holds the fence row's lock until the writer commits: a
#: writer paused (SIGSTOP, a stalled VM) between its statements would otherwise hold the
#: lock for as long as it is paused, and the new owner's :func:`take` would wait for it.
#: Below the consumer group's session timeout (6 s), so the lock is free by the time the
#: group moves the resource; a paused writer's transaction is rolled back (nothing stored).
IDLE_IN_TRANSACTION_TIMEOUT_MS = 4000
#: How long a :func:`take` waits for a row lock (milliseconds) before failing with
#: ``lock_not_available`` (SQLSTATE 55P03). The idle timeout above is not armed while a
#: client is paused in the middle of a psycopg *pipeline* (no Sync sent yet): such a session
#: holds its locks (the fence row, the event log's head row) until it resumes or dies.
#: Waiters give up after this time and call :func:`break_stale_writers`.
LOCK_TIMEOUT_MS = 3000
#: The same bound for a fenced write (milliseconds): longer, because writers queue on the
#: event log's head row and a loaded machine can make that queue legitimately slow; it only
#: has to end a wait behind a paused session that holds the head row.
WRITE_LOCK_TIMEOUT_MS = 10_000
#: A writing transaction idle for this long (seconds) is stale (see break_stale_writers).
STALE_WRITER_S = 3.0
LOCK_NOT_AVAILABLE = "55P03"


def _bound_waits(conn: Connection, *, write: bool) -> None:
    """PostgreSQL: bound this transaction's lock waits (and, for a fenced write, its idle
    time) with ``SET LOCAL``-scoped settings."""
    if conn.dialect.name != "postgresql":
        return
    lock = WRITE_LOCK_TIMEOUT_MS if write else LOCK_TIMEOUT_MS
    idle = IDLE_IN_TRANSACTION_TIMEOUT_MS if write else 0
    conn.execute(
        text(
            "SELECT set_config('lock_timeout', :lock, true),"
            " set_config('idle_in_transaction_session_timeout', :idle, true)"
        ),
        {"lock": str(lock), "idle": str(idle)},
    )


def is_lock_timeout(error: BaseException) -> bool:
    """Whether ``error`` (a DBAPI/SQLAlchemy error) is PostgreSQL's ``lock_not_available``."""
    orig = getattr(error, "orig", error)
    return getattr(orig, "sqlstate", None) == LOCK_NOT_AVAILABLE


def break_stale_writers(engine: Engine, idle_s: float = STALE_WRITER_S) -> list[int]:
    """Terminate the sessions of this database whose *writing* transaction (it has an xid)
    has been idle for ``idle_s`` or more: a paused or partitioned writer that holds row
    locks (a fence row, the head row) and blocks every other writer and the takeover.
    Healthy writers never idle that long inside a transaction; a terminated one only loses
    its uncommitted transaction (nothing stored). Returns the terminated pids (PostgreSQL;
    nothing to do on SQLite, where a writer holds the database only while it runs)."""
    if engine.dialect.name != "postgresql":
        return []
    with engine.connect() as conn:
        # Select first, terminate after: SQL does not order the evaluation of WHERE terms.
        stale = conn.execute(
            text(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND backend_xid IS NOT NULL"
                " AND state LIKE 'idle in transaction%'"
                " AND now() - state_change > make_interval(secs => :idle)"
            ),
            {"idle": idle_s},
        ).all()
        killed = [
            int(pid)
            for (pid,) in stale
            if conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar()
        ]
        conn.commit()
    return killed


def check(conn: Connection, resource: str, epoch: int) -> None:
    """Raise :class:`FencedError` unless ``epoch`` is ``resource``'s current epoch; holds the
    fence row's lock until ``conn``'s transaction ends (call it before the writes). On
    PostgreSQL the transaction's idle time and lock waits are bounded too
    (:data:`IDLE_IN_TRANSACTION_TIMEOUT_MS`, :data:`WRITE_LOCK_TIMEOUT_MS`)."""
    table = schema.fences
    _bound_waits(conn, write=True)
    result = conn.execute(
        update(table)
        .where(table.c.resource == resource, table.c.epoch == epoch)
        .values(epoch=table.c.epoch)
    )
    if result.rowcount == 1:
        return
    current = conn.execute(select(table.c.epoch).where(table.c.resource == resource)).scalar()
    raise FencedError(resource, epoch, None if current is None else int(current))


def current(conn: Connection, resource: str) -> tuple[int, str] | None:
    """``(epoch, owner)`` of ``resource`` (None when nobody ever took it)."""
    table = schema.fences
    row = conn.execute(
        select(table.c.epoch, table.c.owner).where(table.c.resource == resource)
    ).first()
    return None if row is None else (int(row[0]), str(row[1]))


@dataclass(frozen=True)
class Fence:
    """An epoch held on one resource: ``fence.check(conn)`` in every write's transaction."""

    resource: str
    epoch: int

    def check(self, conn: Connection) -> None:
        """:func:`check` of this epoch."""
        check(conn, self.resource, self.epoch)
