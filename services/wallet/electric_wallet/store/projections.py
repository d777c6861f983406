"""Rebuilding the wallet's read models from the event log, and checking them against it.

The projections (``wallet_accounts``, ``wallet_transfers``, ``wallet_entries``) are written
in the same transaction as each append (:func:`.repository.save`). They are caches of a fold over
the wallet's events: :func:`rebuild_from_events` folds every ``electric.wallet.v1`` event of
the store through the pure ledger, :func:`rebuild_and_compare` reports every difference
between that fold and the tables (empty list = consistent), and :func:`rebuild_projections`
replaces the tables with the fold (disaster recovery, schema changes).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime

from electric_eventlog.engine import read_only
from electric_eventlog.store import EventStore
from sqlalchemy import Connection, Engine, insert, select

from .. import codec
from .. import domain as d
from .repository import wipe
from .rows import account_from_row, entry_from_row, entry_row, transfer_from_row, transfer_row
from .tables import accounts as accounts_table
from .tables import entries as entries_table
from .tables import transfers as transfers_table


@dataclass
class Fold:
    """The ledger and the statement rebuilt from events."""

    ledger: d.Ledger = field(default_factory=d.Ledger)
    entries: list[d.Entry] = field(default_factory=list)
    events: int = 0


def rebuild_from_events(conn: Connection, events: EventStore) -> Fold:
    """Fold every wallet event of the store, in global order."""
    fold = Fold()
    for envelope in events.iter_all(conn):
        if envelope.event_type not in codec.EVENT_TYPE_NAMES:
            continue
        event = codec.event_from_pb(
            events.decode(envelope), envelope.occurred_at.ToDatetime(tzinfo=UTC)
        )
        fold.entries += d.entries_for(event, fold.ledger)
        fold.ledger.apply(event)
        fold.events += 1
    return fold


def _snapshot_tx(engine: Engine) -> Connection:
    if engine.dialect.name == "postgresql":
        return engine.connect().execution_options(isolation_level="REPEATABLE READ")
    return read_only(engine.connect())


def rebuild_and_compare(engine: Engine, events: EventStore) -> list[str]:
    """Differences between the projections and a fold of the events (one consistent
    snapshot of both). An empty list means the read models are exactly the fold."""
    with _snapshot_tx(engine) as conn:
        fold = rebuild_from_events(conn, events)
        accounts = {r.account_id: account_from_row(r) for r in conn.execute(select(accounts_table))}
        transfers = {
            r.transfer_id: transfer_from_row(r) for r in conn.execute(select(transfers_table))
        }
        entries = [
            entry_from_row(r)
            for r in conn.execute(select(entries_table).order_by(entries_table.c.entry_id))
        ]
    diffs: list[str] = []
    for aid in sorted(set(accounts) | set(fold.ledger.accounts)):
        want, got = fold.ledger.accounts.get(aid), accounts.get(aid)
        if want != got:
            diffs.append(f"account {aid}: events say {want}, projection has {got}")
    for tid in sorted(set(transfers) | set(fold.ledger.transfers)):
        want_t, got_t = fold.ledger.transfers.get(tid), transfers.get(tid)
        if want_t != got_t:
            diffs.append(f"transfer {tid}: events say {want_t}, projection has {got_t}")
    # Statement lines are compared per account, in order: the order of lines within one
    # account is the order of the locked commits on it (entry ids across accounts are
    # allocated before the global position lock and may interleave differently).
    want_by: dict[str, list[d.Entry]] = defaultdict(list)
    got_by: dict[str, list[d.Entry]] = defaultdict(list)
    for e in fold.entries:
        want_by[e.account_id].append(e)
    for e in entries:
        got_by[e.account_id].append(d.Entry(**{**vars(e), "entry_id": 0}))
    for aid in sorted(set(want_by) | set(got_by)):
        want_l, got_l = want_by.get(aid, []), got_by.get(aid, [])
        if want_l != got_l:
            first = next(
                (i for i, (a, b) in enumerate(zip(want_l, got_l, strict=False)) if a != b),
                min(len(want_l), len(got_l)),
            )
            diffs.append(
                f"statement of {aid}: {len(want_l)} lines from events, {len(got_l)} in the "
                f"table, first difference at line {first}"
            )
    return diffs


def rebuild_projections(engine: Engine, events: EventStore) -> Fold:
    """Replace the projection tables with a fold of the events (one transaction)."""
    with engine.begin() as conn:
        fold = rebuild_from_events(conn, events)
        wipe(conn)
        for a in fold.ledger.accounts.values():
            conn.execute(
                insert(accounts_table).values(
                    account_id=a.account_id,
                    kind=int(a.kind),
                    player_id=a.player_id,
                    posted=a.posted,
                    reserved=a.reserved,
                    incoming=a.incoming,
                    opened_at=_opened_at(conn, events, a.account_id),
                )
            )
        for t in fold.ledger.transfers.values():
            conn.execute(insert(transfers_table).values(**transfer_row(t)))
        if fold.entries:
            conn.execute(insert(entries_table), [entry_row(e) for e in fold.entries])
    return fold


def _opened_at(conn: Connection, events: EventStore, account_id: str) -> datetime:
    (env,) = events.read_stream(conn, f"wallet-account-{account_id}", limit=1)
    return env.occurred_at.ToDatetime(tzinfo=UTC)
