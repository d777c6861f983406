"""Payout's tables. Names start with ``payout_``; no other service reads them.

- ``payout_prizes``: one row per (tournament, place, player) prize, written in the same
  transaction as its PrizeAwarded event; status ``awarded`` then ``credited`` (with
  PrizeCredited). ``transfer_key`` is the wallet idempotency key of the credit.
- ``payout_tournaments``: what TournamentStarted said (prize pool, pay table, seats).
- ``payout_results``: the TournamentFinished of a tournament (serialized), and when its
  prizes were awarded, or held because the audit re-check of the published prizes failed.
- ``payout_hand_buttons``: the button seat of each hand (from HandStarted): the tie-split
  remainder rule starts left of the button of the hand the tied players went out in.
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
    Text,
    text,
)

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
    # migration 0002 (tournaments, results, hand buttons)
    Column("transfer_key", String(200), nullable=False, server_default=text("''")),
    Column("seat", Integer, nullable=False, server_default=text("0")),
    Column("tied_count", Integer, nullable=False, server_default=text("1")),
    Column("attempts", Integer, nullable=False, server_default=text("0")),
    Column("last_error", Text, nullable=False, server_default=text("''")),
    Index("ix_payout_prizes_player", "player_id", "awarded_at"),
    Index("ix_payout_prizes_status", "status"),
)

tournaments = Table(
    "payout_tournaments",
    metadata,
    Column("tournament_id", String(64), primary_key=True),
    Column("table_id", String(64), nullable=False),
    Column("buy_in_cents", BigInteger, nullable=False),
    Column("prize_pool_cents", BigInteger, nullable=False),
    Column("multiplier", BigInteger, nullable=False),
    Column("paytable_version", String(64), nullable=False),
    Column("table_size", Integer, nullable=False),
    #: Serialized registration TournamentStarted.
    Column("started", LargeBinary, nullable=False),
    Column("received_at", DateTime(timezone=True), nullable=False),
)

results = Table(
    "payout_results",
    metadata,
    Column("tournament_id", String(64), primary_key=True),
    #: Serialized table TournamentFinished.
    Column("finished", LargeBinary, nullable=False),
    Column("source_event_id", String(64), nullable=False),
    Column("received_at", DateTime(timezone=True), nullable=False),
    Column("awarded_at", DateTime(timezone=True), nullable=True),
    # migration 0003: set when the prize check failed (nothing is awarded or credited).
    Column("held_at", DateTime(timezone=True), nullable=True),
    # migration 0005: the TournamentFinished's correlation id (the tournament's chain).
    Column("correlation_id", String(200), nullable=False, server_default=""),
)

hand_buttons = Table(
    "payout_hand_buttons",
    metadata,
    Column("table_id", String(64), primary_key=True),
    Column("hand_number", BigInteger, primary_key=True),
    Column("button_seat", Integer, nullable=False),
)

#: Casino wins (migration 0004): one row per winning bet of a settled casino round (round +
#: player + bet kind), written with its CasinoWinOwed event; status ``owed`` then
#: ``credited`` (with CasinoWinCredited). ``transfer_key`` is the wallet idempotency key.
casino_wins = Table(
    "payout_casino_wins",
    metadata,
    Column("round_id", String(64), primary_key=True),
    Column("player_id", String(200), primary_key=True),
    Column("bet_kind", String(32), primary_key=True),
    Column("table_id", String(64), nullable=False),
    Column("game", String(16), nullable=False),
    Column("stake_cents", BigInteger, nullable=False),
    Column("win_cents", BigInteger, nullable=False),
    #: The bet's wallet stake transfer (winnings split like it was funded); may be empty.
    Column("stake_transfer_id", String(200), nullable=False),
    #: owed | credited
    Column("status", String(16), nullable=False),
    Column("transfer_key", String(200), nullable=False),
    Column("wallet_transfer_id", String(200), nullable=False),
    Column("source_event_id", String(64), nullable=False),
    Column("owed_at", DateTime(timezone=True), nullable=False),
    Column("credited_at", DateTime(timezone=True), nullable=True),
    Column("attempts", Integer, nullable=False),
    Column("last_error", Text, nullable=False),
    Index("ix_payout_casino_wins_player", "player_id", "owed_at"),
    Index("ix_payout_casino_wins_status", "status"),
)

#: Casino rounds (migration 0004): the first of RoundSettled / RoundVoided consumed for a
#: round decides it (``outcome`` settled | voided); a later one changes nothing.
casino_rounds = Table(
    "payout_casino_rounds",
    metadata,
    Column("round_id", String(64), primary_key=True),
    Column("table_id", String(64), nullable=False),
    Column("game", String(16), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("reason", Text, nullable=False),
    Column("source_event_id", String(64), nullable=False),
    Column("decided_at", DateTime(timezone=True), nullable=False),
)
