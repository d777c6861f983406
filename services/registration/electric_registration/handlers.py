"""Registration's decisions, each one database transaction: own rows + events + outbox.

Everything here is synchronous (run through ``asyncio.to_thread``) and never calls another
service: wallet calls are made by :mod:`electric_registration.registrar` before a decision
(reservations) or recorded here as owed work (``registration_wallet_ops``) and carried out
after the commit by :mod:`electric_registration.wallet_work`.

Serialisation: every decision that changes seats locks the tier row first (``SELECT … FOR
UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` serialises all writers), so two
registrations racing for the last seat of a table run one after the other. Each table's
stream is appended with the version recorded in its row (optimistic concurrency, a backstop:
a conflict raises ``ConcurrencyError``, the caller retries the whole transaction), and partial
unique indexes forbid two active entries of one player or in one seat at a table.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from electric.common.v1 import errors_pb2, money_pb2, tournament_pb2
from electric.registration.v1 import events_pb2
from electric_domain.tournament import TournamentConfig
from electric_domain.tournament.fairness import (
    commitment,
    draw_multiplier,
    initial_button_index,
)
from electric_domain.tournament.prizes import place_amounts
from electric_eventlog import NO_STREAM, EventStore, utc_now
from electric_platform.errors import (
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    NotFound,
    PermissionDenied,
)
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from sqlalchemy import Connection, Engine, func, insert, select, update

from electric_registration.store import repo
from electric_registration.store import tables as t

#: Wallet accounts (docs/wallet.md).
ESCROW = "house:tournament_escrow"
PRIZE_RESERVE = "house:prize_reserve"
RAKE = "house:rake"
#: Most entries one Register may buy.
MAX_ENTRIES = 10
#: Namespace of the deterministic entry ids (uuid5 of request key, attempt and index).
ENTRY_NAMESPACE = uuid.UUID("5d0c1b7e-2f43-4b0e-9c51-6f1f0c6f7a10")


def usd(cents: int) -> money_pb2.Money:
    """Money in US cents."""
    return money_pb2.Money(cents=cents, currency="USD")


def table_stream(table_id: str) -> str:
    """Event stream of a registration table."""
    return f"registration-table-{table_id}"


def request_key(player_id: str, request_id: str) -> str:
    """Idempotency key of a Register: one per (player, request id)."""
    return hashlib.sha256(f"{player_id}\0{request_id}".encode()).hexdigest()


def entry_ids_for(key: str, attempt: int, entries: int) -> list[str]:
    """Entry ids of one attempt of a request: deterministic, so a retry reuses them (and the
    wallet transfer ids ``buyin-<entry_id>`` derived from them)."""
    return [str(uuid.uuid5(ENTRY_NAMESPACE, f"{key}:{attempt}:{i}")) for i in range(entries)]


def buyin_transfer_id(entry_id: str) -> str:
    """Pending wallet transfer holding an entry's buy-in (player funds → escrow)."""
    return f"buyin-{entry_id}"


def _info(reason: int, **meta: str) -> errors_pb2.ErrorInfo:
    return errors_pb2.ErrorInfo(reason=reason, domain="registration", metadata=meta)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ tiers


def tier_id_for(buy_in_cents: int) -> str:
    """Stable tier id of a buy-in, e.g. ``electric-500`` for $5."""
    return f"electric-{buy_in_cents}"


def _dollars(cents: int) -> str:
    return f"${cents // 100}" if cents % 100 == 0 else f"${cents // 100}.{cents % 100:02d}"


