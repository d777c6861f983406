"""Read side of registration's tables: the lobby, My Tables, entries and the counts the
metrics read (synchronous; run via asyncio.to_thread). The writes of each concept live in
:mod:`.tiers`, :mod:`.seating`, :mod:`.requests` and :mod:`.wallet_ops`."""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, bindparam, case, func, or_, select

from electric_registration.store import progress as progress_store
from electric_registration.store import tables as t
from electric_registration.store import wallet_ops


@dataclass(frozen=True)
class TierRow:
    """One buy-in tier with its live counts."""

    tier_id: str
    name: str
    buy_in_cents: int
    rake_cents: int
    seats: int
    starting_stack: int
    game_speed: str
    open_tables: int
    tables_filling: int
    players_waiting: int


#: Running tables the lobby lists per tier (the most recently started first).
RUNNING_TABLES_LISTED = 10


@dataclass(frozen=True)
class RunningTableRow:
    """A table being played, for the lobby's "watch" list."""

    table_id: str
    tier_id: str
    table_name: str
    multiplier: int
    prize_pool_cents: int
    current_hand_number: int
    started_at: datetime | None


def running_tables(conn: Connection) -> dict[str, list[RunningTableRow]]:
    """Per tier, its running tables, the most recently started first (at most
    :data:`RUNNING_TABLES_LISTED` each)."""
    # Tables start over and over; the ranking keeps the answer small whatever the history.
    rank = (
        func.row_number()
        .over(
            partition_by=t.tables.c.tier_id,
            order_by=(t.tables.c.started_at.desc(), t.tables.c.table_id),
        )
        .label("rank")
    )
    ranked = (
        select(
            t.tables.c.table_id,
            t.tables.c.tier_id,
            t.tables.c.table_name,
            t.tables.c.multiplier,
            t.tables.c.prize_pool_cents,
            t.tables.c.current_hand_number,
            t.tables.c.started_at,
            rank,
        )
        .where(t.tables.c.status == "running")
        .subquery()
    )
    out: dict[str, list[RunningTableRow]] = {}
    for r in conn.execute(
        select(ranked)
        .where(ranked.c.rank <= RUNNING_TABLES_LISTED)
        .order_by(ranked.c.tier_id, ranked.c.rank)
    ):
        out.setdefault(r.tier_id, []).append(
            RunningTableRow(
                table_id=r.table_id,
                tier_id=r.tier_id,
                table_name=r.table_name,
                multiplier=int(r.multiplier),
                prize_pool_cents=int(r.prize_pool_cents),
                current_hand_number=int(r.current_hand_number),
                started_at=r.started_at,
            )
        )
    return out


def list_tiers(conn: Connection) -> list[TierRow]:
    """Active tiers, cheapest first, with open tables and waiting players."""
    registering = t.tables.c.status == "registering"
    counts = (
        select(
            t.tables.c.tier_id,
            func.count().label("open_tables"),
            func.sum(case((t.tables.c.players_registered > 0, 1), else_=0)).label("filling"),
            func.sum(t.tables.c.players_registered).label("waiting"),
        )
        .where(registering)
        .group_by(t.tables.c.tier_id)
        .subquery()
    )
    rows = conn.execute(
        select(
            t.tiers,
            func.coalesce(counts.c.open_tables, 0),
            func.coalesce(counts.c.filling, 0),
            func.coalesce(counts.c.waiting, 0),
        )
        .select_from(t.tiers.outerjoin(counts, counts.c.tier_id == t.tiers.c.tier_id))
        .where(t.tiers.c.active == 1)
        .order_by(t.tiers.c.buy_in_cents, t.tiers.c.sort_order)
    ).all()
    return [
        TierRow(
            tier_id=r.tier_id,
            name=r.name,
            buy_in_cents=int(r.buy_in_cents),
            rake_cents=int(r.rake_cents),
            seats=int(r.seats),
            starting_stack=int(r.starting_stack),
            game_speed=r.game_speed,
            open_tables=int(r[-3]),
            tables_filling=int(r[-2]),
            players_waiting=int(r[-1]),
        )
        for r in rows
    ]


@dataclass(frozen=True)
class MyTableRow:
    """A table the player has an active entry at."""

    table_id: str
    table_name: str
    tier_id: str
    buy_in_cents: int
    seats: int
    players_registered: int
    status: str
    multiplier: int
    prize_pool_cents: int
    entry_ids: tuple[str, ...]
    current_hand_number: int = 0
    positions_paid: int = 0
    #: (share in basis points — 0 when not recorded —, cents) per paid place.
    payouts: tuple[tuple[int, int], ...] = ()
    commitment: str = ""
    seed_hex: str = ""
    paytable_version: str = ""
    entries: tuple[EntryRow, ...] = ()
    turn_seat: int = 0
    turn_deadline: datetime | None = None
    cancel_reason: str = ""
    ended_at: datetime | None = None
    progress: progress_store.SeatProgress | None = None
    #: Serialized TournamentStarted prepared at the fill (seats with display names).
    tournament_started: bytes | None = None

    @property
    def payouts_cents(self) -> tuple[int, ...]:
        return tuple(c for _, c in self.payouts)


