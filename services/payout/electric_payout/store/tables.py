"""Payout's tables. Names start with ``payout_``; no other service reads them.

``payout_prizes``: one row per (tournament, place, player) prize, written in the same
transaction as its PrizeAwarded event; status ``awarded`` then ``credited``.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import BigInteger, Column, DateTime, Index, Integer, MetaData, String, Table

#: Alembic revisions of payout's own tables.
VERSIONS_DIR = Path(__file__).resolve().parent / "migrations" / "versions"

metadata = MetaData()

prizes = Table(
    "payout_prizes",
    metadata,
    Column("tournament_id", String(64), primary_key=True),
    Column("place", Integer, primary_key=True),
    Column("player_id", String(200), primary_key=True),
    Column("entry_id", String(64), nullable=False),
    Column("table_id", String(64), nullable=False),
    Column("amount_cents", BigInteger, nullable=False),
    Column("buy_in_cents", BigInteger, nullable=False),
    Column("prize_pool_cents", BigInteger, nullable=False),
    Column("multiplier", BigInteger, nullable=False),
    Column("paytable_version", String(64), nullable=False),
    #: awarded | credited
    Column("status", String(16), nullable=False),
    Column("wallet_transfer_id", String(200), nullable=False),
    Column("awarded_at", DateTime(timezone=True), nullable=False),
    Column("credited_at", DateTime(timezone=True), nullable=True),
    Index("ix_payout_prizes_player", "player_id", "awarded_at"),
)
