"""Registration's tables. All names start with ``registration_``; no other service reads them.

- ``registration_tiers``: the lobby catalogue (buy-in tiers), seeded by migration 0001.
- ``registration_tables``: sit-and-go tables (one open table per tier at least). The
  multiplier seed is kept here, secret, until the table fills (only its SHA-256 is public).
- ``registration_entries``: seats bought by players.
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
    MetaData,
    String,
    Table,
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
    #: registering | running | finished | cancelled
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
    Index("ix_registration_tables_tier_status", "tier_id", "status"),
)

entries = Table(
    "registration_entries",
    metadata,
    Column("entry_id", String(64), primary_key=True),
    Column("player_id", String(200), nullable=False),
    Column("table_id", String(64), ForeignKey("registration_tables.table_id"), nullable=False),
    Column("seat", Integer, nullable=False),
    #: reserved | confirmed | unregistered
    Column("status", String(32), nullable=False),
    Column("wallet_transfer_id", String(200), nullable=False),
    Column("request_id", String(200), nullable=False),
    Column("registered_at", DateTime(timezone=True), nullable=False),
    Index("ix_registration_entries_player", "player_id", "status"),
)