def sync_tiers(engine: Engine, config: TournamentConfig) -> None:
    """Make the lobby's tiers the configuration's buy-ins (rake, seats, starting stack);
    tiers no longer configured are deactivated (their history stays)."""
    with engine.begin() as conn:
        existing = {r.tier_id for r in conn.execute(select(t.tiers.c.tier_id))}
        wanted = set()
        for i, tier in enumerate(config.buy_ins):
            tid = tier_id_for(tier.buy_in_cents)
            wanted.add(tid)
            values = {
                "name": f"{_dollars(tier.buy_in_cents)} Electric Poker",
                "buy_in_cents": tier.buy_in_cents,
                "rake_cents": tier.rake_cents,
                "seats": config.seats,
                "starting_stack": config.starting_stack,
                "sort_order": i,
                "game_speed": "hyper_turbo",
                "active": 1,
            }
            if tid in existing:
                conn.execute(update(t.tiers).where(t.tiers.c.tier_id == tid).values(**values))
            else:
                conn.execute(insert(t.tiers).values(tier_id=tid, **values))
        stale = existing - wanted
        if stale:
            conn.execute(update(t.tiers).where(t.tiers.c.tier_id.in_(stale)).values(active=0))


@dataclass(frozen=True)
class Tier:
    """What a decision needs of a tier."""

    tier_id: str
    name: str
    buy_in_cents: int
    rake_cents: int
    seats: int
    starting_stack: int


def load_tier(conn: Connection, tier_id: str) -> Tier:
    """The active tier ``tier_id``; NOT_FOUND otherwise."""
    r = conn.execute(
        select(t.tiers).where(t.tiers.c.tier_id == tier_id, t.tiers.c.active == 1)
    ).first()
    if r is None:
        raise NotFound(
            f"unknown buy-in tier {tier_id!r} (see ListLobby)",
            detail=errors_pb2.ResourceInfo(resource_type="tier", resource_id=tier_id),
        )
    return Tier(
        r.tier_id,
        r.name,
        int(r.buy_in_cents),
        int(r.rake_cents),
        int(r.seats),
        int(r.starting_stack),
    )


# ------------------------------------------------------------------------------ tables


def _append(
    store: EventStore,
    conn: Connection,
    table_id: str,
    version: int,
    events: Sequence[Message],
    *,
    correlation_id: str,
    at: datetime,
) -> int:
    """Append to the table's stream at ``version`` (optimistic); the new version."""
    stored = store.append(
        conn,
        table_stream(table_id),
        version if version > 0 else NO_STREAM,
        list(events),
        correlation_id=correlation_id,
        causation_id=correlation_id,
        occurred_at=at,
    )
    return stored[-1].stream_version


def open_table(
    conn: Connection,
    store: EventStore,
    config: TournamentConfig,
    tier: Tier,
    *,
    correlation_id: str,
    at: datetime,
) -> str:
    """Open a table of ``tier``: a fresh OS-CSPRNG seed, committed by SHA-256 in TableOpened
    and kept secret in the table's row until it fills. Returns the table id."""
    number = (
        int(
            conn.execute(
                select(func.count()).select_from(t.tables).where(t.tables.c.tier_id == tier.tier_id)
            ).scalar_one()
        )
        + 1
    )
    table_id = str(uuid.uuid4())
    seed = secrets.token_bytes(32)
    event = events_pb2.TableOpened(
        table_id=table_id,
        table_name=f"{tier.name} #{number}",
        tier_id=tier.tier_id,
        buy_in=usd(tier.buy_in_cents),
        rake=usd(tier.rake_cents),
        seats=tier.seats,
        multiplier_seed_commitment=commitment(seed),
        paytable_version=config.version,
        starting_stack=tier.starting_stack,
    )
    version = _append(store, conn, table_id, 0, [event], correlation_id=correlation_id, at=at)
    repo.insert_table(
        conn,
        table_id=table_id,
        tier_id=tier.tier_id,
        table_name=event.table_name,
        seats=tier.seats,
        seed_hex=seed.hex(),
        commitment=event.multiplier_seed_commitment,
        paytable_version=config.version,
        stream_version=version,
        opened_at=at,
    )
    return table_id


def ensure_open_tables(
    engine: Engine, store: EventStore, config: TournamentConfig, *, correlation_id: str
) -> list[str]:
    """Open a table for every active tier that has none open (idempotent). Returns the ids."""
    with engine.connect() as conn:
        tiers = [tier.tier_id for tier in repo.list_tiers(conn)]
    opened: list[str] = []
    for tier_id in tiers:
        with engine.begin() as conn:
            repo.lock_tier(conn, tier_id)
            if repo.open_table_count(conn, tier_id) > 0:
                continue
            tier = load_tier(conn, tier_id)
            opened.append(
                open_table(conn, store, config, tier, correlation_id=correlation_id, at=utc_now())
            )
    return opened


