"""Every query over registration's casino tables (synchronous; the caller owns the
transaction)."""

from __future__ import annotations

from datetime import UTC, datetime

from electric_domain.lobby.casino import CasinoGame, CasinoTable, Session
from sqlalchemy import Connection, delete, func, insert, or_, select, update

from electric_registration.store import tables as t

S = t.casino_sessions
T = t.casino_tables


def _aware(at: datetime) -> datetime:
    """SQLite hands back naive datetimes; every stored time is UTC."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def _session(r: object) -> Session:
    m = r._mapping  # type: ignore[attr-defined]
    return Session(
        session_id=m["session_id"],
        table_id=m["table_id"],
        game=CasinoGame(m["game"]),
        player_id=m["player_id"],
        seat=int(m["seat"]),
        started_at=_aware(m["started_at"]),
        last_active_at=_aware(m["last_active_at"]),
    )


def tables(conn: Connection) -> dict[str, CasinoTable]:
    """Every open casino table by id."""
    rows = conn.execute(select(T.c.table_id, T.c.game, T.c.owner_id)).all()
    return {r.table_id: CasinoTable(r.table_id, CasinoGame(r.game), r.owner_id) for r in rows}


def next_number(conn: Connection, game: CasinoGame) -> int:
    """The number the game's next table gets."""
    q = select(func.coalesce(func.max(T.c.number), 0)).where(T.c.game == game.value)
    return int(conn.execute(q).scalar_one()) + 1


def add_table(conn: Connection, table: CasinoTable, number: int, at: datetime) -> None:
    """Open a table (the primary key / unique number make a concurrent twin conflict)."""
    conn.execute(
        insert(T).values(
            table_id=table.table_id,
            game=table.game.value,
            number=number,
            owner_id=table.owner_id,
            opened_at=at,
        )
    )


def sessions_for(conn: Connection, table_id: str, player_id: str) -> list[Session]:
    """Open sessions at ``table_id`` and of ``player_id`` (what a join needs)."""
    q = select(S).where(or_(S.c.table_id == table_id, S.c.player_id == player_id))
    return [_session(r) for r in conn.execute(q.order_by(S.c.table_id, S.c.seat)).all()]


def player_sessions(conn: Connection, player_id: str) -> list[Session]:
    """A player's open sessions."""
    q = select(S).where(S.c.player_id == player_id).order_by(S.c.started_at, S.c.session_id)
    return [_session(r) for r in conn.execute(q).all()]


def all_sessions(conn: Connection) -> list[Session]:
    """Every open session."""
    return [_session(r) for r in conn.execute(select(S).order_by(S.c.session_id)).all()]


def idle_since(conn: Connection, cutoff: datetime) -> list[Session]:
    """Sessions whose last activity is at or before ``cutoff``."""
    q = select(S).where(S.c.last_active_at <= cutoff).order_by(S.c.last_active_at)
    return [_session(r) for r in conn.execute(q).all()]


def seated_counts(conn: Connection) -> dict[str, int]:
    """Players seated per table."""
    q = select(S.c.table_id, func.count()).group_by(S.c.table_id)
    return {r[0]: int(r[1]) for r in conn.execute(q).all()}


def add_session(conn: Connection, s: Session) -> None:
    """A new seat and session."""
    conn.execute(
        insert(S).values(
            session_id=s.session_id,
            table_id=s.table_id,
            game=s.game.value,
            player_id=s.player_id,
            seat=s.seat,
            started_at=s.started_at,
            last_active_at=s.last_active_at,
        )
    )


def touch(conn: Connection, s: Session) -> None:
    """Store the session's last activity."""
    conn.execute(
        update(S).where(S.c.session_id == s.session_id).values(last_active_at=s.last_active_at)
    )


def release(conn: Connection, s: Session, *, idle_cutoff: datetime | None = None) -> bool:
    """Delete the session (with ``idle_cutoff``: only if still idle since then). True when
    this call released it."""
    q = delete(S).where(S.c.session_id == s.session_id)
    if idle_cutoff is not None:
        q = q.where(S.c.last_active_at <= idle_cutoff)
    return bool(conn.execute(q).rowcount == 1)


def touch_activity(conn: Connection, player_id: str, table_id: str, at: datetime) -> int:
    """Activity of ``player_id`` at ``at`` (at ``table_id``, or every table when empty):
    ``last_active_at`` moves forward only. The number of sessions refreshed."""
    q = update(S).where(S.c.player_id == player_id, S.c.last_active_at < at)
    if table_id:
        q = q.where(S.c.table_id == table_id)
    return int(conn.execute(q.values(last_active_at=at)).rowcount)