ACTIVE_STATUSES = ("registering", "filled", "running")
ENDED_STATUSES = ("finished", "cancelled")


def _payouts(text: str | None) -> tuple[tuple[int, int], ...]:
    """``payouts_json``: ``[[bps, cents], ...]`` (older rows: ``[cents, ...]``)."""
    out: list[tuple[int, int]] = []
    for item in json.loads(text or "[]"):
        if isinstance(item, list):
            out.append((int(item[0]), int(item[1])))
        else:
            out.append((0, int(item)))
    return tuple(out)


@functools.cache
def _my_tables_query(with_ended_since: bool) -> Select[Any]:
    """My Tables' statement, built once (bound parameters ``player_id``, ``statuses`` and
    ``ended_since``): every WatchMyTables re-read ran it, and building the statement anew
    (and its cache key) was a third of its cost under the issue 16 load."""
    progress = t.seat_progress
    selected: ColumnElement[bool] = t.tables.c.status.in_(bindparam("statuses", expanding=True))
    if with_ended_since:
        selected = or_(selected, t.tables.c.ended_at >= bindparam("ended_since"))
    return (
        select(
            t.tables.c.table_id,
            t.tables.c.table_name,
            t.tables.c.tier_id,
            t.tiers.c.buy_in_cents,
            t.tables.c.seats,
            t.tables.c.players_registered,
            t.tables.c.status,
            t.tables.c.multiplier,
            t.tables.c.prize_pool_cents,
            t.tables.c.current_hand_number,
            t.tables.c.positions_paid,
            t.tables.c.payouts_json,
            t.tables.c.multiplier_seed_commitment,
            t.tables.c.multiplier_seed,
            t.tables.c.paytable_version,
            t.tables.c.turn_seat,
            t.tables.c.turn_deadline,
            t.tables.c.cancel_reason,
            t.tables.c.ended_at,
            t.tables.c.tournament_started,
            t.entries.c.entry_id,
            t.entries.c.player_id,
            t.entries.c.seat,
            t.entries.c.status.label("entry_status"),
            t.entries.c.wallet_transfer_id,
            t.entries.c.registered_at,
            t.tables.c.opened_at,
            progress.c.seat.label("progress_seat"),
            progress.c.stack.label("progress_stack"),
            progress.c.eliminated.label("progress_eliminated"),
            progress.c.finishing_place.label("progress_place"),
            progress.c.prize_cents.label("progress_prize_cents"),
        )
        .select_from(
            t.entries.join(t.tables, t.tables.c.table_id == t.entries.c.table_id)
            .join(t.tiers, t.tiers.c.tier_id == t.tables.c.tier_id)
            # The player's progress at a started table, in the same statement: one round
            # trip and one snapshot (the watch reads without a transaction, docs/registration.md).
            .outerjoin(
                progress,
                (progress.c.table_id == t.tables.c.table_id)
                & (progress.c.player_id == t.entries.c.player_id),
            )
        )
        .where(
            t.entries.c.player_id == bindparam("player_id"),
            t.entries.c.status != "unregistered",
            selected,
        )
        .order_by(t.tables.c.opened_at.desc(), t.tables.c.table_id, t.entries.c.entry_id)
    )