# ------------------------------------------------------------------------------ Register


@dataclass
class Attempt:
    """A Register attempt to carry out (reserve, then seat)."""

    key: str
    attempt: int
    tier: Tier
    entry_ids: list[str]


@dataclass
class InFlight:
    """Another call of the same request is carrying out this attempt right now."""

    key: str
    attempt: int


@dataclass
class Done:
    """A Register request already completed: its entries."""

    entry_ids: list[str]


def begin_attempt(
    engine: Engine,
    *,
    player_id: str,
    request_id: str,
    tier_id: str,
    entries: int,
    stale_after: timedelta,
) -> Attempt | InFlight | Done:
    """Record the intent of a Register before any money is reserved.

    New request → attempt 1 (``reserving``). Completed → its entries (the retry is answered
    without new reservations). In flight (``reserving``, not stale) → :class:`InFlight`: the
    caller waits for the other call's outcome rather than racing it. Failed → a new attempt
    with new entry ids. Same request id with another tier or entry count → ALREADY_EXISTS.
    """
    key = request_key(player_id, request_id)
    now = utc_now()
    with engine.begin() as conn:
        tier = load_tier(conn, tier_id)
        row = conn.execute(
            select(t.requests).where(t.requests.c.request_key == key).with_for_update()
        ).first()
        if row is None:
            conn.execute(
                insert(t.requests).values(
                    request_key=key,
                    player_id=player_id,
                    request_id=request_id,
                    tier_id=tier_id,
                    entries=entries,
                    attempt=1,
                    status="reserving",
                    entry_ids="",
                    error="",
                    created_at=now,
                    updated_at=now,
                )
            )
            return Attempt(key, 1, tier, entry_ids_for(key, 1, entries))
        if row.tier_id != tier_id or int(row.entries) != entries:
            raise AlreadyExists(
                f"request_id {request_id!r} was used for {row.entries} entries of tier "
                f"{row.tier_id!r}; use a new request_id for {entries} entries of {tier_id!r}",
                detail=_info(errors_pb2.ERROR_REASON_DUPLICATE_REQUEST, request_id=request_id),
            )
        if row.status == "completed":
            return Done([e for e in row.entry_ids.split(",") if e])
        attempt = int(row.attempt)
        if row.status == "reserving" and now - _aware(row.updated_at) < stale_after:
            return InFlight(key, attempt)
        if row.status in ("reserving", "voiding"):
            # A stale or rolling-back attempt: leave it to the sweeper and refuse for now.
            raise Aborted(
                f"an earlier attempt of request {request_id!r} is being rolled back; retry shortly",
                detail=_info(errors_pb2.ERROR_REASON_WRONG_STATE, request_id=request_id),
            )
        attempt += 1
        conn.execute(
            update(t.requests)
            .where(t.requests.c.request_key == key)
            .values(attempt=attempt, status="reserving", error="", updated_at=now)
        )
        return Attempt(key, attempt, tier, entry_ids_for(key, attempt, entries))


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def end_attempt(engine: Engine, key: str, attempt: int, *, status: str, error: str = "") -> bool:
    """Move attempt ``attempt`` of a request to ``status`` (voiding/failed) if it is still
    in ``reserving`` or ``voiding``. True when this call changed it."""
    with engine.begin() as conn:
        result = conn.execute(
            update(t.requests)
            .where(
                t.requests.c.request_key == key,
                t.requests.c.attempt == attempt,
                t.requests.c.status.in_(("reserving", "voiding")),
            )
            .values(status=status, error=error[:2000], updated_at=utc_now())
        )
        return result.rowcount == 1


