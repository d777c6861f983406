"""Table service's read model. Names start with ``table_``; no other service reads them.

The event stream ``table-<table_id>`` is the source of truth; ``table_tables`` and
``table_seats`` are the projection GetTable/WatchTable read, written by the projector
(store/projector.py) in the same transaction as the events. The request, deck seed,
multiplier seed and settings rows are the handlers' and consumers' own (see
``electric_table.projections`` for why each is not a projection).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    text,
)

#: Alembic revisions of the table service's own tables.
VERSIONS_DIR = Path(__file__).resolve().parent / "migrations" / "versions"

metadata = MetaData()

tables = Table(
    "table_tables",
    metadata,
    Column("table_id", String(64), primary_key=True),
    Column("table_name", String(200), nullable=False),
    #: starting | running | finished
    Column("status", String(32), nullable=False),
    Column("multiplier", BigInteger, nullable=False),
    Column("prize_pool_cents", BigInteger, nullable=False),
    Column("buy_in_cents", BigInteger, nullable=False),
    Column("starting_stack", BigInteger, nullable=False),
    Column("stream_version", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

seats = Table(
    "table_seats",
    metadata,
    Column("table_id", String(64), primary_key=True),
    Column("seat", Integer, primary_key=True),
    Column("player_id", String(200), nullable=False),
    Column("entry_id", String(64), nullable=False),
    Column("display_name", String(200), nullable=False),
    Column("stack", BigInteger, nullable=False),
)

#: Command de-duplication: one row per (table, player, request id), written in the same
#: transaction as the command's events (or with the refusal's code when it was refused).
requests = Table(
    "table_requests",
    metadata,
    Column("table_id", String(64), primary_key=True),
    Column("player_id", String(200), primary_key=True),
    Column("request_id", String(200), primary_key=True),
    Column("rpc", String(32), nullable=False),
    Column("code", String(32), nullable=False),
    Column("message", Text, nullable=False),
    Column("stream_version", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

#: Deck seeds withheld from the published events until their hand ends (replay needs them).
deck_seeds = Table(
    "table_deck_seeds",
    metadata,
    Column("table_id", String(64), primary_key=True),
    Column("hand_number", BigInteger, primary_key=True),
    Column("seed_hex", String(128), nullable=False),
)

#: Multiplier seeds revealed by registration's TableFilled (TournamentStarted may lack it).
multiplier_seeds = Table(
    "table_multiplier_seeds",
    metadata,
    Column("table_id", String(64), primary_key=True),
    Column("seed_hex", String(128), nullable=False),
    Column("multiplier", BigInteger, nullable=False),
)

#: The latest showdown settings per player (registration's PlayerSettingsChanged; the
#: highest settings version wins). Read at every deal and passed into the hand.
player_settings = Table(
    "table_player_settings",
    metadata,
    Column("player_id", String(200), primary_key=True),
    Column("muck_winning_hands", Boolean, nullable=False),
    Column("muck_losing_hands", Boolean, nullable=False),
    Column("version", BigInteger, nullable=False),
)

# ------------------------------------------------------------------- casino rounds (THB/UTH)
# The stream ``casino-<round_id>`` is the source of truth; the round and UTH player rows are
# written by the projector in the same transaction as its events (store/projector.py).

#: ``table_casino_rounds.status`` of a round.
ROUND_OPEN, ROUND_SETTLED, ROUND_VOIDED = "open", "settled", "voided"
#: ``game`` of a live UTH round (its result is acknowledged per player).
UTH_GAME = "uth"

#: One row per round: who plays it, whether it is open, whether its result was seen.
casino_rounds = Table(
    "table_casino_rounds",
    metadata,
    Column("round_id", String(64), primary_key=True),
    Column("table_id", String(64), nullable=False, index=True),
    Column("game", String(8), nullable=False),
    Column("player_id", String(200), nullable=False, index=True),
    Column("game_number", String(64), nullable=False),
    #: open | settled | voided
    Column("status", String(16), nullable=False),
    Column("acknowledged", Boolean, nullable=False),
    #: Deck seed withheld from the published records until DeckRevealed (replay needs it).
    Column("seed_hex", String(128), nullable=False),
    Column("stream_version", BigInteger, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
#: One open THB round per table and player (migration table_0005).
Index(
    "uq_table_casino_rounds_open_thb",
    casino_rounds.c.table_id,
    casino_rounds.c.player_id,
    unique=True,
    postgresql_where=text("status = 'open' AND game = 'thb'"),
    sqlite_where=text("status = 'open' AND game = 'thb'"),
)

#: One row per bet: its wallet reservation (transfer id = bet_id) and the call settlement
#: owes on it (``post`` / ``void``), done by the owed-work runner.
casino_bets = Table(
    "table_casino_bets",
    metadata,
    Column("bet_id", String(128), primary_key=True),
    Column("round_id", String(64), nullable=False, index=True),
    Column("player_id", String(200), nullable=False),
    Column("spot", String(16), nullable=False),
    Column("amount_cents", BigInteger, nullable=False),
    #: '' while the round is open; then post | void
    Column("owed_op", String(8), nullable=False),
    Column("op_done", Boolean, nullable=False),
    Column("last_error", Text, nullable=False),
)

#: The players with stakes in each live UTH round (rows added when betting closes, or by a
#: void), and whether each saw the result (AckResult).
casino_uth_players = Table(
    "table_casino_uth_players",
    metadata,
    Column("round_id", String(64), primary_key=True),
    Column("player_id", String(200), primary_key=True, index=True),
    Column("table_id", String(64), nullable=False),
    Column("acknowledged", Boolean, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

#: Who may bet where: registration's CasinoSeatTaken adds a row, CasinoSeatReleased (same
#: session) removes it (electric_table.casino.consumers).
casino_seats = Table(
    "table_casino_seats",
    metadata,
    Column("table_id", String(64), primary_key=True),
    Column("player_id", String(200), primary_key=True),
    Column("game", String(8), nullable=False),
    Column("seat", Integer, nullable=False),
    Column("session_id", String(64), nullable=False),
)

#: Casino command de-duplication: one row per (player, request id).
casino_requests = Table(
    "table_casino_requests",
    metadata,
    Column("player_id", String(200), primary_key=True),
    Column("request_id", String(200), primary_key=True),
    Column("rpc", String(32), nullable=False),
    Column("round_id", String(64), nullable=False),
    Column("code", String(32), nullable=False),
    Column("message", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)