def my_tables(
    conn: Connection,
    player_id: str,
    *,
    include_finished: bool = False,
    offset: int,
    limit: int,
    statuses: Sequence[str] | None = None,
    ended_since: datetime | None = None,
) -> list[MyTableRow]:
    """Tables where ``player_id`` holds entries (not unregistered), newest first:
    ``statuses`` (default: active, plus ended with ``include_finished``); with
    ``ended_since``, also the tables that ended at or after it."""
    if statuses is None:
        statuses = list(ACTIVE_STATUSES) + (list(ENDED_STATUSES) if include_finished else [])
    params: dict[str, Any] = {"player_id": player_id, "statuses": list(statuses)}
    if ended_since is not None:
        params["ended_since"] = ended_since
    rows = conn.execute(_my_tables_query(ended_since is not None), params).all()
    grouped: dict[str, MyTableRow] = {}
    for r in rows:
        prev = grouped.get(r.table_id)
        entry = _entry(r, tier_id=r.tier_id, buy_in_cents=int(r.buy_in_cents))
        revealed = r.status != "registering"
        grouped[r.table_id] = MyTableRow(
            table_id=r.table_id,
            table_name=r.table_name,
            tier_id=r.tier_id,
            buy_in_cents=int(r.buy_in_cents),
            seats=int(r.seats),
            players_registered=int(r.players_registered),
            status=r.status,
            multiplier=int(r.multiplier),
            prize_pool_cents=int(r.prize_pool_cents),
            entry_ids=(*prev.entry_ids, r.entry_id) if prev else (r.entry_id,),
            current_hand_number=int(r.current_hand_number),
            positions_paid=int(r.positions_paid),
            payouts=_payouts(r.payouts_json),
            commitment=r.multiplier_seed_commitment,
            # The seed stays secret until the table filled.
            seed_hex=r.multiplier_seed if revealed else "",
            paytable_version=r.paytable_version,
            entries=(*prev.entries, entry) if prev else (entry,),
            turn_seat=int(r.turn_seat),
            turn_deadline=r.turn_deadline,
            cancel_reason=r.cancel_reason or "",
            ended_at=r.ended_at,
            tournament_started=(
                bytes(r.tournament_started) if r.tournament_started is not None else None
            ),
            progress=(
                progress_store.SeatProgress(
                    int(r.progress_seat),
                    int(r.progress_stack),
                    bool(r.progress_eliminated),
                    int(r.progress_place),
                    int(r.progress_prize_cents),
                )
                if r.progress_seat is not None
                else None
            ),
        )
    return list(grouped.values())[offset : offset + limit]


@dataclass(frozen=True)
class EntryRow:
    """One entry as the API shows it."""

    entry_id: str
    player_id: str
    table_id: str
    tier_id: str
    seat: int
    buy_in_cents: int
    status: str
    wallet_transfer_id: str
    registered_at: datetime


def _entry(r: Any, *, tier_id: str, buy_in_cents: int) -> EntryRow:
    m = r._mapping
    return EntryRow(
        entry_id=m["entry_id"],
        player_id=m["player_id"],
        table_id=m["table_id"],
        tier_id=tier_id,
        seat=int(m["seat"]),
        buy_in_cents=buy_in_cents,
        status=m["entry_status"] if "entry_status" in m else m["status"],
        wallet_transfer_id=m["wallet_transfer_id"],
        registered_at=m["registered_at"],
    )


def entries_by_id(conn: Connection, entry_ids: Sequence[str]) -> list[EntryRow]:
    """Entries with their tier and buy-in, in the order of ``entry_ids``."""
    if not entry_ids:
        return []
    rows = conn.execute(
        select(t.entries, t.tables.c.tier_id, t.tiers.c.buy_in_cents)
        .select_from(
            t.entries.join(t.tables, t.tables.c.table_id == t.entries.c.table_id).join(
                t.tiers, t.tiers.c.tier_id == t.tables.c.tier_id
            )
        )
        .where(t.entries.c.entry_id.in_(list(entry_ids)))
    ).all()
    by_id = {
        r.entry_id: _entry(r, tier_id=r.tier_id, buy_in_cents=int(r.buy_in_cents)) for r in rows
    }
    return [by_id[e] for e in entry_ids if e in by_id]


def table_players(conn: Connection, table_ids: Sequence[str]) -> set[str]:
    """Players holding active entries at any of ``table_ids``."""
    if not table_ids:
        return set()
    return set(
        conn.execute(
            select(t.entries.c.player_id).where(
                t.entries.c.table_id.in_(list(table_ids)),
                t.entries.c.status != "unregistered",
            )
        ).scalars()
    )


# ------------------------------------------------------------------------------ metrics

#: Every status a registration table can have (always reported, 0 when none).
TABLE_STATUSES = ("registering", "filled", "running", "finished", "cancelled")


def pending_wallet_ops(conn: Connection) -> int:
    """Wallet calls owed and not yet done."""
    q = select(func.count()).select_from(t.wallet_ops).where(t.wallet_ops.c.status == "pending")
    return int(conn.execute(q).scalar_one())


def unfinished_attempts(conn: Connection) -> int:
    """Register attempts still reserving or being rolled back."""
    q = (
        select(func.count())
        .select_from(t.requests)
        .where(t.requests.c.status.in_(("reserving", "voiding")))
    )
    return int(conn.execute(q).scalar_one())


def tables_by_status(conn: Connection) -> dict[str, int]:
    """Tables per lifecycle status (every status present, 0 when none)."""
    counts = dict.fromkeys(TABLE_STATUSES, 0)
    q = select(t.tables.c.status, func.count()).group_by(t.tables.c.status)
    for status, n in conn.execute(q):
        counts[str(status)] = int(n)
    return counts


def oldest_pending_wallet_op(conn: Connection) -> datetime | None:
    """When the oldest wallet call still owed was recorded (None: nothing owed)."""
    return wallet_ops.oldest_pending_at(conn)