def attempt_status(engine: Engine, key: str) -> tuple[str, int, list[str]]:
    """(status, attempt, entry ids) of a request."""
    with engine.connect() as conn:
        r = conn.execute(select(t.requests).where(t.requests.c.request_key == key)).one()
        return r.status, int(r.attempt), [e for e in r.entry_ids.split(",") if e]


@dataclass
class Seated:
    """Outcome of a seating transaction."""

    entry_ids: list[str]
    #: Tables whose last seat was taken (buy-ins to post, then TournamentStarted).
    filled: list[str] = field(default_factory=list)
    #: Multiplier drawn at each filled table.
    multipliers: dict[str, int] = field(default_factory=dict)
    #: Players to notify (everyone at a changed table).
    players: set[str] = field(default_factory=set)
    #: False when the attempt was no longer current (completed by a twin, or rolled back).
    current: bool = True


def seat_entries(
    engine: Engine,
    store: EventStore,
    config: TournamentConfig,
    *,
    player_id: str,
    request_id: str,
    attempt: Attempt,
    correlation_id: str,
) -> Seated:
    """Give each reserved entry a seat (one transaction for all of them).

    Each entry goes to the open table of the tier with the most players where the player
    has no seat yet (oldest first on a tie); a new table is opened when there is none. The
    table whose last seat is taken is filled in the same transaction (:func:`fill_table`).
    """
    now = utc_now()
    with engine.begin() as conn:
        req = conn.execute(
            select(t.requests).where(t.requests.c.request_key == attempt.key).with_for_update()
        ).one()
        if req.status != "reserving" or int(req.attempt) != attempt.attempt:
            done = [e for e in req.entry_ids.split(",") if e] if req.status == "completed" else []
            return Seated(done, current=False)
        repo.lock_tier(conn, attempt.tier.tier_id)
        tier = attempt.tier
        mine = set(
            conn.execute(
                select(t.entries.c.table_id)
                .join(t.tables, t.tables.c.table_id == t.entries.c.table_id)
                .where(
                    t.entries.c.player_id == player_id,
                    t.entries.c.status != "unregistered",
                    t.tables.c.tier_id == tier.tier_id,
                    t.tables.c.status == "registering",
                )
            ).scalars()
        )
        touched: list[str] = []
        filled: list[str] = []
        multipliers: dict[str, int] = {}
        for entry_id in attempt.entry_ids:
            candidates = conn.execute(
                select(t.tables)
                .where(
                    t.tables.c.tier_id == tier.tier_id,
                    t.tables.c.status == "registering",
                    t.tables.c.players_registered < t.tables.c.seats,
                )
                .order_by(
                    t.tables.c.players_registered.desc(),
                    t.tables.c.opened_at,
                    t.tables.c.table_id,
                )
            ).all()
            table = next((c for c in candidates if c.table_id not in mine), None)
            if table is None:
                table_id = open_table(
                    conn, store, config, tier, correlation_id=correlation_id, at=utc_now()
                )
                table = conn.execute(select(t.tables).where(t.tables.c.table_id == table_id)).one()
            taken = set(
                conn.execute(
                    select(t.entries.c.seat).where(
                        t.entries.c.table_id == table.table_id,
                        t.entries.c.status != "unregistered",
                    )
                ).scalars()
            )
            seat = min(s for s in range(1, int(table.seats) + 1) if s not in taken)
            count = int(table.players_registered) + 1
            transfer_id = buyin_transfer_id(entry_id)
            conn.execute(
                insert(t.entries).values(
                    entry_id=entry_id,
                    player_id=player_id,
                    table_id=table.table_id,
                    seat=seat,
                    status="reserved",
                    wallet_transfer_id=transfer_id,
                    request_id=request_id,
                    registered_at=now,
                )
            )
            event = events_pb2.PlayerRegistered(
                table_id=table.table_id,
                entry_id=entry_id,
                player_id=player_id,
                seat=seat,
                buy_in=usd(tier.buy_in_cents),
                wallet_transfer_id=transfer_id,
                request_id=request_id,
                players_registered=count,
            )
            version = _append(
                store,
                conn,
                table.table_id,
                int(table.stream_version),
                [event],
                correlation_id=correlation_id,
                at=now,
            )
            conn.execute(
                update(t.tables)
                .where(t.tables.c.table_id == table.table_id)
                .values(players_registered=count, stream_version=version)
            )
            mine.add(table.table_id)
            touched.append(table.table_id)
            if count == int(table.seats):
                multipliers[table.table_id] = fill_table(
                    conn, store, config, table.table_id, correlation_id=correlation_id
                )
                filled.append(table.table_id)
        if repo.open_table_count(conn, tier.tier_id) == 0:
            open_table(conn, store, config, tier, correlation_id=correlation_id, at=now)
        conn.execute(
            update(t.requests)
            .where(t.requests.c.request_key == attempt.key)
            .values(status="completed", entry_ids=",".join(attempt.entry_ids), updated_at=now)
        )
        players = repo.table_players(conn, touched)
    return Seated(list(attempt.entry_ids), filled, multipliers, players)


