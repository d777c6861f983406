"""The wallet's storage: tables (:mod:`.tables`), their migrations (``migrations/``), the
row mapping (:mod:`.rows`), the repository (:mod:`.repository`, with its PostgreSQL fast
path in :mod:`.postgres`) and the rebuild/check of the projections (:mod:`.projections`).
No SQL of the wallet lives outside this package.

The repository's functions are re-exported here: ``from electric_wallet import store``,
then ``store.load(...)``, ``store.save(...)``.
"""

from __future__ import annotations

from .postgres import pipeline
from .repository import (
    Changes,
    guarded,
    load,
    load_for_resolution,
    load_transfer,
    migrate,
    player_funds,
    save,
    statement_page,
    system_balances,
    wipe,
    write,
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
    "save",
    "statement_page",
    "system_balances",
    "transfer_from_row",
    "transfer_row",
    "transfers",
    "wipe",
    "write",
]
