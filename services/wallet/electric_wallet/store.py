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

import copy
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

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
    ledger = d.Ledger()
    if ids:
        query = (
            select(accounts).where(accounts.c.account_id.in_(ids)).order_by(accounts.c.account_id)
        )
        if lock:
            query = query.with_for_update()
        for row in conn.execute(query):
            ledger.accounts[row.account_id] = account_from_row(row)
    tids = sorted(set(transfer_ids))
    if tids:
        for row in conn.execute(select(transfers).where(transfers.c.transfer_id.in_(tids))):
            ledger.transfers[row.transfer_id] = transfer_from_row(row)
    return ledger


def load_transfer(conn: Connection, transfer_id: str) -> d.Transfer | None:
    row = conn.execute(select(transfers).where(transfers.c.transfer_id == transfer_id)).first()
    return transfer_from_row(row) if row is not None else None


def save(conn: Connection, before: d.Ledger, events: Sequence[d.Event]) -> d.Ledger:
    """Write the projections of ``events`` (already decided on a copy of ``before``):
    account rows, transfer rows and statement entries. Returns the state after them."""
    state = copy.deepcopy(before)
    new_accounts: list[dict[str, Any]] = []
    lines: list[Entry] = []
    touched: set[str] = set()
    touched_transfers: set[str] = set()
    for event in events:
        lines += entries_for(event, state)
        if isinstance(event, d.AccountOpened):
            new_accounts.append(
                {
                    "account_id": event.account_id,
                    "kind": int(event.kind),
                    "player_id": event.player_id,
                    "posted": 0,
                    "reserved": 0,
                    "incoming": 0,
                    "opened_at": event.occurred_at,
                }
            )
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
    if new_accounts:
        conn.execute(insert(accounts), new_accounts)
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


def wipe(conn: Connection) -> None:
    """Delete every projection row (before a rebuild)."""
    for table in (entries, transfers, accounts):
        conn.execute(delete(table))
