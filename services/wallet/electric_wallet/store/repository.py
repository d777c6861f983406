"""The repository: loads ledger state for a command, reads the statement and the balances
the metrics show. Synchronous (the handlers run it in a worker thread). It writes nothing:
every row is written by the projector (:mod:`.projections`).

Locking (see docs/wallet.md): a command locks the rows of every account it touches with
``SELECT ... FOR UPDATE`` in account-id order before it reads balances, so two commands on
the same account serialise and neither can overdraw; the sorted order rules out deadlocks.
The event store's append then takes its global position lock (always last). SQLite has a
single writer (``BEGIN IMMEDIATE``), so there the whole transaction is serialised anyway.

On PostgreSQL with psycopg 3 the same reads take the fast path of
:mod:`.postgres`; elsewhere the generic SQLAlchemy code below runs.
"""

from __future__ import annotations

from collections.abc import Iterable

from electric_eventlog.migrate import migrate as migrate_eventlog
from electric_eventlog.migrate import upgrade
from sqlalchemy import Connection, Engine, func, select

from .. import domain as d
from .postgres import pg_load, psycopg_of
from .rows import account_from_row, entry_from_row, transfer_from_row
from .tables import VERSION_TABLE, VERSIONS_DIR, accounts, entries, metadata, transfers


def migrate(engine: Engine) -> None:
    """Create or upgrade the event log's and the wallet's tables (idempotent): what the
    shared event path runs at start-up, for tools and tests that open an engine directly."""
    migrate_eventlog(engine)
    upgrade(
        engine, versions_dir=VERSIONS_DIR, version_table=VERSION_TABLE, target_metadata=metadata
    )


# --------------------------------------------------------------------------- commands


def guarded(account_ids: Iterable[str]) -> list[str]:
    """The accounts among ``account_ids`` whose kind must stay non-negative, sorted: the
    only ones a debit needs to lock (docs/wallet.md, "Concurrency and locking")."""
    out = set()
    for aid in account_ids:
        parsed = d.parse_account_id(aid)
        if parsed is not None and parsed[0] not in d.MAY_GO_NEGATIVE:
            out.add(aid)
    return sorted(out)


def load(
    conn: Connection,
    account_ids: Iterable[str],
    transfer_ids: Iterable[str] = (),
    *,
    lock: bool | Iterable[str] = False,
) -> d.Ledger:
    """A partial ledger with the given accounts (those that exist) and transfers.

    ``lock``: True takes ``FOR UPDATE`` row locks on every account, an iterable of ids
    only on those (in account-id order, before the accounts are read; a no-op on SQLite,
    whose writer lock is already exclusive)."""
    ids = sorted(set(account_ids))
    tids = sorted(set(transfer_ids))
    locks: bool | list[str] = lock if isinstance(lock, bool) else sorted(set(lock))
    raw = psycopg_of(conn)
    if raw is not None:
        return pg_load(conn, raw, ids, tids, locks)
    ledger = d.Ledger()
    if ids:
        query = (
            select(accounts).where(accounts.c.account_id.in_(ids)).order_by(accounts.c.account_id)
        )
        if locks:
            query = query.with_for_update()
        for row in conn.execute(query):
            ledger.accounts[row.account_id] = account_from_row(row)
    if tids:
        for row in conn.execute(select(transfers).where(transfers.c.transfer_id.in_(tids))):
            ledger.transfers[row.transfer_id] = transfer_from_row(row)
    return ledger


def load_transfer(conn: Connection, transfer_id: str) -> d.Transfer | None:
    row = conn.execute(select(transfers).where(transfers.c.transfer_id == transfer_id)).first()
    return transfer_from_row(row) if row is not None else None


def load_for_resolution(
    conn: Connection, transfer_id: str, transfer_ids: Iterable[str]
) -> d.Ledger | None:
    """What a post or void of ``transfer_id`` needs, in one round trip on PostgreSQL: the
    accounts of its legs locked ``FOR UPDATE`` in account-id order (the subquery reads
    the legs, which never change), then ``transfer_ids`` read under those locks. Raises
    ``NotFound`` when the transfer does not exist. None elsewhere: the caller reads the
    transfer, then :func:`load` (two round trips, same locks, same result)."""
    raw = psycopg_of(conn)
    if raw is None:
        return None
    ledger = pg_load(
        conn, raw, [transfer_id], sorted({transfer_id, *transfer_ids}), True, by_transfer=True
    )
    if transfer_id not in ledger.transfers:
        raise d.NotFound(f"transfer {transfer_id} does not exist")
    return ledger


# --------------------------------------------------------------------------- queries


def statement_page(
    conn: Connection,
    *,
    player_id: str = "",
    account_id: str = "",
    before: int | None = None,
    limit: int,
) -> list[d.Entry]:
    """Up to ``limit`` statement lines of a player's accounts (``player_id``) or of one
    account, newest first, older than entry ``before`` when given."""
    e = entries
    query = select(e).order_by(e.c.entry_id.desc()).limit(limit)
    query = query.where(e.c.player_id == player_id if player_id else e.c.account_id == account_id)
    if before is not None:
        query = query.where(e.c.entry_id < before)
    return [entry_from_row(r) for r in conn.execute(query)]


def system_balances(conn: Connection) -> list[tuple[str, d.AccountKind, int, int]]:
    """(account id, kind, posted, reserved) of every system account that is open."""
    a = accounts
    rows = conn.execute(
        select(a.c.account_id, a.c.kind, a.c.posted, a.c.reserved).where(
            a.c.account_id.in_(list(d.SYSTEM_ACCOUNTS))
        )
    ).all()
    return [(aid, d.AccountKind(kind), int(p), int(r)) for aid, kind, p, r in rows]


def player_funds(conn: Connection) -> list[tuple[d.AccountKind, int]]:
    """(player account kind, sum of posted balances over all players), per kind present."""
    a = accounts
    rows = conn.execute(
        select(a.c.kind, func.sum(a.c.posted))
        .where(a.c.kind.in_([int(k) for k in d.PLAYER_KINDS]))
        .group_by(a.c.kind)
    ).all()
    return [(d.AccountKind(kind), int(total or 0)) for kind, total in rows]
