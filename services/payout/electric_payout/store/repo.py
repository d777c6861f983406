"""Every query over payout's tables (synchronous; the caller owns the transaction).

Tournaments and results are stored as the events that announced them (serialized), plus the
columns the queries need; prizes are rows with their credit bookkeeping. The only writes
here are of the consumed facts and of a credit's failed attempts: every row payout's own
events determine (prizes, their credits, the decision on a result) is written by the
projector (:mod:`.projections`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from electric_eventlog.once import insert_once
from sqlalchemy import Connection, func, select, update

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


# ------------------------------------------------------------------------------ reads (API)


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


# ------------------------------------------------------------------------------ consumed facts


@dataclass(frozen=True)
class TournamentRow:
    """What TournamentStarted said, as stored."""

    table_id: str
    table_size: int
    #: Serialized registration TournamentStarted.
    started: bytes


def add_tournament(
    conn: Connection,
    *,
    table_id: str,
    buy_in_cents: int,
    prize_pool_cents: int,
    multiplier: int,
    paytable_version: str,
    table_size: int,
    started: bytes,
    at: datetime,
) -> None:
    """Remember a TournamentStarted (once: a second one of the table is ignored)."""
    insert_once(
        conn,
        t.tournaments,
        {"tournament_id": table_id},
        {
            "table_id": table_id,
            "buy_in_cents": buy_in_cents,
            "prize_pool_cents": prize_pool_cents,
            "multiplier": multiplier,
            "paytable_version": paytable_version,
            "table_size": table_size,
            "started": started,
            "received_at": at,
        },
    )


def get_tournament(conn: Connection, table_id: str) -> TournamentRow | None:
    """The stored TournamentStarted of a table, if consumed."""
    r = conn.execute(select(t.tournaments).where(t.tournaments.c.tournament_id == table_id)).first()
    if r is None:
        return None
    return TournamentRow(r.table_id, int(r.table_size), bytes(r.started))


def add_hand_button(conn: Connection, table_id: str, hand_number: int, button_seat: int) -> None:
    """Remember a hand's button seat (once)."""
    insert_once(
        conn,
        t.hand_buttons,
        {"table_id": table_id, "hand_number": hand_number},
        {"button_seat": button_seat},
    )


def hand_buttons(conn: Connection, table_id: str) -> dict[int, int]:
    """Button seat by hand number of a table."""
    return {
        int(r.hand_number): int(r.button_seat)
        for r in conn.execute(select(t.hand_buttons).where(t.hand_buttons.c.table_id == table_id))
    }


def add_result(
    conn: Connection,
    *,
    table_id: str,
    finished: bytes,
    source_event_id: str,
    at: datetime,
    correlation_id: str = "",
) -> None:
    """Remember a TournamentFinished (once)."""
    insert_once(
        conn,
        t.results,
        {"tournament_id": table_id},
        {
            "finished": finished,
            "source_event_id": source_event_id,
            "received_at": at,
            "correlation_id": correlation_id,
        },
    )


@dataclass(frozen=True)
class ResultRow:
    """A stored TournamentFinished awaiting its decision."""

    #: Serialized table TournamentFinished.
    finished: bytes
    source_event_id: str
    #: The TournamentFinished's correlation id ("" for results stored before migration 0005).
    correlation_id: str = ""


def lock_undecided_result(conn: Connection, table_id: str) -> ResultRow | None:
    """The table's result, locked, when neither awarded nor held yet."""
    r = conn.execute(
        select(t.results).where(t.results.c.tournament_id == table_id).with_for_update()
    ).first()
    if r is None or r.awarded_at is not None or r.held_at is not None:
        return None
    return ResultRow(bytes(r.finished), r.source_event_id, r.correlation_id)


def undecided_results(conn: Connection) -> list[str]:
    """Tables whose start and result are both in but not decided yet."""
    return list(
        conn.execute(
            select(t.results.c.tournament_id)
            .join(t.tournaments, t.tournaments.c.tournament_id == t.results.c.tournament_id)
            .where(t.results.c.awarded_at.is_(None), t.results.c.held_at.is_(None))
        ).scalars()
    )


# ------------------------------------------------------------------------------ prizes


@dataclass(frozen=True)
class OwedCredit:
    """An awarded prize whose credit is owed."""

    table_id: str
    place: int
    player_id: str
    amount_cents: int
    transfer_key: str


def owed_credits(conn: Connection, table_id: str | None, limit: int = 200) -> list[OwedCredit]:
    """Prizes awarded and not yet credited, oldest first (of one table, or all)."""
    q = select(
        t.prizes.c.tournament_id,
        t.prizes.c.place,
        t.prizes.c.player_id,
        t.prizes.c.amount_cents,
        t.prizes.c.transfer_key,
    ).where(t.prizes.c.status == "awarded")
    if table_id is not None:
        q = q.where(t.prizes.c.tournament_id == table_id)
    rows = conn.execute(
        q.order_by(t.prizes.c.awarded_at, t.prizes.c.tournament_id, t.prizes.c.place).limit(limit)
    ).all()
    return [
        OwedCredit(r.tournament_id, int(r.place), r.player_id, int(r.amount_cents), r.transfer_key)
        for r in rows
    ]


def note_credit_failure(
    conn: Connection, table_id: str, place: int, player_id: str, error: str
) -> None:
    """Count a failed credit attempt and keep its error."""
    conn.execute(
        update(t.prizes)
        .where(
            t.prizes.c.tournament_id == table_id,
            t.prizes.c.place == place,
            t.prizes.c.player_id == player_id,
        )
        .values(attempts=t.prizes.c.attempts + 1, last_error=error[:2000])
    )


# ------------------------------------------------------------------------------ metrics


def uncredited_count(conn: Connection) -> int:
    """Prizes awarded and not yet credited."""
    q = select(func.count()).select_from(t.prizes).where(t.prizes.c.status == "awarded")
    return int(conn.execute(q).scalar_one())


def unawarded_count(conn: Connection) -> int:
    """Results neither awarded nor held (e.g. waiting for their TournamentStarted)."""
    q = (
        select(func.count())
        .select_from(t.results)
        .where(t.results.c.awarded_at.is_(None), t.results.c.held_at.is_(None))
    )
    return int(conn.execute(q).scalar_one())


def held_count(conn: Connection) -> int:
    """Tournaments held by a failed prize check."""
    q = select(func.count()).select_from(t.results).where(t.results.c.held_at.is_not(None))
    return int(conn.execute(q).scalar_one())