# ------------------------------------------------------------------------------ fill


def levels_for(config: TournamentConfig, multiplier: int) -> list[tournament_pb2.BlindLevel]:
    """The blind levels a tournament with ``multiplier`` plays before Electric Mode."""
    count = config.levels_for(multiplier)
    duration = Duration()
    duration.FromMilliseconds(config.level_duration_ms)
    return [
        tournament_pb2.BlindLevel(
            level=i + 1,
            small_blind=lv.small_blind,
            big_blind=lv.big_blind,
            ante=lv.ante,
            duration=duration,
        )
        for i, lv in enumerate(config.blind_levels[:count])
    ]


def payouts_for(
    config: TournamentConfig, multiplier: int, buy_in_cents: int
) -> tuple[int, list[tournament_pb2.PrizeShare]]:
    """(prize pool, paid places) of a multiplier: pool = multiplier × gross buy-in; place
    amounts by the pay table's shares (``prizes.place_amounts``: floor, remainder to 1st)."""
    pool = multiplier * buy_in_cents
    shares = config.pay_table.entry(multiplier).shares
    amounts = place_amounts(pool, shares, config.seats)
    total = sum(shares)
    return pool, [
        tournament_pb2.PrizeShare(
            place=i + 1, share_bps=shares[i] * 10_000 // total, amount=usd(amounts[i])
        )
        for i in range(len(shares))
    ]


