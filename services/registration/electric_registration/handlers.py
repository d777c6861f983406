"""Registration's decisions, each one database transaction: load the state, let the lobby
domain decide (``electric_domain.lobby``), then record the events: the mapper
(:mod:`.codec`) appends them and the projector (:mod:`.store.projector`) writes the rows
they change, in the same transaction (:func:`.streams.record`). The handlers write no
table, entry or settings row themselves; they keep only the request rows (Register
de-duplication) and the owed wallet work, which are not facts of the log.

Everything here is synchronous (run through ``asyncio.to_thread``) and never calls another
service: wallet calls are made by :mod:`electric_registration.registrar` before a decision
(reservations) or recorded here as owed work (``registration_wallet_ops``) and carried out
after the commit by :mod:`electric_registration.wallet_work`.

Serialisation: every decision that changes seats locks the tier row first (``SELECT … FOR
UPDATE`` on PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` serialises all writers), so two
registrations racing for the last seat of a table run one after the other. Those decisions
run through the event store's group commit (``EventStore.transact``): the Registers that
arrive while a transaction runs share the next one, each in its own savepoint, so a burst
takes the tier lock and commits once per batch, not once per Register (issue 26 item 5).
The batch takes the store's position lock before any row lock, so every writer that locks a
tier or table row and then appends goes through it (a plain transaction doing the same could
deadlock with a batch): seating, Unregister, the start of a paid tournament, the opening of
tables and the cancellation of one. Each table's
stream is appended with the version recorded in its row (optimistic concurrency, a backstop:
a conflict raises ``ConcurrencyError``, the caller retries the whole transaction), and partial
unique indexes forbid two active entries of one player or in one seat at a table.
"""

from __future__ import annotations

import functools
import secrets
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from electric_domain import lobby
from electric_domain.tournament import TournamentConfig
from electric_domain.tournament.fairness import commitment
from electric_eventlog import EventStore, utc_now
from sqlalchemy import Connection, Engine

from electric_registration import codec, fill, streams
from electric_registration.store import projector, repo, requests, seating, tiers, wallet_ops

# Re-exported for callers that think in registration terms.
buyin_transfer_id = lobby.buyin_transfer_id
entry_ids_for = lobby.entry_ids_for
tier_id_for = lobby.tier_id_for


table_stream = codec.table_stream


# ------------------------------------------------------------------------------ tiers


def sync_tiers(engine: Engine, config: TournamentConfig) -> None:
    """Make the lobby's tiers the configuration's buy-ins (rake, seats, starting stack);
    tiers no longer configured are deactivated (their history stays)."""
    wanted = [
        {
            "tier_id": lobby.tier_id_for(tier.buy_in_cents),
            "name": lobby.tier_name(tier.buy_in_cents),
            "buy_in_cents": tier.buy_in_cents,
            "rake_cents": tier.rake_cents,
            "seats": config.seats,
            "starting_stack": config.starting_stack,
            "sort_order": i,
            "game_speed": "hyper_turbo",
            "active": 1,
        }
        for i, tier in enumerate(config.buy_ins)
    ]
    with engine.begin() as conn:
        tiers.seed_lock(conn)  # several instances may start together
        tiers.sync(conn, wanted)


def load_tier(conn: Connection, tier_id: str) -> lobby.Tier:
    """The active tier ``tier_id``; :class:`~electric_domain.lobby.UnknownTier` otherwise."""
    tier = tiers.active(conn, tier_id)
    if tier is None:
        raise lobby.UnknownTier(tier_id)
    return tier


# ------------------------------------------------------------------------------ tables


def open_table(
    conn: Connection,
    store: EventStore,
    config: TournamentConfig,
    tier: lobby.Tier,
    *,
    correlation_id: str,
    at: datetime,
) -> str:
    """Open a table of ``tier``: a fresh OS-CSPRNG seed, committed by SHA-256 in TableOpened
    and kept secret in the table's row until it fills. Returns the table id."""
    table_id = str(uuid.uuid4())
    seed = secrets.token_bytes(32)
    event = codec.table_opened(
        table_id,
        lobby.table_name(tier, seating.table_count(conn, tier.tier_id) + 1),
        tier,
        commitment=commitment(seed),
        paytable_version=config.version,
    )
    # The seed is in no event (secret until the fill): the projector gets it withheld.
    streams.record_table(
        store,
        conn,
        table_id,
        0,
        [event],
        correlation_id=correlation_id,
        at=at,
        withheld=projector.Withheld(seed_hex=seed.hex()),
    )
    return table_id


