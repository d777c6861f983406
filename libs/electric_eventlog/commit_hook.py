"""Tell an event store's commit listeners when a caller's own transaction that appended
events commits (issue 16).

:meth:`EventStore.transact <electric_eventlog.store.EventStore.transact>` and
``append_in_new_tx`` call the listeners after their commit. A service that appends inside
its own ``engine.begin()`` block did not, so its outbox relay found those rows only at its
next poll, up to ``idle_poll_max`` (0.25 s) later on an idle service: a quarter of a second
added to a registration's seat reaching the table, and the fuzz test's "the platform is
quiet" check (0.12 s without a write) passed before the event arrived.

SQLAlchemy's ``commit`` connection event fires just BEFORE the database commit (there is
no after-commit event in Core). That is early enough: a relay woken by it fetches at once
and, finding nothing yet, polls again after its ``poll_interval`` (20 ms), because a wake
resets its back-off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Connection, Engine, event

#: ``Connection.info`` key: the listeners to call when this connection's transaction commits.
_PENDING = "electric_eventlog.commit_listeners"


def install(engine: Engine) -> None:
    """Make ``engine``'s commits call what :func:`on_this_commit` registered (idempotent)."""
    if not event.contains(engine, "commit", _committing):
        event.listen(engine, "commit", _committing)
        event.listen(engine, "rollback", _rolled_back)


def on_this_commit(conn: Connection, listener: Callable[[], None]) -> None:
    """Call ``listener()`` when ``conn``'s current transaction commits (not if it rolls
    back). Several registrations of one listener in a transaction call it once."""
    pending: dict[Callable[[], None], None] = conn.info.setdefault(_PENDING, {})
    pending[listener] = None


def _committing(conn: Connection) -> None:
    for listener in conn.info.pop(_PENDING, {}):
        listener()


def _rolled_back(conn: Any) -> None:
    conn.info.pop(_PENDING, None)
