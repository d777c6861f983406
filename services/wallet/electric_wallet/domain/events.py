"""The ledger's facts. The ledger state is a fold over them (:meth:`.Ledger.apply`), so the
same code that decides also rebuilds balances from the event log."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from .accounts import AccountKind
from .transfers import Leg, TransferRequest


def utc(moment: datetime) -> datetime:
    """An aware UTC datetime (SQLite hands back naive ones, written as UTC)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


@dataclass(frozen=True)
class AccountOpened:
    """An account came into existence (balances zero)."""

    account_id: str
    kind: AccountKind
    player_id: str
    occurred_at: datetime


@dataclass(frozen=True)
class TransferPending:
    """A two-phase transfer reserved ``legs`` on their debit accounts."""

    request: TransferRequest
    legs: tuple[Leg, ...]
    occurred_at: datetime


@dataclass(frozen=True)
class TransferPosted:
    """Money moved. ``was_pending`` tells whether this resolves a pending transfer (then
    ``legs`` are the posted legs and ``released_legs`` what went back to the debit
    accounts) or is a single-phase transfer (then ``request`` is its content)."""

    request: TransferRequest
    legs: tuple[Leg, ...]
    was_pending: bool
    released_legs: tuple[Leg, ...]
    occurred_at: datetime


@dataclass(frozen=True)
class TransferVoided:
    """A pending transfer was cancelled; ``released_legs`` went back to the debit accounts."""

    transfer_id: str
    released_legs: tuple[Leg, ...]
    reason: str
    occurred_at: datetime


Event = AccountOpened | TransferPending | TransferPosted | TransferVoided