def ensure_open_tables(
    engine: Engine, store: EventStore, config: TournamentConfig, *, correlation_id: str
) -> list[str]:
    """Open a table for every active tier that has none open (idempotent). Returns the ids."""
    with engine.connect() as conn:
        tier_ids = tiers.active_ids(conn)

    def work(conn: Connection, tier_id: str) -> str | None:
        tiers.lock(conn, tier_id)
        if seating.open_table_count(conn, tier_id) > 0:
            return None
        tier = load_tier(conn, tier_id)
        return open_table(conn, store, config, tier, correlation_id=correlation_id, at=utc_now())

    # Every writer that locks a tier and appends goes through the group commit (see
    # ``seat_entries``): a plain transaction doing the same could deadlock with a batch.
    opened = [store.transact(functools.partial(work, tier_id=tier_id)) for tier_id in tier_ids]
    return [table_id for table_id in opened if table_id is not None]


# ------------------------------------------------------------------------------ Register


@dataclass
class Attempt:
    """A Register attempt to carry out (reserve, then seat)."""

    key: str
    attempt: int
    tier: lobby.Tier
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
    """Record the intent of a Register before any money is reserved (the lobby's request
    lifecycle, ``electric_domain.lobby.entries.begin``)."""
    key = lobby.request_key(player_id, request_id)
    now = utc_now()
    with engine.begin() as conn:
        tier = load_tier(conn, tier_id)
        decided = lobby.begin(
            requests.get(conn, key, lock=True),
            key=key,
            request_id=request_id,
            tier_id=tier_id,
            entries=entries,
            now=now,
            stale_after=stale_after,
        )
        if isinstance(decided, lobby.AlreadyDone):
            return Done(list(decided.entry_ids))
        if isinstance(decided, lobby.StillInFlight):
            return InFlight(key, decided.attempt)
        if decided.first:
            requests.insert_first(
                conn,
                key=key,
                player_id=player_id,
                request_id=request_id,
                tier_id=tier_id,
                entries=entries,
                at=now,
            )
        else:
            requests.start_attempt(conn, key, decided.attempt, now)
        return Attempt(key, decided.attempt, tier, list(decided.entry_ids))


def end_attempt(engine: Engine, key: str, attempt: int, *, status: str, error: str = "") -> bool:
    """Move attempt ``attempt`` of a request to ``status`` (voiding/failed) if it is still
    in ``reserving`` or ``voiding``. True when this call changed it."""
    with engine.begin() as conn:
        return requests.end_attempt(conn, key, attempt, status=status, error=error, at=utc_now())


def attempt_status(engine: Engine, key: str) -> tuple[str, int, list[str]]:
    """(status, attempt, entry ids) of a request."""
    with engine.connect() as conn:
        record = requests.get(conn, key)
    if record is None:
        raise KeyError(key)
    return record.status, record.attempt, list(record.entry_ids)


def abandoned_attempts(engine: Engine, stale_after: timedelta) -> list[requests.Abandoned]:
    """Attempts to roll back (voiding, or reserving for longer than ``stale_after``)."""
    with engine.connect() as conn:
        return requests.abandoned(conn, utc_now() - stale_after)


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
    store: EventStore,
    config: TournamentConfig,
    *,
    player_id: str,
    request_id: str,
    attempt: Attempt,
    correlation_id: str,
) -> Seated:
    """Give each reserved entry a seat, all in one transaction, as the lobby's seating rules
    place them (``electric_domain.lobby.seating``); a table whose last seat is taken is
    filled in the same transaction (:func:`fill.fill_table`)."""
    now = utc_now()
    tier = attempt.tier

    def work(conn: Connection) -> Seated:
        record = requests.get(conn, attempt.key, lock=True)
        if record is None or record.status != "reserving" or record.attempt != attempt.attempt:
            done = list(record.entry_ids) if record and record.status == "completed" else []
            return Seated(done, current=False)
        tiers.lock(conn, tier.tier_id)
        plan = lobby.plan_seating(
            seating.open_tables(conn, tier.tier_id),
            mine=seating.player_open_tables(conn, player_id, tier.tier_id),
            entry_ids=attempt.entry_ids,
            seats_per_table=tier.seats,
        )
        opened: dict[int, str] = {}
        touched: list[str] = []
        seated = Seated(list(attempt.entry_ids))
        for place in plan.placements:
            if isinstance(place.table, lobby.NewTable):
                opened[place.table.index] = open_table(
                    conn, store, config, tier, correlation_id=correlation_id, at=utc_now()
                )
                table_id = opened[place.table.index]
            else:
                table_id = place.table
            table = seating.get_table(conn, table_id)
            assert table is not None
            event = codec.player_registered(
                table_id,
                place,
                player_id=player_id,
                buy_in_cents=tier.buy_in_cents,
                request_id=request_id,
            )
            streams.record_table(
                store,
                conn,
                table_id,
                table.stream_version,
                [event],
                correlation_id=correlation_id,
                at=now,
            )
            touched.append(table_id)
            if place.fills:
                seated.multipliers[table_id] = fill.fill_table(
                    conn,
                    store,
                    config,
                    table_id,
                    load_tier(conn, table.tier_id),
                    correlation_id=correlation_id,
                )
                seated.filled.append(table_id)
        if plan.open_spare and seating.open_table_count(conn, tier.tier_id) == 0:
            open_table(conn, store, config, tier, correlation_id=correlation_id, at=now)
        requests.complete(conn, attempt.key, attempt.entry_ids, now)
        seated.players = repo.table_players(conn, touched)
        return seated

    # Through the event store's group commit: concurrent Registers of this process share
    # one transaction, one tier lock and one commit (issue 26 item 5), each in a savepoint.
    return store.transact(work)


