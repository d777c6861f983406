"""The wallet's one projector: every row the wallet reads (``wallet_accounts``,
``wallet_transfers``, ``wallet_entries``) is written by ONE fold over its own events.

* :class:`Changes` is the fold: each event is folded into the ledger (``Ledger.apply``)
  and its statement lines (``entries_for``) and the rows it touches are recorded;
* :func:`write` writes what a run of the fold changed, and nothing else writes these
  tables.

Used live inside the append's transaction — :func:`project` for one command
(``handlers.py``), ``Changes`` + :func:`write` for a group-commit batch (``batch.py``,
which folds each command's events as it decides) — and for rebuilds:
:func:`rebuild_from_events` folds every wallet event of the store from an empty ledger,
:func:`rebuild_projections` writes that fold with the same :func:`write` (as if one run
opened every account), and :func:`rebuild_and_compare` reports every difference between
the fold and the tables (empty list = consistent). The handlers write no rows of their own.

The wallet has no request de-duplication rows, owed work or withheld secrets: a transfer
id is the idempotency key, enforced by the transfer's stream (expected version 0 for a
creation, 1 for a resolution: ``codec.expected_version``) and answered from the transfer
row, which is a projection like the others. So the whole of the wallet's state rebuilds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace

from electric_eventlog.engine import read_only
from electric_eventlog.store import EventStore
from sqlalchemy import Connection, Engine, bindparam, delete, insert, select, update

from .. import codec
from .. import domain as d
from .postgres import pg_save, psycopg_of
from .rows import account_from_row, entry_from_row, entry_row, transfer_from_row, transfer_row
from .tables import accounts, entries, transfers

#: Rows per statement when a rebuild writes its fold (bounded statements and documents,
#: whatever the size of the log).
REBUILD_CHUNK = 2_000


# --------------------------------------------------------------------------- the fold


@dataclass
class Changes:
    """What a run of events writes to the projections: the accounts it opens, the
    accounts and transfers it touches and its statement lines, in order."""

    opened: list[d.AccountOpened] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)
    touched_transfers: set[str] = field(default_factory=set)
    lines: list[d.Entry] = field(default_factory=list)

    def add(self, event: d.Event, state: d.Ledger) -> None:
        """Record ``event`` and fold it into ``state`` (the ledger just before it)."""
        self.lines += d.entries_for(event, state)
        if isinstance(event, d.AccountOpened):
            self.opened.append(event)
        else:
            legs: list[d.Leg] = []
            if isinstance(event, d.TransferVoided):
                self.touched_transfers.add(event.transfer_id)
            else:
                self.touched_transfers.add(event.request.transfer_id)
                legs += event.legs
            if not isinstance(event, d.TransferPending):
                legs += event.released_legs
            for leg in legs:
                self.touched.update((leg.debit, leg.credit))
        state.apply(event)


def project(
    conn: Connection, before: d.Ledger, events: Sequence[d.Event], *, queue: bool = False
) -> d.Ledger:
    """The live use of the projector, in the command's transaction: fold ``events``
    (already decided on a copy of ``before``, the state as read) and write their rows.
    Returns the state after them.

    ``queue`` (PostgreSQL, inside :func:`pipeline`): send the write without waiting for
    its result; it travels with the next statement that syncs (the event store's
    position allocation), and an error in it is raised there."""
    state = before.clone()
    changes = Changes()
    for event in events:
        changes.add(event, state)
    write(conn, before, state, changes, queue=queue)
    return state


def write(
    conn: Connection, before: d.Ledger, state: d.Ledger, changes: Changes, *, queue: bool = False
) -> None:
    """Write ``changes`` (``before`` = the state as read, ``state`` = after them): the
    only writer of the wallet's rows (live: :func:`project`, and the batch executor,
    which folds as it decides; rebuilds: :func:`rebuild_projections`, from an empty
    ``before``). Accounts opened by the run are inserted with their final balances, the
    others updated relatively (``posted = posted + Δ``: accounts that are only credited
    are not locked); new transfers are inserted, resolved ones updated; lines appended."""
    opened, touched, lines = changes.opened, changes.touched, changes.lines
    touched_transfers = changes.touched_transfers
    if psycopg_of(conn) is not None:
        pg_save(conn, before, state, opened, touched, touched_transfers, lines, queue)
        return
    if opened:
        conn.execute(
            insert(accounts),
            [
                {
                    "account_id": event.account_id,
                    "kind": int(event.kind),
                    "player_id": event.player_id,
                    "posted": state.accounts[event.account_id].posted,
                    "reserved": state.accounts[event.account_id].reserved,
                    "incoming": state.accounts[event.account_id].incoming,
                    "opened_at": event.occurred_at,
                }
                for event in opened
            ],
        )
    new_ids = {event.account_id for event in opened}
    if touched - new_ids:
        # Relative, like the PostgreSQL path (there credited accounts are not locked);
        # SQLite's single writer makes the lines' balances exact without an offset.
        a = accounts.c
        conn.execute(
            update(accounts)
            .where(a.account_id == bindparam("aid"))
            .values(
                posted=a.posted + bindparam("dp"),
                reserved=a.reserved + bindparam("dr"),
                incoming=a.incoming + bindparam("di"),
            ),
            [
                {
                    "aid": aid,
                    "dp": state.accounts[aid].posted - before.accounts[aid].posted,
                    "dr": state.accounts[aid].reserved - before.accounts[aid].reserved,
                    "di": state.accounts[aid].incoming - before.accounts[aid].incoming,
                }
                for aid in sorted(touched - new_ids)
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


def wipe(conn: Connection) -> None:
    """Delete every projection row (before a rebuild)."""
    for table in (entries, transfers, accounts):
        conn.execute(delete(table))


# --------------------------------------------------------------------------- rebuilds


@dataclass
class Fold:
    """The ledger and the changes folded from every wallet event of the store."""

    ledger: d.Ledger = field(default_factory=d.Ledger)
    changes: Changes = field(default_factory=Changes)
    events: int = 0

    @property
    def entries(self) -> list[d.Entry]:
        """The statement lines, in global order."""
        return self.changes.lines


def rebuild_from_events(conn: Connection, events: EventStore) -> Fold:
    """Fold every wallet event of the store, in global order (the projector's fold from
    an empty ledger)."""
    fold = Fold()
    for event in codec.read_all(events, conn):
        fold.changes.add(event, fold.ledger)
        fold.events += 1
    return fold


def _pieces(changes: Changes, size: int) -> Iterator[Changes]:
    """A fold from an empty ledger cut into runs of at most ``size`` rows of each table.
    Every account such a fold touches it also opened (``Ledger.apply`` knows no other),
    so each piece only inserts: the pieces written in order are the whole written once."""
    for start in range(0, max(len(changes.opened), len(changes.lines)), size):
        yield Changes(
            opened=changes.opened[start : start + size], lines=changes.lines[start : start + size]
        )
    tids = sorted(changes.touched_transfers)
    for start in range(0, len(tids), size):
        yield Changes(touched_transfers=set(tids[start : start + size]))


def rebuild_projections(engine: Engine, events: EventStore) -> Fold:
    """Replace the projection tables with a fold of the events (one transaction), written
    by the live path's :func:`write`."""
    with engine.begin() as conn:
        fold = rebuild_from_events(conn, events)
        wipe(conn)
        for piece in _pieces(fold.changes, REBUILD_CHUNK):
            write(conn, d.Ledger(), fold.ledger, piece)
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
        got_accounts = {r.account_id: account_from_row(r) for r in conn.execute(select(accounts))}
        got_transfers = {
            r.transfer_id: transfer_from_row(r) for r in conn.execute(select(transfers))
        }
        got_entries = [
            entry_from_row(r) for r in conn.execute(select(entries).order_by(entries.c.entry_id))
        ]
    diffs: list[str] = []
    for aid in sorted(set(got_accounts) | set(fold.ledger.accounts)):
        want, got = fold.ledger.accounts.get(aid), got_accounts.get(aid)
        if want != got:
            diffs.append(f"account {aid}: events say {want}, projection has {got}")
    for tid in sorted(set(got_transfers) | set(fold.ledger.transfers)):
        want_t, got_t = fold.ledger.transfers.get(tid), got_transfers.get(tid)
        if want_t != got_t:
            diffs.append(f"transfer {tid}: events say {want_t}, projection has {got_t}")
    # Statement lines are compared per account, in order: the order of lines within one
    # account is the order of the locked commits on it (entry ids across accounts are
    # allocated before the global position lock and may interleave differently).
    want_by: dict[str, list[d.Entry]] = defaultdict(list)
    got_by: dict[str, list[d.Entry]] = defaultdict(list)
    for e in fold.entries:
        want_by[e.account_id].append(e)
    for e in got_entries:
        got_by[e.account_id].append(replace(e, entry_id=0))
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
