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
   ONE statement writes every projection row (the projector's ``store.write`` of the
   batch's fold: relative balance updates, transfers, statement lines), ONE insert every
   event and outbox row (encoded by ``codec.prepare``), and the COMMIT — the second round
   trip.

If anything unexpected happens in step 2's write (or a pre-check of an expected version
fails, which the locks make impossible), the write is rolled back to a savepoint and the
commands run one by one (``Wallet._command``'s own path), each failing alone.
"""

from __future__ import annotations

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
from .store.postgres import _ACCOUNT_COLUMNS, _TRANSFER_COLUMNS, _UNGUARDED, psycopg_of
from .store.rows import account_from_row, transfer_from_row

Decide = Callable[[d.Ledger, datetime], tuple[Any, list[d.Event]]]

# Id lists travel as ONE text[] literal each (``_text_array``), cast in SQL: psycopg's
# list dumping runs Python per element and was ~6% of this executor's time.
_UNGUARDED_KINDS = "'{" + ",".join(str(k) for k in _UNGUARDED) + "}'::smallint[]"
_LOCK_IDS = (
    "SELECT account_id FROM wallet_accounts WHERE account_id = ANY(%s::text[])"
    " ORDER BY account_id FOR UPDATE"
)
_TRANSFERS = f"SELECT {_TRANSFER_COLUMNS} FROM wallet_transfers WHERE transfer_id = ANY(%s::text[])"
# The accounts a resolution touches are those of its transfer's legs (legs never change).
# Sub-selects go through ``= ANY(ARRAY(…))``: evaluated once, then primary-key lookups
# (``IN (…)`` / ``OR`` over them made PostgreSQL hash-join a scan of wallet_accounts,
# whose cost grows with the number of players).
_LEGS = (
    "SELECT leg.value ->> side.k FROM wallet_transfers AS t,"
    " jsonb_array_elements(t.legs::jsonb) AS leg, (VALUES (0), (1)) AS side(k)"
    " WHERE t.transfer_id = ANY(%s::text[])"
)
# The accounts to lock whatever their kind (first parameter) and the guarded debits of the
# transfers being resolved (the legs' element 0), in ONE statement: the rows that two
# statements would lock, one statement less to send.
_LOCK_IDS_AND_RESOLVED_DEBITS = (
    "SELECT account_id FROM wallet_accounts WHERE account_id = ANY(%s::text[] || ARRAY("
    " SELECT a.account_id FROM wallet_accounts AS a WHERE a.account_id = ANY(ARRAY("
    " SELECT leg.value ->> 0 FROM wallet_transfers AS t,"
    " jsonb_array_elements(t.legs::jsonb) AS leg WHERE t.transfer_id = ANY(%s::text[])))"
    f" AND a.kind <> ALL({_UNGUARDED_KINDS}))) ORDER BY account_id FOR UPDATE"
)
_ACCOUNTS_AND_LEGS = (
    f"SELECT {_ACCOUNT_COLUMNS} FROM wallet_accounts"
    f" WHERE account_id = ANY(%s::text[] || ARRAY({_LEGS})) ORDER BY account_id"
)


def _text_array(items: Iterable[str]) -> str:
    """The PostgreSQL ``text[]`` literal of ``items``: every element double-quoted, with
    ``\\`` and ``"`` backslash-escaped (the array input syntax), so any string round-trips."""
    quoted = ('"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"' for s in items)
    return "{" + ",".join(quoted) + "}"


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


def execute_batch(conn: Connection, cmds: list[WalletCommand], commit: bool) -> list[object] | None:
    """The group-commit executor of :class:`WalletCommand` (module doc): per command its
    result or its error; None to run them one by one (not PostgreSQL, or the write failed)."""
    raw = psycopg_of(conn)
    if raw is None:
        return None
    tids = sorted({t for c in cmds for t in (*c.transfer_ids, c.resolves) if t})
    resolving = sorted({c.resolves for c in cmds if c.resolves})
    # Each command's accounts, asked once (a resolution's come from its transfer's legs).
    plans: list[set[str] | None] = []
    known: set[str] = set()
    known_locks: set[str] = set()
    for c in cmds:
        if c.resolves:
            plans.append(None)
            continue
        ids = set(c.account_ids(conn))
        plans.append(ids)
        known |= ids
        known_locks |= ids if c.locks is None else set(c.locks())
    streams = sorted(
        {f"wallet-account-{a}" for a in known} | {f"wallet-transfer-{t}" for t in tids}
    )
    locks_param = _text_array(sorted(known_locks))
    resolving_param = _text_array(resolving)
    # ONE round trip: the position lock first, then the row locks (known debits, and the
    # debits of the transfers being resolved, found through their legs), then the reads.
    with (
        raw.cursor() as head,
        raw.cursor() as lock,
        raw.cursor(row_factory=namedtuple_row) as tr,
        raw.cursor(row_factory=namedtuple_row) as acc,
        raw.cursor() as tp,
    ):
        with raw.pipeline():
            head.execute(LOCK_HEAD)
            if resolving:
                # One statement for both kinds of row lock: a statement less to send.
                lock.execute(_LOCK_IDS_AND_RESOLVED_DEBITS, (locks_param, resolving_param))
            elif known_locks:
                lock.execute(_LOCK_IDS, (locks_param,))
            if tids:
                tr.execute(_TRANSFERS, (_text_array(tids),))
            acc.execute(_ACCOUNTS_AND_LEGS, (_text_array(sorted(known)), resolving_param))
            tp.execute(TIPS, {"ids": _text_array(streams)})
        head_row = head.fetchone()
        transfer_rows = tr.fetchall() if tids else []
        account_rows = acc.fetchall()
        tips = {row[0]: (int(row[1]), row[2]) for row in tp.fetchall()}
    if head_row is None:
        return None
    before = d.Ledger(
        {r.account_id: account_from_row(r) for r in account_rows},
        {r.transfer_id: transfer_from_row(r) for r in transfer_rows},
    )
    ledger = before.clone()
    outcomes: list[object] = []
    appends: list[PreparedAppend] = []
    # The projection changes are recorded as the batch decides (statement lines against
    # the running ledger just before each event): no second replay of the batch to save.
    changes = store.Changes()
    for c, plan in zip(cmds, plans, strict=True):
        if plan is None:
            t = before.transfers.get(c.resolves)  # as read: legs never change
            if t is None:
                outcomes.append(d.NotFound(f"transfer {c.resolves} does not exist"))
                continue
            plan = {a for leg in t.legs for a in (leg.debit, leg.credit)}
        # The command decides on copies of only what it touches: refused, it leaves the
        # running ledger as it was.
        part = d.Ledger(
            {a: d.copy_account(ledger.accounts[a]) for a in plan if a in ledger.accounts},
            {
                t: d.copy_transfer(ledger.transfers[t])
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
            # The projector's fold (store.projections) and the mapper (codec): the same
            # two the one-by-one path uses, so a batch writes what it would have written.
            changes.add(event, ledger)
            appends.append(
                codec.prepare(
                    c.events,
                    event,
                    correlation_id=c.correlation_id,
                    causation_id=c.causation_id,
                )
            )
        outcomes.append(result)
    if not appends:
        if commit:
            raw.commit()
        return outcomes
    checked, params = cmds[0].events.bulk_params(appends, int(head_row[0]), tips)
    if any(isinstance(o, BaseException) for o in checked):
        return None  # cannot happen under the locks; the one-by-one path sorts it out
    try:
        with raw.cursor() as cur, raw.pipeline():
            cur.execute("SAVEPOINT electric_wallet_batch")
            store.write(conn, before, ledger, changes, queue=True)
            cur.execute(INSERT, params)
            # COMMIT (which commits the savepoint's work: no RELEASE then) is queued as a
            # statement, not ``raw.commit()``: psycopg's commit syncs the pipeline and
            # waits, and the pipeline's exit then syncs again — an extra, empty round trip
            # per batch. Either way the statements after a failed one are skipped.
            cur.execute("COMMIT" if commit else "RELEASE SAVEPOINT electric_wallet_batch")
    except psycopg.Error:
        raw.execute("ROLLBACK TO SAVEPOINT electric_wallet_batch")
        return None
    return outcomes
