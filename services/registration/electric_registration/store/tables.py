"""Registration's tables. All names start with ``registration_``; no other service reads them.

- ``registration_tiers``: the lobby catalogue (buy-in tiers), seeded by migration 0001 and
  kept in line with the tournament configuration at start-up.
- ``registration_tables``: sit-and-go tables. The multiplier seed is kept here, secret, until
  the table fills (only its SHA-256 is public). ``status``: registering → filled (buy-ins
  being posted) → running (TournamentStarted published) → finished.
- ``registration_entries``: seats bought by players (at most one active entry per player and
  table, one per seat: partial unique indexes).
- ``registration_requests``: one row per Register request id and player (idempotency and
  crash recovery of the reservations made before seats are taken).
- ``registration_wallet_ops``: wallet calls owed after a committed decision (posting the
  buy-ins of a filled table, voiding an unregistered entry), done in order and retried until
  they succeed.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    text,
)

#: Alembic revisions of registration's own tables.
VERSIONS_DIR = Path(__file__).resolve().parent / "migrations" / "versions"

metadata = MetaData()

tiers = Table(
    "registration_tiers",
    metadata,
    Column("tier_id", String(64), primary_key=True),
    Column("name", String(200), nullable=False),
    Column("buy_in_cents", BigInteger, nullable=False),
    Column("rake_cents", BigInteger, nullable=False),
    Column("seats", Integer, nullable=False),
    Column("starting_stack", BigInteger, nullable=False),
    Column("sort_order", Integer, nullable=False),
    Column("game_speed", String(32), nullable=False),
    Column("active", Integer, nullable=False),
)

tables = Table(
    "registration_tables",
    metadata,
    Column("table_id", String(64), primary_key=True),
    Column("tier_id", String(64), ForeignKey("registration_tiers.tier_id"), nullable=False),
    Column("table_name", String(200), nullable=False),
    #: registering | filled | running | finished | cancelled
    Column("status", String(32), nullable=False),
    Column("seats", Integer, nullable=False),
    Column("players_registered", Integer, nullable=False),
    Column("multiplier_seed", String(128), nullable=False),
    Column("multiplier_seed_commitment", String(64), nullable=False),
    Column("paytable_version", String(64), nullable=False),
    Column("multiplier", BigInteger, nullable=False),
    Column("prize_pool_cents", BigInteger, nullable=False),
    Column("stream_version", BigInteger, nullable=False),
    Column("opened_at", DateTime(timezone=True), nullable=False),
    # migration 0002
    Column("current_hand_number", BigInteger, nullable=False, server_default=text("0")),
    Column("positions_paid", Integer, nullable=False, server_default=text("0")),
    #: JSON list of place amounts in cents, set at fill.
    Column("payouts_json", Text, nullable=False, server_default=text("'[]'")),
    #: Serialized TournamentStarted, built at fill, appended once the buy-ins are posted.
    Column("tournament_started", LargeBinary, nullable=True),
    Column("filled_at", DateTime(timezone=True), nullable=True),
    Column("started_at", DateTime(timezone=True), nullable=True),
    Column("finished_at", DateTime(timezone=True), nullable=True),
    # migration 0003
    Column("cancelled_at", DateTime(timezone=True), nullable=True),
    Column("cancel_reason", Text, nullable=False, server_default=text("''")),
    #: Seat asked to act now (TurnStarted), 0 when none; its deadline.
    Column("turn_seat", Integer, nullable=False, server_default=text("0")),
    Column("turn_deadline", DateTime(timezone=True), nullable=True),
    #: When the table ended (finished or cancelled), for "recently ended" in the stream.
    Column("ended_at", DateTime(timezone=True), nullable=True),
    Index("ix_registration_tables_tier_status", "tier_id", "status"),
    # The lobby's running tables of every tier, newest first (ListLobby, polled by pages).
    Index("ix_registration_tables_status_started", "status", "tier_id", "started_at"),
)

entries = Table(
    "registration_entries",
    metadata,
    Column("entry_id", String(64), primary_key=True),
    Column("player_id", String(200), nullable=False),
    Column("table_id", String(64), ForeignKey("registration_tables.table_id"), nullable=False),
    Column("seat", Integer, nullable=False),
    #: reserved | confirmed | unregistered | cancelled
    Column("status", String(32), nullable=False),
    Column("wallet_transfer_id", String(200), nullable=False),
    Column("request_id", String(200), nullable=False),
    Column("registered_at", DateTime(timezone=True), nullable=False),
    Index("ix_registration_entries_player", "player_id", "status"),
    Index(
        "ux_registration_entries_table_player",
        "table_id",
        "player_id",
        unique=True,
        postgresql_where=text("status <> 'unregistered'"),
        sqlite_where=text("status <> 'unregistered'"),
    ),
    Index(
        "ux_registration_entries_table_seat",
        "table_id",
        "seat",
        unique=True,
        postgresql_where=text("status <> 'unregistered'"),
        sqlite_where=text("status <> 'unregistered'"),
    ),
)

requests = Table(
    "registration_requests",
    metadata,
    #: sha256(player_id NUL request_id), hex.
    Column("request_key", String(64), primary_key=True),
    Column("player_id", String(200), nullable=False),
    Column("request_id", String(200), nullable=False),
    Column("tier_id", String(64), nullable=False),
    Column("entries", Integer, nullable=False),
    #: 1, 2, ...: a failed attempt may be retried under the same request id (new entry ids).
    Column("attempt", Integer, nullable=False),
    #: reserving | voiding | completed | failed
    Column("status", String(16), nullable=False),
    #: Comma-separated entry ids of the completed attempt.
    Column("entry_ids", Text, nullable=False),
    Column("error", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Index("ix_registration_requests_status", "status", "updated_at"),
)

wallet_ops = Table(
    "registration_wallet_ops",
    metadata,
    #: ``<kind>:<transfer_id>``.
    Column("op_id", String(300), primary_key=True),
    Column("table_id", String(64), nullable=False),
    Column("entry_id", String(64), nullable=False),
    #: Order of execution within the table (post before the moves out of the escrow).
    Column("seq", Integer, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("transfer_id", String(200), nullable=False),
    Column("from_account", String(200), nullable=False),
    Column("to_account", String(200), nullable=False),
    Column("amount_cents", BigInteger, nullable=False),
    Column("code", String(64), nullable=False),
    #: post | move | void | unwind (a cancelled table's buy-in given back)
    #: pending | done | cancelled (the table was cancelled before the op ran)
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("last_error", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("done_at", DateTime(timezone=True), nullable=True),
    #: Causality of the decision that owes the op (docs/logging.md): its correlation id and
    #: the id of the event that owes it (TableFilled, PlayerUnregistered, TableCancelled).
    Column("correlation_id", String(200), nullable=False, server_default=""),
    Column("causation_id", String(200), nullable=False, server_default=""),
    Index("ix_registration_wallet_ops_status", "status", "table_id", "seq"),
)

player_settings = Table(
    "registration_player_settings",
    metadata,
    Column("player_id", String(200), primary_key=True),
    #: Empty: the default derived from the player id.
    Column("display_name", String(64), nullable=False),
    Column("muck_winning_hands", Integer, nullable=False),
    Column("muck_losing_hands", Integer, nullable=False),
    Column("four_color_deck", Integer, nullable=False),
    Column("alert_sounds", Integer, nullable=False),
    Column("sound_fx", Integer, nullable=False),
    Column("show_details", Integer, nullable=False),
    #: Also the version of the event stream ``registration-player-<player_id>``.
    Column("version", BigInteger, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

seat_progress = Table(
    "registration_seat_progress",
    metadata,
    #: One row per table and seated player (My Tables / Multi-Table Bar), fed by the table's
    #: events.
    Column("table_id", String(64), primary_key=True),
    Column("player_id", String(200), primary_key=True),
    Column("seat", Integer, nullable=False),
    Column("stack", BigInteger, nullable=False),
    Column("eliminated", Integer, nullable=False),
    Column("finishing_place", Integer, nullable=False),
    Column("prize_cents", BigInteger, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

#: Casino tables (migration 0004): ``thb-<n>`` (private to ``owner_id``, created on demand)
#: and ``uth-<n>`` (shared). ``number`` is the ``<n>``.
casino_tables = Table(
    "registration_casino_tables",
    metadata,
    Column("table_id", String(64), primary_key=True),
    Column("game", String(16), nullable=False),
    Column("number", Integer, nullable=False),
    Column("owner_id", String(200), nullable=False),
    Column("opened_at", DateTime(timezone=True), nullable=False),
    Index("ux_registration_casino_tables_game_number", "game", "number", unique=True),
)

#: Casino seats and their game sessions (migration 0004): one row per open session, deleted
#: when it is released (CasinoSeatReleased keeps the history). One seat per player and table,
#: one player per seat.
casino_sessions = Table(
    "registration_casino_sessions",
    metadata,
    Column("session_id", String(64), primary_key=True),
    Column("table_id", String(64), nullable=False),
    Column("game", String(16), nullable=False),
    Column("player_id", String(200), nullable=False),
    Column("seat", Integer, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("last_active_at", DateTime(timezone=True), nullable=False),
    Index("ux_registration_casino_sessions_player", "table_id", "player_id", unique=True),
    Index("ux_registration_casino_sessions_seat", "table_id", "seat", unique=True),
    Index("ix_registration_casino_sessions_player", "player_id"),
    Index("ix_registration_casino_sessions_active", "last_active_at"),
)