def start_if_paid(store: EventStore, table_id: str, *, correlation_id: str = "") -> set[str] | None:
    """Append the prepared TournamentStarted once every buy-in of the filled table is posted
    and split (exactly once: the status moves filled → running in the same transaction).
    It is caused by the TableFilled that owed the buy-ins and keeps its correlation id (the
    Register that filled the table); ``correlation_id`` is the fallback for a table without
    recorded causality. Returns the players to notify, or None when nothing happened."""

    def work(conn: Connection) -> set[str] | None:
        table = seating.get_table(conn, table_id, lock=True)
        if table is None or table.tournament_started is None or table.started_at is not None:
            return None
        if table.status == "cancelled":
            return None
        if wallet_ops.unpaid_count(conn, table_id):
            return None
        started = codec.prepared_start(table.tournament_started)
        now = utc_now()
        correlation, causation = wallet_ops.causal_ids(conn, table_id)
        streams.record_table(
            store,
            conn,
            table_id,
            table.stream_version,
            [started],
            correlation_id=correlation or correlation_id,
            causation_id=causation,
            at=now,
        )
        return repo.table_players(conn, [table_id])

    return store.transact(work)


# ------------------------------------------------------------------------------ Unregister


@dataclass
class Unregistered:
    """Outcome of Unregister."""

    entry: repo.EntryRow
    players: set[str]
    #: False when the entry was already unregistered (a retry).
    changed: bool


def unregister(
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
    services/operators, who may withdraw any entry)."""
    now = utc_now()

    def work(conn: Connection) -> Unregistered:
        if entry_id:
            row = seating.find_entry(conn, entry_id)
        else:
            row = seating.latest_entry(conn, table_id, player_id)
        if row is None:
            raise lobby.EntryNotFound(entry_id, table_id, player_id)
        lobby.check_may_withdraw(
            entry_id=row.entry_id, entry_player=row.player_id, acting_player=may_act_for
        )
        if row.status == "unregistered":
            [entry] = repo.entries_by_id(conn, [row.entry_id])
            return Unregistered(entry, set(), changed=False)
        table = seating.get_table(conn, row.table_id)
        assert table is not None
        tiers.lock(conn, table.tier_id)
        table = seating.get_table(conn, row.table_id)  # re-read under the tier lock
        assert table is not None
        lobby.check_still_registering(
            table_id=table.table_id, table_name=table.table_name, status=table.status
        )
        event = codec.player_unregistered(
            table.table_id,
            entry_id=row.entry_id,
            player_id=row.player_id,
            seat=row.seat,
            transfer_id=row.wallet_transfer_id,
            request_id=request_id,
            players_registered=table.players_registered - 1,
        )
        [stored] = streams.record_table(
            store,
            conn,
            table.table_id,
            table.stream_version,
            [event],
            correlation_id=correlation_id,
            at=now,
        )
        void = lobby.withdrawal(row.entry_id, row.wallet_transfer_id)
        owed = fill.owed_op(
            table.table_id, void, correlation_id=stored.correlation_id, causation_id=stored.event_id
        )
        wallet_ops.add(conn, owed, now)
        players = repo.table_players(conn, [table.table_id]) | {row.player_id}
        [entry] = repo.entries_by_id(conn, [row.entry_id])
        return Unregistered(entry, players, changed=True)

    return store.transact(work)
