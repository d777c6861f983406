"""The wallet's storage: tables (:mod:`.tables`), their migrations (``migrations/``), the
row mapping (:mod:`.rows`), the repository's reads (:mod:`.repository`, with its
PostgreSQL fast path in :mod:`.postgres`) and the one projector that writes every row,
live and for rebuilds (:mod:`.projections`). No SQL of the wallet lives outside this
package.

The functions the handlers use are re-exported here: ``from electric_wallet import
store``, then ``store.load(...)``, ``store.project(...)``.
"""

from __future__ import annotations

from .postgres import pipeline
from .projections import Changes, project, wipe, write
from .repository import (
    guarded,
    load,
    load_for_resolution,
    load_transfer,
    migrate,
    player_funds,
    statement_page,
    system_balances,
)
from .rows import account_from_row, entry_from_row, entry_row, transfer_from_row, transfer_row
from .tables import VERSION_TABLE, VERSIONS_DIR, accounts, entries, metadata, transfers

__all__ = [
    "VERSIONS_DIR",
    "VERSION_TABLE",
    "Changes",
    "account_from_row",
    "accounts",
    "entries",
    "entry_from_row",
    "entry_row",
    "guarded",
    "load",
    "load_for_resolution",
    "load_transfer",
    "metadata",
    "migrate",
    "pipeline",
    "player_funds",
    "project",
    "statement_page",
    "system_balances",
    "transfer_from_row",
    "transfer_row",
    "transfers",
    "wipe",
    "write",
]
