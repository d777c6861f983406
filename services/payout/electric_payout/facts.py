"""Payout's own facts, as plain values (no I/O): what the handlers decide, what the mapper
(:mod:`electric_payout.codec`) stores and what the projector
(:mod:`electric_payout.store.projections`) folds into rows.

Each field of a fact is a field of its stored message (``electric.payout.v1``), amounts in
cents, plus the moment it occurred (the envelope's ``occurred_at``). A few facts also carry
**row context**: columns of the row the projector writes that the stored message does not
have (a prize's seat and buy-in, a win's stake transfer). The handlers fill them when they
decide; a fact read back from the store has None there, and a rebuild takes them from the
rows it replaces or from the consumed facts (docs/payout.md, "Projections").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from electric_domain.payout import Discrepancy


@dataclass(frozen=True)
class PrizeAwarded:
    """A tournament's prize for one finishing place (stream ``payout-<tournament>``)."""

    tournament_id: str
    table_id: str
    place: int
    player_id: str
    entry_id: str
    amount_cents: int
    share_bps: int
    tied_count: int
    multiplier: int
    paytable_version: str
    source_event_id: str
    occurred_at: datetime
    #: Row context (module doc): not stored in the event.
    buy_in_cents: int | None = None
    seat: int | None = None


@dataclass(frozen=True)
class PrizeCheckFailed:
    """The audit re-check disagreed with the published prizes: the tournament is held."""

    tournament_id: str
    table_id: str
    discrepancies: tuple[Discrepancy, ...]
    prize_pool_cents: int
    multiplier: int
    paytable_version: str
    source_event_id: str
    occurred_at: datetime


@dataclass(frozen=True)
class PrizeCredited:
    """The wallet credited an awarded prize."""

    tournament_id: str
    place: int
    player_id: str
    amount_cents: int
    wallet_transfer_id: str
    idempotency_key: str
    occurred_at: datetime


@dataclass(frozen=True)
class CasinoWinOwed:
    """A winning bet of a settled casino round is owed (stream ``payout-casino-<round>``)."""

    round_id: str
    table_id: str
    game: str
    player_id: str
    bet_kind: str
    stake_cents: int
    win_cents: int
    idempotency_key: str
    source_event_id: str
    occurred_at: datetime
    #: Row context (module doc): the bet's wallet stake transfer, not stored in the event.
    stake_transfer_id: str | None = None


@dataclass(frozen=True)
class CasinoWinCredited:
    """The wallet credited an owed casino win."""

    round_id: str
    table_id: str
    game: str
    player_id: str
    bet_kind: str
    amount_cents: int
    wallet_transfer_id: str
    idempotency_key: str
    occurred_at: datetime


Fact = PrizeAwarded | PrizeCheckFailed | PrizeCredited | CasinoWinOwed | CasinoWinCredited
