"""Wallet commands of one group-commit batch decided together (PostgreSQL; docs/wallet.md,
"Group commit: a batch is one ledger step").

The event store's group commit gathers the commands that arrive while a transaction runs
(:meth:`electric_eventlog.EventStore.transact`). Run one by one, each command would cost
its own round trips (savepoint, lock + read, write + append). :func:`execute_batch` does
the whole batch in two, the way TigerBeetle applies a batch of transfers:

1. one round trip: the position lock (taken first, as for every grouped batch: no
   deadlocks), ``FOR UPDATE`` on the accounts the commands debit whose kind must stay
   non-negative (the same rule as one command: ``store.guarded``; for a post/void the
   debits of its transfer's legs, found by a subquery), then every transfer the commands
   name, every account they touch and the tips of the event streams they may append to;
2. in memory, each command in batch order decides on a copy of the accounts and transfers
   it touches, taken from the batch's running ledger — so it sees the effects of the
   commands before it, exactly as if they had committed before it; a command that is
   refused (insufficient funds, wrong state …) changes nothing and gets its error; then
   ONE statement writes every projection row (relative balance updates, statement lines),
   ONE insert every event and outbox row, and the COMMIT — the second round trip.

If anything unexpected happens in step 2's write (or a pre-check of an expected version
fails, which the locks make impossible), the write is rolled back to a savepoint and the
commands run one by one (``Wallet._command``'s own path), each failing alone.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from electric_eventlog.pgbatch import INSERT, LOCK_HEAD, TIPS, PreparedAppend
from electric_eventlog.store import EventStore
from psycopg.rows import namedtuple_row
from sqlalchemy import Connection

from . import codec, store
from . import domain as d
from .store.postgres import (
    _ACCOUNT_COLUMNS,
    _PG_LOCK_IDS,
    _PG_TRANSFERS,
    _UNGUARDED,
    psycopg_of,
)
from .store.rows import account_from_row, transfer_from_row

Decide = Callable[[d.Ledger, datetime], tuple[Any, list[d.Event]]]

# The accounts a resolution touches are those of its transfer's legs (legs never change).
_LEGS = (
    "SELECT leg.value ->> side.k FROM wallet_transfers AS t,"
    " jsonb_array_elements(t.legs::jsonb) AS leg, (VALUES (0), (1)) AS side(k)"
    " WHERE t.transfer_id = ANY(%s)"
)
_LOCK_RESOLVED_DEBITS = (
    "SELECT account_id FROM wallet_accounts WHERE account_id IN ("
    " SELECT leg.value ->> 0 FROM wallet_transfers AS t,"
    " jsonb_array_elements(t.legs::jsonb) AS leg WHERE t.transfer_id = ANY(%s))"
    " AND kind <> ALL(%s) ORDER BY account_id FOR UPDATE"
)
_ACCOUNTS_AND_LEGS = (
    f"SELECT {_ACCOUNT_COLUMNS} FROM wallet_accounts"
    f" WHERE account_id = ANY(%s) OR account_id IN ({_LEGS}) ORDER BY account_id"
)


@dataclass(frozen=True)
class WalletCommand:
    """One command as data (built in the caller's thread)."""

    events: EventStore
    account_ids: Callable[[Connection], Iterable[str]]
    transfer_ids: tuple[str, ...]
    decide: Decide
    clock: Callable[[], datetime]
    #: The transfer a post/void resolves ("" for other commands).
    resolves: str
    #: The accounts to lock (None: all it touches).
    locks: Callable[[], Iterable[str]] | None
    correlation_id: str
    causation_id: str


def resolves_stream(event: d.Event) -> bool:
    """True for the resolution of a pending transfer (appended at expected version 1)."""
    return isinstance(event, d.TransferVoided) or (
        isinstance(event, d.TransferPosted) and event.was_pending
    )


def execute_batch(conn: Connection, cmds: list[WalletCommand], commit: bool) -> list[object] | None:
    """The group-commit executor of :class:`WalletCommand` (module doc): per command its
    result or its error; None to run them one by one (not PostgreSQL, or the write failed)."""
    raw = psycopg_of(conn)
    if raw is None:
        return None
    tids = sorted({t for c in cmds for t in (*c.transfer_ids, c.resolves) if t})
    resolving = sorted({c.resolves for c in cmds if c.resolves})
    known: set[str] = set()
    known_locks: set[str] = set()
    for c in cmds:
        if not c.resolves:
            ids = set(c.account_ids(conn))
            known |= ids
            known_locks |= ids if c.locks is None else set(c.locks())
    streams = sorted(
        {f"wallet-account-{a}" for a in known} | {f"wallet-transfer-{t}" for t in tids}
    )
    # ONE round trip: the position lock first, then the row locks (known debits, and the
    # debits of the transfers being resolved, found through their legs), then the reads.
    with (
        raw.cursor() as head,
        raw.cursor(row_factory=namedtuple_row) as tr,
        raw.cursor(row_factory=namedtuple_row) as acc,
        raw.cursor() as tp,
    ):
        with raw.pipeline():
            head.execute(LOCK_HEAD)
            if known_locks:
                raw.cursor().execute(_PG_LOCK_IDS, (sorted(known_locks),))
            if resolving:
                raw.cursor().execute(_LOCK_RESOLVED_DEBITS, (resolving, _UNGUARDED))
            if tids:
                tr.execute(_PG_TRANSFERS, (tids,))
            acc.execute(_ACCOUNTS_AND_LEGS, (sorted(known), resolving))
            tp.execute(TIPS, {"ids": streams})
        head_row = head.fetchone()
        transfer_rows = tr.fetchall() if tids else []
        account_rows = acc.fetchall()
        tips = {row[0]: (int(row[1]), row[2]) for row in tp.fetchall()}
    if head_row is None:
        return None
    transfers = {r.transfer_id: transfer_from_row(r) for r in transfer_rows}
    plans: list[set[str] | Exception] = []
    for c in cmds:
        if not c.resolves:
            plans.append(set(c.account_ids(conn)))
            continue
        t = transfers.get(c.resolves)
        if t is None:
            plans.append(d.NotFound(f"transfer {c.resolves} does not exist"))
        else:
            plans.append({a for leg in t.legs for a in (leg.debit, leg.credit)})
    before = d.Ledger()
    for row in account_rows:
        before.accounts[row.account_id] = account_from_row(row)
    before.transfers.update(transfers)
    ledger = before.clone()
    outcomes: list[object] = []
    decided: list[d.Event] = []
    appends: list[PreparedAppend] = []
    for c, plan in zip(cmds, plans, strict=True):
        if isinstance(plan, Exception):
            outcomes.append(plan)
            continue
        part = d.Ledger(
            {a: copy.copy(ledger.accounts[a]) for a in plan if a in ledger.accounts},
            {
                t: copy.copy(ledger.transfers[t])
                for t in (*c.transfer_ids, c.resolves)
                if t in ledger.transfers
            },
        )
        try:
            result, events = c.decide(part, c.clock())
        except Exception as exc:  # refused: nothing changes, the others go on
            outcomes.append(exc)
            continue
        for event in events:
            ledger.apply(event)
            appends.append(
                c.events.prepare(
                    codec.stream_of(event),
                    1 if resolves_stream(event) else 0,
                    [codec.event_to_pb(event)],
                    correlation_id=c.correlation_id,
                    causation_id=c.causation_id,
                    occurred_at=event.occurred_at,
                )
            )
        decided.extend(events)
        outcomes.append(result)
    if not decided:
        if commit:
            raw.commit()
        return outcomes
    checked, params = cmds[0].events.bulk_params(appends, int(head_row[0]), tips)
    if any(isinstance(o, BaseException) for o in checked):
        return None  # cannot happen under the locks; the one-by-one path sorts it out
    try:
        with raw.cursor() as cur, raw.pipeline():
            cur.execute("SAVEPOINT electric_wallet_batch")
            store.save(conn, before, decided, queue=True)
            cur.execute(INSERT, params)
            cur.execute("RELEASE SAVEPOINT electric_wallet_batch")
            if commit:
                raw.commit()
    except psycopg.Error:
        raw.execute("ROLLBACK TO SAVEPOINT electric_wallet_batch")
        return None
    return outcomes
