"""The wallet's tables (read models). All names start with ``wallet_``; no other service
reads them.

The event store (``electric_eventlog``) holds the facts; these tables are projections
written in the same transaction as every append, by the one projector (:mod:`.projections`,
which also rebuilds and checks them):

* ``wallet_accounts`` — one row per account: kind, owner, posted/reserved/incoming cents.
* ``wallet_transfers`` — one row per transfer: the client's spec, legs, state.
* ``wallet_entries`` — the statement: one row per balance change of an account.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
)

#: Alembic revisions of the wallet's own tables (tracked in ``alembic_version_wallet``).
VERSIONS_DIR = Path(__file__).resolve().parent / "migrations" / "versions"
VERSION_TABLE = "alembic_version_wallet"

_ID = BigInteger().with_variant(Integer(), "sqlite")

metadata = MetaData()

accounts = Table(
    "wallet_accounts",
    metadata,
    Column("account_id", String(200), primary_key=True),
    Column("kind", Integer, nullable=False),
    Column("player_id", String(100), nullable=False),
    Column("posted", BigInteger, nullable=False),
    Column("reserved", BigInteger, nullable=False),
    Column("incoming", BigInteger, nullable=False),
    Column("opened_at", DateTime(timezone=True), nullable=False),
    Index("ix_wallet_accounts_player_id", "player_id"),
)

transfers = Table(
    "wallet_transfers",
    metadata,
    Column("transfer_id", String(200), primary_key=True),
    Column("state", Integer, nullable=False),
    Column("spec", LargeBinary, nullable=False),
    Column("legs", String, nullable=False),
    Column("posted_legs", String, nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("posted_amount", BigInteger, nullable=False),
    Column("code", String(64), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("resolved_at", DateTime(timezone=True), nullable=True),
)

entries = Table(
    "wallet_entries",
    metadata,
    Column("entry_id", _ID, primary_key=True, autoincrement=True),
    Column("account_id", String(200), nullable=False),
    Column("player_id", String(100), nullable=False),
    Column("account_kind", Integer, nullable=False),
    Column("transfer_id", String(200), nullable=False),
    Column("entry_type", Integer, nullable=False),
    Column("amount", BigInteger, nullable=False),
    Column("posted_after", BigInteger, nullable=False),
    Column("available_after", BigInteger, nullable=False),
    Column("code", String(64), nullable=False),
    Column("memo", String(512), nullable=False),
    Column("occurred_at", DateTime(timezone=True), nullable=False),
    Index("ix_wallet_entries_player", "player_id", "entry_id"),
    Index("ix_wallet_entries_account", "account_id", "entry_id"),
)
