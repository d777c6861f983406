"""PostgreSQL fast path of the repository, through psycopg 3 (docs/wallet.md, "Performance").

The same reads and writes as the generic SQLAlchemy code of :mod:`.repository`, in fewer
network round trips: ``pg_load`` sends the account lock and the transfer read in one
pipeline; ``pg_save`` writes every projection row of a command in ONE statement
(data-modifying CTEs over JSON documents, one cached plan whatever the command). SQLite
keeps the generic path.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

from .. import domain as d
from .rows import account_from_row, entry_row, legs_json, transfer_from_row, transfer_row

#: Kinds that may go negative: never locked (no balance check can fail on them).
_UNGUARDED = sorted(int(k) for k in d.MAY_GO_NEGATIVE)

_ACCOUNT_COLUMNS = "account_id, kind, player_id, posted, reserved, incoming"
_TRANSFER_COLUMNS = (
    "transfer_id, state, spec, legs, posted_legs, amount, posted_amount, code, created_at, "
    "resolved_at"
)
_PG_ACCOUNTS = (
    f"SELECT {_ACCOUNT_COLUMNS} FROM wallet_accounts WHERE account_id = ANY(%s) ORDER BY account_id"
)
_PG_LOCK_ACCOUNTS = f"{_PG_ACCOUNTS} FOR UPDATE"
# A post/void locks only the accounts its transfer DEBITS (leg element 0) whose kind must
# stay non-negative (``guarded_kinds``), then reads every account of its legs unlocked.
# ``= ANY(ARRAY(…))``: the legs are read once, then primary-key lookups (``IN (…)`` made
# PostgreSQL hash-join a scan of wallet_accounts, whose cost grows with the players).
_PG_LEG_ACCOUNTS = (
    f"SELECT {_ACCOUNT_COLUMNS} FROM wallet_accounts WHERE account_id = ANY(ARRAY("
    " SELECT leg.value ->> side.k FROM wallet_transfers AS t,"
    " jsonb_array_elements(t.legs::jsonb) AS leg, (VALUES (0), (1)) AS side(k)"
    " WHERE t.transfer_id = %s)) ORDER BY account_id"
)
_PG_LOCK_TRANSFER_DEBITS = (
    "SELECT account_id FROM wallet_accounts WHERE account_id = ANY(ARRAY("
    " SELECT leg.value ->> 0 FROM wallet_transfers AS t,"
    " jsonb_array_elements(t.legs::jsonb) AS leg WHERE t.transfer_id = %s))"
    " AND kind <> ALL(%s) ORDER BY account_id FOR UPDATE"
)
_PG_LOCK_IDS = (
    "SELECT account_id FROM wallet_accounts WHERE account_id = ANY(%s)"
    " ORDER BY account_id FOR UPDATE"
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
# A resolution changes only these columns of a transfer (``Ledger.apply``: the request,
# its legs and creation time never change), so only they travel: no spec to re-encode.
_RESOLUTION_RECORD = (
    "transfer_id text, state int, posted_legs text, posted_amount bigint, resolved_at timestamptz"
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
    " SET posted = a.posted + x.dp, reserved = a.reserved + x.dr, incoming = a.incoming + x.di"
    " FROM jsonb_to_recordset(%(changed_accounts)s::jsonb)"
    " AS x(account_id text, dp bigint, dr bigint, di bigint, posted bigint, reserved bigint)"
    " WHERE a.account_id = x.account_id"
    " RETURNING a.account_id, a.posted - x.posted AS off_posted,"
    " (a.posted - a.reserved) - (x.posted - x.reserved) AS off_available),"
    " new_transfers AS ("
    f" INSERT INTO wallet_transfers ({_TRANSFER_COLUMNS})"
    " SELECT transfer_id, state, decode(spec, 'hex'), legs, posted_legs, amount,"
    " posted_amount, code, created_at, resolved_at"
    f" FROM jsonb_to_recordset(%(new_transfers)s::jsonb) AS x({_TRANSFER_RECORD})"
    " RETURNING 1),"
    " changed_transfers AS ("
    " UPDATE wallet_transfers AS t"
    " SET state = x.state, posted_legs = x.posted_legs, posted_amount = x.posted_amount,"
    " resolved_at = x.resolved_at"
    f" FROM jsonb_to_recordset(%(changed_transfers)s::jsonb) AS x({_RESOLUTION_RECORD})"
    " WHERE t.transfer_id = x.transfer_id RETURNING 1),"
    " new_entries AS ("
    " INSERT INTO wallet_entries (account_id, player_id, account_kind, transfer_id,"
    " entry_type, amount, posted_after, available_after, code, memo, occurred_at)"
    " SELECT x.account_id, x.player_id, x.account_kind, x.transfer_id, x.entry_type,"
    " x.amount, x.posted_after + coalesce(c.off_posted, 0),"
    " x.available_after + coalesce(c.off_available, 0), x.code, x.memo, x.occurred_at"
    " FROM jsonb_array_elements(%(entries)s::jsonb) WITH ORDINALITY AS e(doc, ord)"
    " CROSS JOIN LATERAL jsonb_to_record(e.doc) AS x(account_id text, player_id text,"
    " account_kind int, transfer_id text, entry_type int, amount bigint, posted_after bigint,"
    " available_after bigint, code text, memo text, occurred_at timestamptz)"
    " LEFT JOIN changed_accounts AS c ON c.account_id = x.account_id"
    " ORDER BY e.ord RETURNING 1)"
    " SELECT (SELECT count(*) FROM new_accounts), (SELECT count(*) FROM changed_accounts),"
    " (SELECT count(*) FROM new_transfers), (SELECT count(*) FROM changed_transfers),"
    " (SELECT count(*) FROM new_entries)"
)


def _json_resolution(t: d.Transfer, stamps: dict[datetime, str]) -> dict[str, Any]:
    return {
        "transfer_id": t.transfer_id,
        "state": int(t.state),
        "posted_legs": legs_json(t.posted_legs),
        "posted_amount": t.posted_amount,
        "resolved_at": _iso(t.resolved_at, stamps) if t.resolved_at is not None else None,
    }


def _iso(at: datetime, stamps: dict[datetime, str]) -> str:
    """``at.isoformat()``, once per moment: a command's transfer and its statement lines
    share its time. (Equal moments with other UTC offsets would format differently, but
    the column is ``timestamptz``: the same instant is stored either way.)"""
    text = stamps.get(at)
    if text is None:
        text = stamps[at] = at.isoformat()
    return text


def _json_transfer(t: d.Transfer, stamps: dict[datetime, str]) -> dict[str, Any]:
    row = transfer_row(t)
    row["spec"] = row["spec"].hex()
    row["created_at"] = _iso(row["created_at"], stamps)
    if row["resolved_at"] is not None:
        row["resolved_at"] = _iso(row["resolved_at"], stamps)
    return row


def _json_entry(e: d.Entry, stamps: dict[datetime, str]) -> dict[str, Any]:
    row = entry_row(e)
    row["occurred_at"] = _iso(e.occurred_at, stamps)
    return row


@contextlib.contextmanager
def pipeline(conn: Connection) -> Iterator[bool]:
    """On PostgreSQL (psycopg 3) a pipeline on ``conn``'s driver connection: statements
    sent inside it share network round trips until one needs its result. Yields whether
    it is one (False elsewhere: nothing changes)."""
    raw = psycopg_of(conn)
    if raw is None:
        yield False
        return
    with raw.pipeline():
        yield True


def psycopg_of(conn: Connection) -> Any | None:
    """The psycopg 3 connection under ``conn`` (PostgreSQL), else None (generic path)."""
    if conn.dialect.name != "postgresql" or conn.dialect.driver != "psycopg":
        return None
    if not conn.in_transaction():
        conn.begin()  # what conn.execute() would do (autobegin)
    return conn.connection.dbapi_connection


def pg_load(
    conn: Connection,
    raw: Any,
    ids: list[str],
    tids: list[str],
    lock: bool | list[str],
    *,
    by_transfer: bool = False,
) -> d.Ledger:
    """Accounts ``ids`` and transfers ``tids`` in one pipeline. ``lock``: True = every
    account ``FOR UPDATE``; a list = only those (locked first, then all read). With
    ``by_transfer`` ``ids[0]`` is a transfer: its debited guarded accounts are locked and
    all accounts of its legs read."""
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
                    raw.cursor().execute(_PG_LOCK_TRANSFER_DEBITS, (ids[0], _UNGUARDED))
                    acc.execute(_PG_LEG_ACCOUNTS, (ids[0],))
                elif ids and isinstance(lock, list):
                    if lock:
                        raw.cursor().execute(_PG_LOCK_IDS, (lock,))
                    acc.execute(_PG_ACCOUNTS, (ids,))
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


def pg_save(
    conn: Connection,
    before: d.Ledger,
    state: d.Ledger,
    opened: list[d.AccountOpened],
    touched: set[str],
    touched_transfers: set[str],
    lines: list[d.Entry],
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
    # Relative updates (accounts that are only credited are not locked: another writer
    # may have moved them since they were read). The expected final balances travel along:
    # the database's actual ones minus them is the offset of this command's statement lines.
    changed_accounts = [
        {
            "account_id": aid,
            "dp": a.posted - b.posted,
            "dr": a.reserved - b.reserved,
            "di": a.incoming - b.incoming,
            "posted": a.posted,
            "reserved": a.reserved,
        }
        for aid in sorted(touched - new_ids)
        for a, b in ((state.accounts[aid], before.accounts[aid]),)
    ]
    tids = sorted(touched_transfers)
    stamps: dict[datetime, str] = {}
    params = {
        "new_accounts": json.dumps(new_accounts),
        "changed_accounts": json.dumps(changed_accounts),
        "new_transfers": json.dumps(
            [_json_transfer(state.transfers[t], stamps) for t in tids if t not in before.transfers]
        ),
        "changed_transfers": json.dumps(
            [_json_resolution(state.transfers[t], stamps) for t in tids if t in before.transfers]
        ),
        "entries": json.dumps([_json_entry(e, stamps) for e in lines]),
    }
    raw = psycopg_of(conn)
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