def fill_table(
    conn: Connection,
    store: EventStore,
    config: TournamentConfig,
    table_id: str,
    *,
    correlation_id: str,
) -> int:
    """The last seat was taken: reveal the seed and the drawn multiplier (TableFilled),
    confirm the entries, prepare TournamentStarted and record the wallet work that posts the
    buy-ins. TournamentStarted itself is appended once that work is done
    (:func:`start_if_paid`), so no tournament starts on buy-ins that were not collected."""
    now = utc_now()
    table = conn.execute(select(t.tables).where(t.tables.c.table_id == table_id)).one()
    tier = load_tier(conn, table.tier_id)
    entries = conn.execute(
        select(t.entries)
        .where(t.entries.c.table_id == table_id, t.entries.c.status != "unregistered")
        .order_by(t.entries.c.seat)
    ).all()
    seed = bytes.fromhex(table.multiplier_seed)
    draw = draw_multiplier(seed, config.pay_table)
    if draw.commitment != table.multiplier_seed_commitment:  # pragma: no cover - corruption
        raise RuntimeError(f"table {table_id}: stored seed does not match its commitment")
    pool, payouts = payouts_for(config, draw.multiplier, tier.buy_in_cents)
    seats = [
        tournament_pb2.SeatAssignment(seat=e.seat, player_id=e.player_id, entry_id=e.entry_id)
        for e in entries
    ]
    filled = events_pb2.TableFilled(
        table_id=table_id,
        seats=seats,
        multiplier=draw.multiplier,
        multiplier_seed=draw.seed_hex,
        multiplier_seed_commitment=draw.commitment,
        prize_pool=usd(pool),
        paytable_version=config.version,
    )
    version = _append(
        store,
        conn,
        table_id,
        int(table.stream_version),
        [filled],
        correlation_id=correlation_id,
        at=now,
    )
    action_timer, time_bank, level_duration = Duration(), Duration(), Duration()
    action_timer.FromMilliseconds(config.action_timer_ms)
    time_bank.FromMilliseconds(config.time_bank_ms)
    level_duration.FromMilliseconds(config.level_duration_ms)
    started = events_pb2.TournamentStarted(
        tournament_id=table_id,
        table_id=table_id,
        tier_id=tier.tier_id,
        seats=seats,
        multiplier=draw.multiplier,
        levels=levels_for(config, draw.multiplier),
        starting_stack=tier.starting_stack,
        buy_in=usd(tier.buy_in_cents),
        rake=usd(tier.rake_cents),
        prize_pool=usd(pool),
        payouts=payouts,
        action_timer=action_timer,
        time_bank=time_bank,
        paytable_version=config.version,
        table_name=table.table_name,
        multiplier_seed=draw.seed_hex,
        multiplier_seed_commitment=draw.commitment,
        first_button_seat=seats[initial_button_index(seed, len(seats))].seat,
        level_duration=level_duration,
        table_size=int(table.seats),
    )
    conn.execute(
        update(t.tables)
        .where(t.tables.c.table_id == table_id)
        .values(
            status="filled",
            multiplier=draw.multiplier,
            prize_pool_cents=pool,
            positions_paid=len(payouts),
            payouts_json=json.dumps([p.amount.cents for p in payouts]),
            tournament_started=started.SerializeToString(),
            stream_version=version,
            filled_at=now,
        )
    )
    conn.execute(
        update(t.entries)
        .where(t.entries.c.table_id == table_id, t.entries.c.status == "reserved")
        .values(status="confirmed")
    )
    net = tier.buy_in_cents - tier.rake_cents
    seq = 0
    for e in entries:
        work = [
            ("post", e.wallet_transfer_id, "", "", 0, "buy_in"),
            ("move", f"rake-{e.entry_id}", ESCROW, RAKE, tier.rake_cents, "rake"),
            ("move", f"net-{e.entry_id}", ESCROW, PRIZE_RESERVE, net, "prize_reserve"),
        ]
        for kind, transfer_id, src, dst, amount, code in work:
            if amount == 0 and kind == "move":
                continue
            seq += 1
            _add_op(conn, table_id, e.entry_id, seq, kind, transfer_id, src, dst, amount, code)
    return draw.multiplier


def _add_op(
    conn: Connection,
    table_id: str,
    entry_id: str,
    seq: int,
    kind: str,
    transfer_id: str,
    src: str,
    dst: str,
    amount: int,
    code: str,
) -> None:
    conn.execute(
        insert(t.wallet_ops).values(
            op_id=f"{kind}:{transfer_id}",
            table_id=table_id,
            entry_id=entry_id,
            seq=seq,
            kind=kind,
            transfer_id=transfer_id,
            from_account=src,
            to_account=dst,
            amount_cents=amount,
            code=code,
            status="pending",
            attempts=0,
            last_error="",
            created_at=utc_now(),
        )
    )


def start_if_paid(
    engine: Engine, store: EventStore, table_id: str, *, correlation_id: str
) -> set[str] | None:
    """Append the prepared TournamentStarted once every buy-in of the filled table is posted
    and split (exactly once: the status moves filled → running in the same transaction).
    Returns the players to notify, or None when nothing happened."""
    with engine.begin() as conn:
        table = conn.execute(
            select(t.tables).where(t.tables.c.table_id == table_id).with_for_update()
        ).first()
        if table is None or table.tournament_started is None or table.started_at is not None:
            return None
        pending = conn.execute(
            select(func.count())
            .select_from(t.wallet_ops)
            .where(
                t.wallet_ops.c.table_id == table_id,
                t.wallet_ops.c.status != "done",
                t.wallet_ops.c.kind != "void",
            )
        ).scalar_one()
        if pending:
            return None
        started = events_pb2.TournamentStarted.FromString(table.tournament_started)
        now = utc_now()
        version = _append(
            store,
            conn,
            table_id,
            int(table.stream_version),
            [started],
            correlation_id=correlation_id,
            at=now,
        )
        status = "running" if table.status == "filled" else table.status
        conn.execute(
            update(t.tables)
            .where(t.tables.c.table_id == table_id)
            .values(status=status, stream_version=version, started_at=now)
        )
        return repo.table_players(conn, [table_id])


