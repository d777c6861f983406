"""The wallet's tables (projections) and the repository that loads and saves ledger state.

The event store (``electric_eventlog``) holds the facts; these tables are read models kept
in the same transaction as every append (:mod:`.projections` rebuilds and checks them):

* ``wallet_accounts`` — one row per account: kind, owner, posted/reserved/incoming cents.
* ``wallet_transfers`` — one row per transfer: the client's spec, legs, state.
* ``wallet_entries`` — the statement: one row per balance change of an account.

Locking (see docs/wallet.md): a command locks the rows of every account it touches with
``SELECT ... FOR UPDATE`` in account-id order before it reads balances, so two commands on
the same account serialise and neither can overdraw; the sorted order rules out deadlocks.
The event store's append then takes its global position lock (always last). SQLite has a
single writer (``BEGIN IMMEDIATE``), so there the whole transaction is serialised anyway.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from electric.wallet.v1 import ledger_pb2
from electric_eventlog.migrate import migrate as migrate_eventlog
from electric_eventlog.migrate import upgrade
from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    DateTime,
    Engine,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    bindparam,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError

from . import codec
from . import domain as d

MIGRATIONS = Path(__file__).resolve().parent / "migrations" / "versions"
VERSION_TABLE = "alembic_version_wallet"

_ID = BigInteger().with_variant(Integer(), "sqlite")

metadata = MetaData()

accounts = Table(
    "wallet_accounts",
    metadata,
    Column("account_id", String(200), primary_key=True),
    Column("kind", Integer, nullable=False),
    Column("player_id", String(100), nullable=False),
    Column("posted", BigInteger, nullable=False),
    Column("reserved", BigInteger, nullable=False),
    Column("incoming", BigInteger, nullable=False),
    Column("opened_at", DateTime(timezone=True), nullable=False),
    Index("ix_wallet_accounts_player_id", "player_id"),
)

transfers = Table(
    "wallet_transfers",
    metadata,
    Column("transfer_id", String(200), primary_key=True),
    Column("state", Integer, nullable=False),
    Column("spec", LargeBinary, nullable=False),
    Column("legs", String, nullable=False),
    Column("posted_legs", String, nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("posted_amount", BigInteger, nullable=False),
    Column("code", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("resolved_at", DateTime(timezone=True), nullable=True),
)

entries = Table(
    "wallet_entries",
    metadata,
    Column("entry_id", _ID, primary_key=True, autoincrement=True),
    Column("account_id", String(200), nullable=False),
    Column("player_id", String(100), nullable=False),
    Column("account_kind", Integer, nullable=False),
    Column("transfer_id", String(200), nullable=False),
    Column("entry_type", Integer, nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("posted_after", BigInteger, nullable=False),
    Column("available_after", BigInteger, nullable=False),
    Column("code", String(64), nullable=False),
    Column("memo", String(512), nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    Index("ix_wallet_entries_player", "player_id", "entry_id"),
    Index("ix_wallet_entries_account", "account_id", "entry_id"),
)


def migrate(engine: Engine) -> None:
    """Create or upgrade the event log's and the wallet's tables (idempotent)."""
    migrate_eventlog(engine)
    upgrade(engine, versions_dir=MIGRATIONS, version_table=VERSION_TABLE)


# --------------------------------------------------------------------------- rows


def _legs_json(legs: Iterable[d.Leg]) -> str:
    return json.dumps([[leg.debit, leg.credit, leg.amount] for leg in legs])


def _legs_from_json(text: str) -> tuple[d.Leg, ...]:
    return tuple(d.Leg(str(a), str(b), int(n)) for a, b, n in json.loads(text))


def account_from_row(row: Any) -> d.Account:
    return d.Account(
        row.account_id,
        d.AccountKind(row.kind),
        row.player_id,
        int(row.posted),
        int(row.reserved),
        int(row.incoming),
    )


def transfer_from_row(row: Any) -> d.Transfer:
    spec = ledger_pb2.TransferSpec()
    spec.ParseFromString(bytes(row.spec))
    return d.Transfer(
        request=codec.spec_from_pb(spec),
        legs=_legs_from_json(row.legs),
        state=d.TransferState(row.state),
        created_at=codec.utc(row.created_at),
        posted_legs=_legs_from_json(row.posted_legs),
        resolved_at=codec.utc(row.resolved_at) if row.resolved_at is not None else None,
    )


def transfer_row(t: d.Transfer) -> dict[str, Any]:
    return {
        "transfer_id": t.transfer_id,
        "state": int(t.state),
        "spec": codec.spec_to_pb(t.request).SerializeToString(deterministic=True),
        "legs": _legs_json(t.legs),
        "posted_legs": _legs_json(t.posted_legs),
        "amount": t.amount,
        "posted_amount": t.posted_amount,
        "code": t.request.code,
        "created_at": t.created_at,
        "resolved_at": t.resolved_at,
    }


# --------------------------------------------------------------------------- statement


@dataclass(frozen=True)
class Entry:
    """One statement line (see ``StatementEntry`` in wallet.proto)."""

    account_id: str
    player_id: str
    account_kind: d.AccountKind
    transfer_id: str
    entry_type: int
    amount: int
    posted_after: int
    available_after: int
    code: str
    memo: str
    occurred_at: datetime
    entry_id: int = 0


HOLD, RELEASE, DEBIT, CREDIT, INCOMING = 1, 2, 3, 4, 5


def entries_for(event: d.Event, before: d.Ledger) -> list[Entry]:
    """The statement lines an event adds, given the ledger state just before it. Pure; the
    state is not modified (the caller applies the event afterwards)."""
    if isinstance(event, d.AccountOpened):
        return []
    if isinstance(event, d.TransferVoided):
        req = before.transfers[event.transfer_id].request
    else:
        req = event.request
    shadow = {k: d.Account(**vars(a)) for k, a in before.accounts.items()}
    out: list[Entry] = []

    def line(account_id: str, kind: int, amount: int) -> None:
        a = shadow[account_id]
        out.append(
            Entry(
                a.account_id,
                a.player_id,
                a.kind,
                req.transfer_id,
                kind,
                amount,
                a.posted,
                a.available,
                req.code,
                req.memo,
                codec.utc(event.occurred_at),
            )
        )

    if isinstance(event, d.TransferPending):
        for leg in event.legs:
            shadow[leg.debit].reserved += leg.amount
            line(leg.debit, HOLD, -leg.amount)
            shadow[leg.credit].incoming += leg.amount
            line(leg.credit, INCOMING, leg.amount)
    elif isinstance(event, d.TransferPosted):
        for leg in event.legs:
            if event.was_pending:
                shadow[leg.debit].reserved -= leg.amount
                shadow[leg.credit].incoming -= leg.amount
            shadow[leg.debit].posted -= leg.amount
            line(leg.debit, DEBIT, -leg.amount)
            shadow[leg.credit].posted += leg.amount
            line(leg.credit, CREDIT, leg.amount)
        for leg in event.released_legs:
            shadow[leg.debit].reserved -= leg.amount
            line(leg.debit, RELEASE, leg.amount)
            shadow[leg.credit].incoming -= leg.amount
            line(leg.credit, INCOMING, -leg.amount)
    else:
        for leg in event.released_legs:
            shadow[leg.debit].reserved -= leg.amount
            line(leg.debit, RELEASE, leg.amount)
            shadow[leg.credit].incoming -= leg.amount
            line(leg.credit, INCOMING, -leg.amount)
    return out


def entry_row(e: Entry) -> dict[str, Any]:
    return {
        "account_id": e.account_id,
        "player_id": e.player_id,
        "account_kind": int(e.account_kind),
        "transfer_id": e.transfer_id,
        "entry_type": e.entry_type,
        "amount": e.amount,
        "posted_after": e.posted_after,
        "available_after": e.available_after,
        "code": e.code,
        "memo": e.memo,
        "occurred_at": e.occurred_at,
    }


def entry_from_row(row: Any) -> Entry:
    return Entry(
        row.account_id,
        row.player_id,
        d.AccountKind(row.account_kind),
        row.transfer_id,
        int(row.entry_type),
        int(row.amount),
        int(row.posted_after),
        int(row.available_after),
        row.code,
        row.memo,
        codec.utc(row.occurred_at),
        int(row.entry_id),
    )


# --------------------------------------------------------------------------- repository


def load(
    conn: Connection,
    account_ids: Iterable[str],
    transfer_ids: Iterable[str] = (),
    *,
    lock: bool = False,
) -> d.Ledger:
    """A partial ledger with the given accounts (those that exist) and transfers.

    ``lock`` takes ``FOR UPDATE`` row locks on the accounts in account-id order (no-op on
    SQLite, whose writer lock is already exclusive)."""
    ids = sorted(set(account_ids))
    tids = sorted(set(transfer_ids))
    raw = _psycopg(conn)
    if raw is not None:
        return _pg_load(conn, raw, ids, tids, lock)
    ledger = d.Ledger()
    if ids:
        query = (
            select(accounts).where(accounts.c.account_id.in_(ids)).order_by(accounts.c.account_id)
        )
        if lock:
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


def save(
    conn: Connection, before: d.Ledger, events: Sequence[d.Event], *, queue: bool = False
) -> d.Ledger:
    """Write the projections of ``events`` (already decided on a copy of ``before``):
    account rows, transfer rows and statement entries. Returns the state after them.

    ``queue`` (PostgreSQL, inside :func:`pipeline`): send the write without waiting for
    its result; it travels with the next statement that syncs (the event store's
    position allocation), and an error in it is raised there."""
    state = copy.deepcopy(before)
    opened: list[d.AccountOpened] = []
    lines: list[Entry] = []
    touched: set[str] = set()
    touched_transfers: set[str] = set()
    for event in events:
        lines += entries_for(event, state)
        if isinstance(event, d.AccountOpened):
            opened.append(event)
        else:
            tid = (
                event.transfer_id
                if isinstance(event, d.TransferVoided)
                else (event.request.transfer_id)
            )
            touched_transfers.add(tid)
            legs: list[d.Leg] = []
            if not isinstance(event, d.TransferVoided):
                legs += event.legs
            if not isinstance(event, d.TransferPending):
                legs += event.released_legs
            for leg in legs:
                touched.update((leg.debit, leg.credit))
        state.apply(event)
    if _psycopg(conn) is not None:
        _pg_save(conn, before, state, opened, touched, touched_transfers, lines, queue)
        return state
    if opened:
        conn.execute(
            insert(accounts),
            [
                {
                    "account_id": event.account_id,
                    "kind": int(event.kind),
                    "player_id": event.player_id,
                    "posted": 0,
                    "reserved": 0,
                    "incoming": 0,
                    "opened_at": event.occurred_at,
                }
                for event in opened
            ],
        )
    if touched:
        conn.execute(
            update(accounts)
            .where(accounts.c.account_id == bindparam("aid"))
            .values(
                posted=bindparam("new_posted"),
                reserved=bindparam("new_reserved"),
                incoming=bindparam("new_incoming"),
            ),
            [
                {
                    "aid": aid,
                    "new_posted": state.accounts[aid].posted,
                    "new_reserved": state.accounts[aid].reserved,
                    "new_incoming": state.accounts[aid].incoming,
                }
                for aid in sorted(touched)
            ],
        )
    for tid in sorted(touched_transfers):
        t = state.transfers[tid]
        if tid in before.transfers:
            row = transfer_row(t)
            del row["transfer_id"]
            conn.execute(update(transfers).where(transfers.c.transfer_id == tid).values(**row))
        else:
            conn.execute(insert(transfers).values(**transfer_row(t)))
    if lines:
        conn.execute(insert(entries), [entry_row(e) for e in lines])
    return state


# --------------------------------------------------------------------------- PostgreSQL
#
# Fast path for PostgreSQL through psycopg 3 (docs/wallet.md, "Performance"): the same
# reads and writes as the generic SQLAlchemy code above, in fewer network round trips.
# ``load`` sends the account lock and the transfer read in one pipeline; ``save`` writes
# every projection row of a command in ONE statement (data-modifying CTEs over arrays in
# binary format, one cached plan whatever the command). SQLite keeps the generic path.

_ACCOUNT_COLUMNS = "account_id, kind, player_id, posted, reserved, incoming"
_TRANSFER_COLUMNS = (
    "transfer_id, state, spec, legs, posted_legs, amount, posted_amount, code, created_at, "
    "resolved_at"
)
_PG_ACCOUNTS = (
    f"SELECT {_ACCOUNT_COLUMNS} FROM wallet_accounts WHERE account_id = ANY(%s) ORDER BY account_id"
)
_PG_LOCK_ACCOUNTS = f"{_PG_ACCOUNTS} FOR UPDATE"
_PG_LOCK_TRANSFER_ACCOUNTS = (
    f"SELECT {_ACCOUNT_COLUMNS} FROM wallet_accounts WHERE account_id IN ("
    " SELECT leg.value ->> side.k FROM wallet_transfers AS t,"
    " jsonb_array_elements(t.legs::jsonb) AS leg, (VALUES (0), (1)) AS side(k)"
    " WHERE t.transfer_id = %s) ORDER BY account_id FOR UPDATE"
)
_PG_TRANSFERS = f"SELECT {_TRANSFER_COLUMNS} FROM wallet_transfers WHERE transfer_id = ANY(%s)"

# Accounts opened by the command are inserted with their final balances (a statement
# cannot update a row a sibling CTE inserted); the others are updated. New transfers are
# inserted, existing ones updated. Entries keep their order (entry_id = statement order).
# The rows travel as five JSON documents: one parameter per table part, cheap to encode.
_ACCOUNT_RECORD = (
    "account_id text, kind int, player_id text, posted bigint, reserved bigint, "
    "incoming bigint, opened_at timestamptz"
)
_TRANSFER_RECORD = (
    "transfer_id text, state int, spec text, legs text, posted_legs text, amount bigint, "
    "posted_amount bigint, code text, created_at timestamptz, resolved_at timestamptz"
)
_PG_SAVE = (
    "WITH new_accounts AS ("
    " INSERT INTO wallet_accounts (account_id, kind, player_id, posted, reserved, incoming,"
    " opened_at)"
    " SELECT account_id, kind, player_id, posted, reserved, incoming, opened_at"
    f" FROM jsonb_to_recordset(%(new_accounts)s::jsonb) AS x({_ACCOUNT_RECORD})"
    " RETURNING 1),"
    " changed_accounts AS ("
    " UPDATE wallet_accounts AS a"
    " SET posted = x.posted, reserved = x.reserved, incoming = x.incoming"
    " FROM jsonb_to_recordset(%(changed_accounts)s::jsonb)"
    " AS x(account_id text, posted bigint, reserved bigint, incoming bigint)"
    " WHERE a.account_id = x.account_id RETURNING 1),"
    " new_transfers AS ("
    f" INSERT INTO wallet_transfers ({_TRANSFER_COLUMNS})"
    " SELECT transfer_id, state, decode(spec, 'hex'), legs, posted_legs, amount,"
    " posted_amount, code, created_at, resolved_at"
    f" FROM jsonb_to_recordset(%(new_transfers)s::jsonb) AS x({_TRANSFER_RECORD})"
    " RETURNING 1),"
    " changed_transfers AS ("
    " UPDATE wallet_transfers AS t"
    " SET state = x.state, spec = decode(x.spec, 'hex'), legs = x.legs,"
    " posted_legs = x.posted_legs, amount = x.amount, posted_amount = x.posted_amount,"
    " code = x.code, created_at = x.created_at, resolved_at = x.resolved_at"
    f" FROM jsonb_to_recordset(%(changed_transfers)s::jsonb) AS x({_TRANSFER_RECORD})"
    " WHERE t.transfer_id = x.transfer_id RETURNING 1),"
    " new_entries AS ("
    " INSERT INTO wallet_entries (account_id, player_id, account_kind, transfer_id,"
    " entry_type, amount, posted_after, available_after, code, memo, occurred_at)"
    " SELECT x.account_id, x.player_id, x.account_kind, x.transfer_id, x.entry_type,"
    " x.amount, x.posted_after, x.available_after, x.code, x.memo, x.occurred_at"
    " FROM jsonb_array_elements(%(entries)s::jsonb) WITH ORDINALITY AS e(doc, ord),"
    " jsonb_to_record(e.doc) AS x(account_id text, player_id text, account_kind int,"
    " transfer_id text, entry_type int, amount bigint, posted_after bigint,"
    " available_after bigint, code text, memo text, occurred_at timestamptz)"
    " ORDER BY e.ord RETURNING 1)"
    " SELECT (SELECT count(*) FROM new_accounts), (SELECT count(*) FROM changed_accounts),"
    " (SELECT count(*) FROM new_transfers), (SELECT count(*) FROM changed_transfers),"
    " (SELECT count(*) FROM new_entries)"
)


def _json_transfer(t: d.Transfer) -> dict[str, Any]:
    row = transfer_row(t)
    row["spec"] = row["spec"].hex()
    row["created_at"] = row["created_at"].isoformat()
    if row["resolved_at"] is not None:
        row["resolved_at"] = row["resolved_at"].isoformat()
    return row


@contextlib.contextmanager
def pipeline(conn: Connection) -> Iterator[bool]:
    """On PostgreSQL (psycopg 3) a pipeline on ``conn``'s driver connection: statements
    sent inside it share network round trips until one needs its result. Yields whether
    it is one (False elsewhere: nothing changes)."""
    raw = _psycopg(conn)
    if raw is None:
        yield False
        return
    with raw.pipeline():
        yield True


def _psycopg(conn: Connection) -> Any | None:
    """The psycopg 3 connection under ``conn`` (PostgreSQL), else None (generic path)."""
    if conn.dialect.name != "postgresql" or conn.dialect.driver != "psycopg":
        return None
    if not conn.in_transaction():
        conn.begin()  # what conn.execute() would do (autobegin)
    return conn.connection.dbapi_connection


def load_for_resolution(
    conn: Connection, transfer_id: str, transfer_ids: Iterable[str]
) -> d.Ledger | None:
    """What a post or void of ``transfer_id`` needs, in one round trip on PostgreSQL: the
    accounts of its legs locked ``FOR UPDATE`` in account-id order (the subquery reads
    the legs, which never change), then ``transfer_ids`` read under those locks. Raises
    ``NotFound`` when the transfer does not exist. None elsewhere: the caller reads the
    transfer, then :func:`load` (two round trips, same locks, same result)."""
    raw = _psycopg(conn)
    if raw is None:
        return None
    ledger = _pg_load(
        conn, raw, [transfer_id], sorted({transfer_id, *transfer_ids}), True, by_transfer=True
    )
    if transfer_id not in ledger.transfers:
        raise d.NotFound(f"transfer {transfer_id} does not exist")
    return ledger


def _pg_load(
    conn: Connection,
    raw: Any,
    ids: list[str],
    tids: list[str],
    lock: bool,
    *,
    by_transfer: bool = False,
) -> d.Ledger:
    import psycopg
    from psycopg.rows import namedtuple_row

    ledger = d.Ledger()
    if not ids and not tids:
        return ledger
    try:
        with (
            raw.cursor(row_factory=namedtuple_row) as acc,
            raw.cursor(row_factory=namedtuple_row) as tr,
        ):
            with raw.pipeline():
                if by_transfer:
                    acc.execute(_PG_LOCK_TRANSFER_ACCOUNTS, (ids[0],))
                elif ids:
                    acc.execute(_PG_LOCK_ACCOUNTS if lock else _PG_ACCOUNTS, (ids,))
                if tids:
                    tr.execute(_PG_TRANSFERS, (tids,))
            account_rows = acc.fetchall() if ids else []
            transfer_rows = tr.fetchall() if tids else []
    except psycopg.Error as exc:
        raise _wrap(conn, exc, _PG_LOCK_ACCOUNTS) from exc
    for row in account_rows:
        ledger.accounts[row.account_id] = account_from_row(row)
    for row in transfer_rows:
        ledger.transfers[row.transfer_id] = transfer_from_row(row)
    return ledger


def _pg_save(
    conn: Connection,
    before: d.Ledger,
    state: d.Ledger,
    opened: list[d.AccountOpened],
    touched: set[str],
    touched_transfers: set[str],
    lines: list[Entry],
    queue: bool,
) -> None:
    new_ids = {event.account_id for event in opened}
    new_accounts = []
    for event in opened:
        a = state.accounts[event.account_id]
        new_accounts.append(
            {
                "account_id": event.account_id,
                "kind": int(event.kind),
                "player_id": event.player_id,
                "posted": a.posted,
                "reserved": a.reserved,
                "incoming": a.incoming,
                "opened_at": event.occurred_at.isoformat(),
            }
        )
    changed_accounts = [
        {"account_id": aid, "posted": a.posted, "reserved": a.reserved, "incoming": a.incoming}
        for aid in sorted(touched - new_ids)
        for a in (state.accounts[aid],)
    ]
    tids = sorted(touched_transfers)
    params = {
        "new_accounts": json.dumps(new_accounts),
        "changed_accounts": json.dumps(changed_accounts),
        "new_transfers": json.dumps(
            [_json_transfer(state.transfers[t]) for t in tids if t not in before.transfers]
        ),
        "changed_transfers": json.dumps(
            [_json_transfer(state.transfers[t]) for t in tids if t in before.transfers]
        ),
        "entries": json.dumps(
            [{**entry_row(e), "occurred_at": e.occurred_at.isoformat()} for e in lines]
        ),
    }
    raw = _psycopg(conn)
    if queue and raw is not None and raw.pgconn.pipeline_status:
        # No result wanted: psycopg keeps the cursor until the pipeline syncs.
        raw.cursor().execute(_PG_SAVE, params)
    else:
        conn.exec_driver_sql(_PG_SAVE, params)


def _wrap(conn: Connection, exc: Exception, statement: str) -> DBAPIError:
    """A psycopg error as the SQLAlchemy exception the generic path would have raised."""
    import psycopg

    return cast(
        DBAPIError,
        DBAPIError.instance(statement, None, exc, psycopg.Error, dialect=conn.dialect),
    )


def wipe(conn: Connection) -> None:
    """Delete every projection row (before a rebuild)."""
    for table in (entries, transfers, accounts):
        conn.execute(delete(table))
