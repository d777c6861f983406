"""Reads and writes of the casino rows (synchronous; run via asyncio.to_thread).

The round rows (``table_casino_rounds``) and the UTH players owed a result
(``table_casino_uth_players``) are only read here: the projector writes them from the
round's events (``electric_table.store.projector``, live through ``journal.append_round``).
Written here: the bets and their owed wallet calls, the request de-duplication rows, and the
seats registration's events give (``consumers``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from electric_eventlog.once import insert_once
from sqlalchemy import Connection, and_, delete, insert, or_, select, update

from electric_table.store import tables as t

OPEN, SETTLED, VOIDED = t.ROUND_OPEN, t.ROUND_SETTLED, t.ROUND_VOIDED
#: ``game`` of a live UTH round.
UTH = t.UTH_GAME
#: ``owed_op`` of a bet: reservation asked for but its BetPlaced not yet appended.
INTENT = "intent"
POST, VOID = "post", "void"


@dataclass(frozen=True)
class RoundRow:
    round_id: str
    table_id: str
    game: str
    player_id: str
    game_number: str
    status: str
    acknowledged: bool
    seed_hex: str
    stream_version: int


@dataclass(frozen=True)
class BetRow:
    bet_id: str
    round_id: str
    player_id: str
    spot: str
    amount_cents: int
    owed_op: str
    op_done: bool


@dataclass(frozen=True)
class RequestRow:
    rpc: str
    round_id: str
    code: str
    message: str


def _round(r: object) -> RoundRow:
    return RoundRow(
        r.round_id,  # type: ignore[attr-defined]
        r.table_id,  # type: ignore[attr-defined]
        r.game,  # type: ignore[attr-defined]
        r.player_id,  # type: ignore[attr-defined]
        r.game_number,  # type: ignore[attr-defined]
        r.status,  # type: ignore[attr-defined]
        bool(r.acknowledged),  # type: ignore[attr-defined]
        r.seed_hex,  # type: ignore[attr-defined]
        int(r.stream_version),  # type: ignore[attr-defined]
    )


def get_round(conn: Connection, round_id: str) -> RoundRow | None:
    row = conn.execute(select(t.casino_rounds).where(t.casino_rounds.c.round_id == round_id))
    first = row.first()
    return None if first is None else _round(first)


def open_round_on(conn: Connection, table_id: str, player_id: str) -> RoundRow | None:
    c = t.casino_rounds.c
    row = conn.execute(
        select(t.casino_rounds).where(
            c.table_id == table_id, c.player_id == player_id, c.status == OPEN
        )
    ).first()
    return None if row is None else _round(row)


def last_game_number(conn: Connection, table_id: str) -> str | None:
    c = t.casino_rounds.c
    row = conn.execute(
        select(c.game_number)
        .where(c.table_id == table_id)
        .order_by(c.created_at.desc(), c.game_number.desc())
        .limit(1)
    ).first()
    return None if row is None else str(row.game_number)


def unfinished(conn: Connection, player_id: str) -> list[RoundRow]:
    """Rounds with unresolved bets (open) or an unseen result, oldest first."""
    c = t.casino_rounds.c
    rows = conn.execute(
        select(t.casino_rounds)
        .where(c.player_id == player_id, or_(c.status == OPEN, c.acknowledged.is_(False)))
        .order_by(c.created_at, c.round_id)
    ).all()
    return [_round(r) for r in rows]


def open_rounds(conn: Connection) -> list[RoundRow]:
    c = t.casino_rounds.c
    return [_round(r) for r in conn.execute(select(t.casino_rounds).where(c.status == OPEN))]


def count_unfinished(conn: Connection) -> int:
    """Open or unseen THB rounds, plus (round, player) pairs of live UTH rounds not yet
    acknowledged by the player."""
    c = t.casino_rounds.c
    rows = conn.execute(
        select(c.round_id).where(or_(c.status == OPEN, c.acknowledged.is_(False)))
    ).all()
    u = t.casino_uth_players.c
    uth = conn.execute(select(u.round_id).where(u.acknowledged.is_(False))).all()
    return len(rows) + len(uth)


# ---------------------------------------------------------------------------------- bets


def bets(conn: Connection, round_id: str) -> list[BetRow]:
    rows = conn.execute(
        select(t.casino_bets).where(t.casino_bets.c.round_id == round_id).order_by("bet_id")
    ).all()
    return [_bet(r) for r in rows]


def _bet(r: object) -> BetRow:
    return BetRow(
        r.bet_id,  # type: ignore[attr-defined]
        r.round_id,  # type: ignore[attr-defined]
        r.player_id,  # type: ignore[attr-defined]
        r.spot,  # type: ignore[attr-defined]
        int(r.amount_cents),  # type: ignore[attr-defined]
        r.owed_op,  # type: ignore[attr-defined]
        bool(r.op_done),  # type: ignore[attr-defined]
    )


def record_intent(conn: Connection, b: BetRow) -> bool:
    """Before the wallet reservation: the bet may exist in the wallet from now on. False
    when the bet's row exists and is no longer an intent: an earlier attempt of the same
    command left an intent that was resolved (auto-voided) since, so reserving it again
    would hold money that nothing resolves (found by the chaos run, seed 11)."""
    insert_once(
        conn,
        t.casino_bets,
        {"bet_id": b.bet_id},
        {
            "round_id": b.round_id,
            "player_id": b.player_id,
            "spot": b.spot,
            "amount_cents": b.amount_cents,
            "owed_op": INTENT,
            "op_done": False,
            "last_error": "",
        },
    )
    c = t.casino_bets.c
    owed_op: str = conn.execute(select(c.owed_op).where(c.bet_id == b.bet_id)).scalar_one()
    return owed_op == INTENT


def forget_intent(conn: Connection, bet_id: str) -> None:
    """The wallet refused the reservation: the bet never existed."""
    c = t.casino_bets.c
    conn.execute(delete(t.casino_bets).where(c.bet_id == bet_id, c.owed_op == INTENT))


class IntentResolved(Exception):
    """A bet to place whose intent is no longer an intent: the auto-void rule (another
    instance's sweep or recovery) resolved it meanwhile, so its reservation is voided or
    owed a void. The placing transaction must roll back."""


def mark_placed(conn: Connection, bet_ids: Sequence[str]) -> None:
    """In the transaction appending BetPlaced: the reservation belongs to a placed bet.
    Raises :class:`IntentResolved` when one of them is no longer an intent."""
    wanted = set(bet_ids)
    if wanted:
        c = t.casino_bets.c
        done = conn.execute(
            update(t.casino_bets)
            .where(c.bet_id.in_(wanted), c.owed_op == INTENT)
            .values(owed_op="")
        )
        if done.rowcount != len(wanted):
            raise IntentResolved(f"{len(wanted) - done.rowcount} bet(s) already resolved")


def owe(conn: Connection, ops: dict[str, str]) -> None:
    """Settlement owes ``post`` / ``void`` on each bet (only once: set while still unowed)."""
    c = t.casino_bets.c
    for bet_id, op in ops.items():
        conn.execute(
            update(t.casino_bets)
            .where(c.bet_id == bet_id, or_(c.owed_op == "", c.owed_op == INTENT))
            .values(owed_op=op)
        )


def intents(conn: Connection) -> list[BetRow]:
    rows = conn.execute(select(t.casino_bets).where(t.casino_bets.c.owed_op == INTENT)).all()
    return [_bet(r) for r in rows]


def owed(conn: Connection, round_id: str | None) -> list[BetRow]:
    c = t.casino_bets.c
    cond = and_(c.owed_op.in_((POST, VOID)), c.op_done.is_(False))
    if round_id is not None:
        cond = and_(cond, c.round_id == round_id)
    rows = conn.execute(select(t.casino_bets).where(cond).order_by(c.round_id, c.bet_id)).all()
    return [_bet(r) for r in rows]


def done(conn: Connection, bet_id: str) -> bool:
    c = t.casino_bets.c
    res = conn.execute(
        update(t.casino_bets).where(c.bet_id == bet_id, c.op_done.is_(False)).values(op_done=True)
    )
    return res.rowcount == 1


def failed(conn: Connection, bet_id: str, error: str) -> None:
    conn.execute(
        update(t.casino_bets)
        .where(t.casino_bets.c.bet_id == bet_id)
        .values(last_error=error[:2000])
    )


# ------------------------------------------------------------------------------ requests


def get_request(conn: Connection, player_id: str, request_id: str) -> RequestRow | None:
    c = t.casino_requests.c
    row = conn.execute(
        select(t.casino_requests).where(c.player_id == player_id, c.request_id == request_id)
    ).first()
    return None if row is None else RequestRow(row.rpc, row.round_id, row.code, row.message)


def get_requests(
    conn: Connection, keys: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], RequestRow]:
    """The stored answers of several (player or operator, request id) keys, in ONE query
    (a UTH pass carries up to 64 commands)."""
    if not keys:
        return {}
    c = t.casino_requests.c
    wanted = or_(*(and_(c.player_id == p, c.request_id == r) for p, r in dict.fromkeys(keys)))
    rows = conn.execute(select(t.casino_requests).where(wanted)).all()
    return {
        (str(row.player_id), str(row.request_id)): RequestRow(
            row.rpc, row.round_id, row.code, row.message
        )
        for row in rows
    }


def insert_request(conn: Connection, player_id: str, request_id: str, req: RequestRow) -> None:
    conn.execute(
        insert(t.casino_requests).values(
            player_id=player_id,
            request_id=request_id,
            rpc=req.rpc,
            round_id=req.round_id,
            code=req.code,
            message=req.message,
            created_at=datetime.now(UTC),
        )
    )


# --------------------------------------------------------------------------------- seats


def take_seat(
    conn: Connection, table_id: str, player_id: str, game: str, seat: int, session_id: str
) -> None:
    c = t.casino_seats.c
    conn.execute(delete(t.casino_seats).where(c.table_id == table_id, c.player_id == player_id))
    conn.execute(
        insert(t.casino_seats).values(
            table_id=table_id, player_id=player_id, game=game, seat=seat, session_id=session_id
        )
    )


def release_seat(conn: Connection, table_id: str, player_id: str, session_id: str) -> None:
    c = t.casino_seats.c
    conn.execute(
        delete(t.casino_seats).where(
            c.table_id == table_id, c.player_id == player_id, c.session_id == session_id
        )
    )


def seated(conn: Connection, table_id: str, player_id: str) -> bool:
    c = t.casino_seats.c
    row = conn.execute(
        select(c.seat).where(c.table_id == table_id, c.player_id == player_id)
    ).first()
    return row is not None


# ------------------------------------------------------------------------ live UTH tables


def seated_players(conn: Connection, table_id: str) -> list[str]:
    """The players seated at ``table_id``, in seat order."""
    c = t.casino_seats.c
    rows = conn.execute(
        select(c.player_id).where(c.table_id == table_id).order_by(c.seat, c.player_id)
    ).all()
    return [str(r.player_id) for r in rows]


def tables_with_seats(conn: Connection, game: str) -> list[str]:
    c = t.casino_seats.c
    rows = conn.execute(select(c.table_id).where(c.game == game).distinct()).all()
    return sorted(str(r.table_id) for r in rows)


def latest_round(conn: Connection, table_id: str) -> RoundRow | None:
    """The table's most recent round (its open one, if any)."""
    c = t.casino_rounds.c
    row = conn.execute(
        select(t.casino_rounds)
        .where(c.table_id == table_id)
        .order_by((c.status == OPEN).desc(), c.created_at.desc(), c.game_number.desc())
        .limit(1)
    ).first()
    return None if row is None else _round(row)


def open_tables(conn: Connection, game: str) -> list[str]:
    c = t.casino_rounds.c
    rows = conn.execute(select(c.table_id).where(c.game == game, c.status == OPEN).distinct()).all()
    return sorted(str(r.table_id) for r in rows)


def uth_player(conn: Connection, round_id: str, player_id: str) -> bool | None:
    """Whether ``player_id`` acknowledged UTH round ``round_id`` (None: no stakes in it)."""
    u = t.casino_uth_players.c
    row = conn.execute(
        select(u.acknowledged).where(u.round_id == round_id, u.player_id == player_id)
    ).first()
    return None if row is None else bool(row.acknowledged)


def uth_unfinished(conn: Connection, player_id: str) -> list[str]:
    """The UTH rounds whose result ``player_id`` has not acknowledged, oldest first."""
    u = t.casino_uth_players.c
    rows = conn.execute(
        select(u.round_id)
        .where(u.player_id == player_id, u.acknowledged.is_(False))
        .order_by(u.created_at, u.round_id)
    ).all()
    return [str(r.round_id) for r in rows]