# ------------------------------------------------------------------------------ Unregister


@dataclass
class Unregistered:
    """Outcome of Unregister."""

    entry: repo.EntryRow
    players: set[str]
    #: False when the entry was already unregistered (a retry).
    changed: bool


def unregister(
    engine: Engine,
    store: EventStore,
    *,
    entry_id: str,
    table_id: str,
    player_id: str,
    may_act_for: str | None,
    request_id: str,
    correlation_id: str,
) -> Unregistered:
    """Withdraw an entry while its table is still registering; record the void of its
    reservation as owed wallet work. ``may_act_for`` is the calling player (None for
    services/operators, who may withdraw any entry). FAILED_PRECONDITION once the table
    filled."""
    now = utc_now()
    with engine.begin() as conn:
        if entry_id:
            row = conn.execute(select(t.entries).where(t.entries.c.entry_id == entry_id)).first()
        else:
            row = conn.execute(
                select(t.entries)
                .where(t.entries.c.table_id == table_id, t.entries.c.player_id == player_id)
                .order_by(
                    (t.entries.c.status == "unregistered").asc(), t.entries.c.registered_at.desc()
                )
            ).first()
        if row is None:
            what = entry_id or f"of player {player_id!r} at table {table_id!r}"
            raise NotFound(
                f"no entry {what}",
                detail=errors_pb2.ResourceInfo(
                    resource_type="entry" if entry_id else "table",
                    resource_id=entry_id or table_id,
                ),
            )
        if may_act_for is not None and row.player_id != may_act_for:
            raise PermissionDenied(f"entry {row.entry_id!r} belongs to another player")
        table = conn.execute(select(t.tables).where(t.tables.c.table_id == row.table_id)).one()
        if row.status == "unregistered":
            [entry] = repo.entries_by_id(conn, [row.entry_id])
            return Unregistered(entry, set(), changed=False)
        repo.lock_tier(conn, table.tier_id)
        table = conn.execute(select(t.tables).where(t.tables.c.table_id == row.table_id)).one()
        if table.status != "registering":
            raise FailedPrecondition(
                f"table {table.table_name!r} is full: the third player registered, so entries "
                "can no longer unregister",
                detail=_info(
                    errors_pb2.ERROR_REASON_WRONG_STATE,
                    table_id=table.table_id,
                    table_status=table.status,
                ),
            )
        count = int(table.players_registered) - 1
        conn.execute(
            update(t.entries)
            .where(t.entries.c.entry_id == row.entry_id)
            .values(status="unregistered")
        )
        event = events_pb2.PlayerUnregistered(
            table_id=table.table_id,
            entry_id=row.entry_id,
            player_id=row.player_id,
            seat=row.seat,
            wallet_transfer_id=row.wallet_transfer_id,
            request_id=request_id,
            players_registered=count,
        )
        version = _append(
            store,
            conn,
            table.table_id,
            int(table.stream_version),
            [event],
            correlation_id=correlation_id,
            at=now,
        )
        conn.execute(
            update(t.tables)
            .where(t.tables.c.table_id == table.table_id)
            .values(players_registered=count, stream_version=version)
        )
        _add_op(
            conn,
            table.table_id,
            row.entry_id,
            0,
            "void",
            row.wallet_transfer_id,
            "",
            "",
            0,
            "unregistered",
        )
        players = repo.table_players(conn, [table.table_id]) | {row.player_id}
        [entry] = repo.entries_by_id(conn, [row.entry_id])
    return Unregistered(entry, players, changed=True)
