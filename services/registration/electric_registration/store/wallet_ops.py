"""Wallet calls owed by committed decisions (``registration_wallet_ops``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, insert, select, update

from electric_registration.store import tables as t


@dataclass(frozen=True)
class OwedOp:
    """One owed wallet call, as stored (accounts are wallet account ids)."""

    op_id: str
    table_id: str
    entry_id: str
    seq: int
    #: post | move | void | unwind
    kind: str
    transfer_id: str
    from_account: str
    to_account: str
    amount_cents: int
    code: str
    #: Correlation id of the decision that owes the op.
    correlation_id: str = ""
    #: Id of the event that owes the op (TableFilled, PlayerUnregistered, TableCancelled).
    causation_id: str = ""


def add(conn: Connection, op: OwedOp, at: datetime) -> None:
    """Owe ``op`` (same transaction as the decision that owes it)."""
    conn.execute(
        insert(t.wallet_ops).values(
            op_id=op.op_id,
            table_id=op.table_id,
            entry_id=op.entry_id,
            seq=op.seq,
            kind=op.kind,
            transfer_id=op.transfer_id,
            from_account=op.from_account,
            to_account=op.to_account,
            amount_cents=op.amount_cents,
            code=op.code,
            correlation_id=op.correlation_id,
            causation_id=op.causation_id,
            status="pending",
            attempts=0,
            last_error="",
            created_at=at,
        )
    )


def pending(conn: Connection, table_id: str | None) -> list[OwedOp]:
    """Pending ops of one table (or all), by table then ``seq``."""
    w = t.wallet_ops
    q = select(w).where(w.c.status == "pending")
    if table_id is not None:
        q = q.where(w.c.table_id == table_id)
    return [
        OwedOp(
            r.op_id,
            r.table_id,
            r.entry_id,
            int(r.seq),
            r.kind,
            r.transfer_id,
            r.from_account,
            r.to_account,
            int(r.amount_cents),
            r.code,
            r.correlation_id,
            r.causation_id,
        )
        for r in conn.execute(q.order_by(w.c.table_id, w.c.seq))
    ]


def mark(conn: Connection, op_id: str, *, done: bool, error: str, at: datetime) -> bool:
    """Count an attempt of ``op_id``: done, or failed with ``error``. Only a pending op
    changes (a cancelled one stays cancelled); True when it did."""
    values: dict[str, object] = {"attempts": t.wallet_ops.c.attempts + 1}
    if done:
        values.update(status="done", done_at=at)
    else:
        values["last_error"] = error[:2000]
    w = t.wallet_ops
    result = conn.execute(
        update(w).where(w.c.op_id == op_id, w.c.status == "pending").values(values)
    )
    return bool(result.rowcount)


def unpaid_count(conn: Connection, table_id: str) -> int:
    """Ops of a table that collect its buy-ins and are not done (voids excluded)."""
    w = t.wallet_ops
    return int(
        conn.execute(
            select(func.count())
            .select_from(w)
            .where(w.c.table_id == table_id, w.c.status != "done", w.c.kind != "void")
        ).scalar_one()
    )


def cancel_pending(conn: Connection, table_id: str) -> int:
    """The table was cancelled: its pending ops will not run (their wallet effect, if any, is
    undone by the unwind ops). Returns how many."""
    w = t.wallet_ops
    result = conn.execute(
        update(w)
        .where(w.c.table_id == table_id, w.c.status == "pending", w.c.kind.in_(("post", "move")))
        .values(status="cancelled")
    )
    return int(result.rowcount or 0)


def is_pending(conn: Connection, op_id: str) -> bool:
    """Whether ``op_id`` is still owed (not done, not cancelled)."""
    q = select(t.wallet_ops.c.status).where(t.wallet_ops.c.op_id == op_id)
    return conn.execute(q).scalar_one_or_none() == "pending"


def oldest_pending_at(conn: Connection) -> datetime | None:
    """When the oldest owed op was recorded (None when nothing is owed)."""
    w = t.wallet_ops
    q = select(func.min(w.c.created_at)).where(w.c.status == "pending")
    value = conn.execute(q).scalar_one_or_none()
    return value if isinstance(value, datetime) else None


def causal_ids(conn: Connection, table_id: str) -> tuple[str, str]:
    """``(correlation_id, causation_id)`` of the buy-in collection a filled table owes (its
    first post op: the TableFilled that owes it); ("", "") when there is none."""
    w = t.wallet_ops
    row = conn.execute(
        select(w.c.correlation_id, w.c.causation_id)
        .where(w.c.table_id == table_id, w.c.kind == "post")
        .order_by(w.c.seq)
        .limit(1)
    ).first()
    return (str(row[0]), str(row[1])) if row is not None else ("", "")
