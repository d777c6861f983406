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

**Scopes: the epoch moves when ownership moves.** A resource can be fenced under a
*scope*: the fence of what ownership is actually handed over with (for the table service,
a Kafka partition of the registration topic). The scope's epoch is taken when the scope is
assigned (:func:`take_scope`, inside the consumer group's assignment callback, before
anything of the scope is loaded), and a resource's fence taken under it (``take(...,
scope=...)``) and every write under it (:meth:`Fence.check`) check the scope's epoch in the
same transaction. So a write of an instance whose assignment was superseded fails as soon
as the new assignee took the scope, whether or not that new owner has loaded or written the
resource yet; and a stale instance cannot take a resource back (a take refused by the
scope), which a per-resource epoch taken on demand allowed: a paused owner resumed, had a
write fenced, then reloaded the table on the next retried Act and took its epoch again
(issue 28, docs/scaling.md §2). A scope's take also records the consumer group's
*generation* of the assignment: a take from an older generation than the stored one (an
assignment callback of an instance paused inside the rebalance, run after a newer
generation gave the scope elsewhere) is refused (:class:`StaleGenerationError`).

Usage::

    scope = fencing.take_scope(conn, "partition-...-3", owner=me, generation=g)  # assigned
    epoch = fencing.take(conn, "table-t1", owner=me, scope=scope)    # on load
    ...
    with engine.begin() as conn:                                 # every write
        Fence("table-t1", epoch, scope).check(conn)
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

    def __init__(self, resource: str, epoch: int, current: int | None, *, scope: str = "") -> None:
        self.resource = resource
        self.epoch = epoch
        self.current = current
        #: The scope whose epoch moved (empty: the resource's own epoch did).
        self.scope = scope
        held = "nobody" if current is None else f"epoch {current}"
        what = f"its scope {scope!r}" if scope else "it"
        super().__init__(
            f"{resource!r} is fenced: this writer holds epoch {epoch} of {what},"
            f" the owner holds {held}"
        )


class StaleGenerationError(EventLogError):
    """A scope's take from an assignment older than the one that took it last: the
    consumer group has moved on (this instance was paused inside the rebalance)."""

    def __init__(self, resource: str, generation: int, current: int) -> None:
        self.resource = resource
        self.generation = generation
        self.current = current
        super().__init__(
            f"{resource!r} was taken in group generation {current}; this assignment is of"
            f" generation {generation}"
        )


def take(
    conn: Connection,
    resource: str,
    *,
    owner: str,
    at: datetime | None = None,
    scope: Fence | None = None,
) -> int:
    """Take ownership of ``resource`` for ``owner``: its epoch + 1 (1 the first time).

    Run in its own transaction and commit before writing with the epoch: the takeover is
    what fences the previous owner. Waits for an in-flight fenced write of the previous
    owner to commit (see the module docstring). Under ``scope`` the scope's epoch is
    checked first, in the same transaction: an instance whose assignment was superseded
    gets :class:`FencedError` and takes nothing."""
    if scope is not None:
        _check_scope(conn, scope, resource)
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
    if scope is None:
        _bound_waits(conn, write=False)
    epoch = conn.execute(statement.returning(table.c.epoch)).scalar_one()
    return int(epoch)


def take_scope(
    conn: Connection,
    resource: str,
    *,
    owner: str,
    generation: int | None,
    at: datetime | None = None,
    force: bool = False,
) -> Fence:
    """Take the scope ``resource`` (a partition) for ``owner``, assigned to it by the
    consumer group's ``generation`` (None: unknown, not compared): its epoch + 1.

    Refused with :class:`StaleGenerationError` when the scope was last taken in a newer
    generation, unless ``force`` (the caller proved with the group coordinator that its
    generation is the current one: the stored one is of an earlier incarnation of the
    group, whose generations restarted at 1 after it was deleted). Waits, as :func:`take`
    does, for the in-flight writes under the scope's old epoch."""
    table = schema.fences
    _bound_waits(conn, write=False)
    row = conn.execute(
        select(table.c.epoch, table.c.generation)
        .where(table.c.resource == resource)
        .with_for_update()
    ).first()
    when = at or datetime.now(UTC)
    if row is None:
        conn.execute(
            table.insert().values(
                resource=resource, epoch=1, owner=owner, taken_at=when, generation=generation
            )
        )
        return Fence(resource, 1)
    stored = None if row[1] is None else int(row[1])
    if generation is not None and stored is not None and stored > generation and not force:
        raise StaleGenerationError(resource, generation, stored)
    epoch = int(row[0]) + 1
    conn.execute(
        update(table)
        .where(table.c.resource == resource)
        .values(epoch=epoch, owner=owner, taken_at=when, generation=generation)
    )
    return Fence(resource, epoch)


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
    has been idle (or waiting for its client mid-pipeline) for ``idle_s`` or more: a paused
    or partitioned writer that holds row
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
                " AND (state LIKE 'idle in transaction%'"
                # A client paused in the middle of a pipeline (no Sync sent yet) leaves its
                # session 'active', reading from the client: seen holding a partition's
                # fence row for a minute in the fencing e2e (issue 28).
                "  OR (state = 'active' AND wait_event = 'ClientRead'))"
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


def check(conn: Connection, resource: str, epoch: int, scope: Fence | None = None) -> None:
    """Raise :class:`FencedError` unless ``epoch`` is ``resource``'s current epoch (and,
    with ``scope``, the scope's epoch is still the one held); holds the fence row's lock
    until ``conn``'s transaction ends (call it before the writes). On PostgreSQL the
    transaction's idle time and lock waits are bounded too
    (:data:`IDLE_IN_TRANSACTION_TIMEOUT_MS`, :data:`WRITE_LOCK_TIMEOUT_MS`)."""
    table = schema.fences
    if scope is not None:
        _check_scope(conn, scope, resource)
    else:
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


def _check_scope(conn: Connection, scope: Fence, resource: str) -> None:
    """Raise :class:`FencedError` (for ``resource``) unless ``scope``'s epoch is current.

    A *shared* row lock (``FOR SHARE``) until the transaction ends: the writers of one
    scope (all the tables of a partition) do not queue behind each other on it, while a
    takeover of the scope (an UPDATE) waits for the writes in flight, and a check after a
    committed takeover finds the new epoch (READ COMMITTED re-reads the locked row's newest
    version). SQLite: one writer at a time orders them the same way."""
    table = schema.fences
    _bound_waits(conn, write=True)
    query = select(table.c.epoch).where(table.c.resource == scope.resource)
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(read=True)
    got = conn.execute(query).scalar()
    if got is not None and int(got) == scope.epoch:
        return
    raise FencedError(
        resource,
        scope.epoch,
        None if got is None else int(got),
        scope=scope.resource,
    )


def current(conn: Connection, resource: str) -> tuple[int, str] | None:
    """``(epoch, owner)`` of ``resource`` (None when nobody ever took it)."""
    table = schema.fences
    row = conn.execute(
        select(table.c.epoch, table.c.owner).where(table.c.resource == resource)
    ).first()
    return None if row is None else (int(row[0]), str(row[1]))


@dataclass(frozen=True)
class Fence:
    """An epoch held on one resource: ``fence.check(conn)`` in every write's transaction.
    ``scope``: the fence of the assignment it was taken under (checked too)."""

    resource: str
    epoch: int
    scope: Fence | None = None

    def check(self, conn: Connection) -> None:
        """:func:`check` of this epoch (and of its scope's)."""
        check(conn, self.resource, self.epoch, self.scope)
