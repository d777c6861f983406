"""Queries over payout's tables (synchronous; run via asyncio.to_thread)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, select

from electric_payout.store import tables as t


@dataclass(frozen=True)
class PrizeRow:
    """One prize."""

    tournament_id: str
    table_id: str
    place: int
    player_id: str
    entry_id: str
    amount_cents: int
    buy_in_cents: int
    prize_pool_cents: int
    multiplier: int
    paytable_version: str
    status: str
    wallet_transfer_id: str
    awarded_at: datetime
    credited_at: datetime | None


def _row(r: object) -> PrizeRow:
    m = r._mapping  # type: ignore[attr-defined]
    return PrizeRow(
        tournament_id=m["tournament_id"],
        table_id=m["table_id"],
        place=int(m["place"]),
        player_id=m["player_id"],
        entry_id=m["entry_id"],
        amount_cents=int(m["amount_cents"]),
        buy_in_cents=int(m["buy_in_cents"]),
        prize_pool_cents=int(m["prize_pool_cents"]),
        multiplier=int(m["multiplier"]),
        paytable_version=m["paytable_version"],
        status=m["status"],
        wallet_transfer_id=m["wallet_transfer_id"],
        awarded_at=m["awarded_at"],
        credited_at=m["credited_at"],
    )


def tournament_prizes(conn: Connection, tournament_id: str) -> list[PrizeRow]:
    """Prizes of a tournament by place."""
    rows = conn.execute(
        select(t.prizes)
        .where(t.prizes.c.tournament_id == tournament_id)
        .order_by(t.prizes.c.place, t.prizes.c.player_id)
    ).all()
    return [_row(r) for r in rows]


def player_winnings(
    conn: Connection, player_id: str, *, offset: int, limit: int
) -> tuple[list[PrizeRow], int]:
    """A page of the player's prizes (newest first) and the total of all of them, in cents."""
    rows = conn.execute(
        select(t.prizes)
        .where(t.prizes.c.player_id == player_id)
        .order_by(t.prizes.c.awarded_at.desc(), t.prizes.c.tournament_id, t.prizes.c.place)
        .offset(offset)
        .limit(limit)
    ).all()
    total = conn.execute(
        select(func.coalesce(func.sum(t.prizes.c.amount_cents), 0)).where(
            t.prizes.c.player_id == player_id
        )
    ).scalar_one()
    return [_row(r) for r in rows], int(total)
