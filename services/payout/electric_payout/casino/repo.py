"""Every query over payout's casino tables (synchronous; the caller owns the transaction).

Writes: the round row of a round that owes nothing (a de-duplication record, no event) and
a credit's failed attempts; the wins, their credits and the round of a round that owes are
written by the projector (``electric_payout.store.projections``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, insert, select, update

from electric_payout.store import tables as t

W = t.casino_wins


@dataclass(frozen=True)
class WinRow:
    """One casino win as stored."""

    round_id: str
    table_id: str
    game: str
    player_id: str
    bet_kind: str
    stake_cents: int
    win_cents: int
    stake_transfer_id: str
    status: str
    transfer_key: str
    wallet_transfer_id: str
    owed_at: datetime
    credited_at: datetime | None
    attempts: int

    @property
    def amount_cents(self) -> int:
        """Stake + win."""
        return self.stake_cents + self.win_cents


def _row(r: object) -> WinRow:
    m = r._mapping  # type: ignore[attr-defined]
    return WinRow(
        round_id=m["round_id"],
        table_id=m["table_id"],
        game=m["game"],
        player_id=m["player_id"],
        bet_kind=m["bet_kind"],
        stake_cents=int(m["stake_cents"]),
        win_cents=int(m["win_cents"]),
        stake_transfer_id=m["stake_transfer_id"],
        status=m["status"],
        transfer_key=m["transfer_key"],
        wallet_transfer_id=m["wallet_transfer_id"],
        owed_at=m["owed_at"],
        credited_at=m["credited_at"],
        attempts=int(m["attempts"]),
    )


def round_outcome(conn: Connection, round_id: str) -> str | None:
    """``settled`` / ``voided`` once a round is decided, else None."""
    q = select(t.casino_rounds.c.outcome).where(t.casino_rounds.c.round_id == round_id)
    return conn.execute(q).scalar_one_or_none()


def add_round(
    conn: Connection,
    *,
    round_id: str,
    table_id: str,
    game: str,
    outcome: str,
    reason: str,
    source_event_id: str,
    at: datetime,
) -> None:
    """Record the round's decision (the primary key makes a second one conflict)."""
    conn.execute(
        insert(t.casino_rounds).values(
            round_id=round_id,
            table_id=table_id,
            game=game,
            outcome=outcome,
            reason=reason,
            source_event_id=source_event_id,
            decided_at=at,
        )
    )


def owed_wins(conn: Connection, round_id: str | None, limit: int = 500) -> list[WinRow]:
    """Wins owed and not yet credited, oldest first (of one round, or all)."""
    q = select(W).where(W.c.status == "owed")
    if round_id is not None:
        q = q.where(W.c.round_id == round_id)
    q = q.order_by(W.c.owed_at, W.c.round_id, W.c.player_id, W.c.bet_kind).limit(limit)
    return [_row(r) for r in conn.execute(q).all()]


def note_failure(conn: Connection, w: WinRow, error: str) -> None:
    """Count a failed credit attempt and keep its error."""
    conn.execute(
        update(W)
        .where(W.c.round_id == w.round_id, W.c.player_id == w.player_id, W.c.bet_kind == w.bet_kind)
        .values(attempts=W.c.attempts + 1, last_error=error[:2000])
    )


def player_wins(
    conn: Connection, player_id: str, *, offset: int, limit: int
) -> tuple[list[WinRow], int]:
    """A player's wins, newest first (a page), and the total (stake + win) of all of them."""
    q = (
        select(W)
        .where(W.c.player_id == player_id)
        .order_by(W.c.owed_at.desc(), W.c.round_id.desc(), W.c.bet_kind)
        .offset(offset)
        .limit(limit)
    )
    rows = [_row(r) for r in conn.execute(q).all()]
    total = conn.execute(
        select(func.coalesce(func.sum(W.c.stake_cents + W.c.win_cents), 0)).where(
            W.c.player_id == player_id
        )
    ).scalar_one()
    return rows, int(total)


def round_wins(conn: Connection, round_id: str) -> list[WinRow]:
    """Every win of a round."""
    q = select(W).where(W.c.round_id == round_id).order_by(W.c.player_id, W.c.bet_kind)
    return [_row(r) for r in conn.execute(q).all()]


def owed_count(conn: Connection) -> int:
    """Casino wins owed and not yet credited."""
    return int(
        conn.execute(select(func.count()).select_from(W).where(W.c.status == "owed")).scalar_one()
    )
