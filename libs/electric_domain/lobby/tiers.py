"""Buy-in tiers of the lobby: ids, names, and the prize pools a tier can reach."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Tier:
    """What a lobby decision needs of a tier."""

    tier_id: str
    name: str
    buy_in_cents: int
    rake_cents: int
    seats: int
    starting_stack: int


def tier_id_for(buy_in_cents: int) -> str:
    """Stable tier id of a buy-in, e.g. ``electric-500`` for $5."""
    return f"electric-{buy_in_cents}"


def dollars(cents: int) -> str:
    """``$5`` or ``$2.50``."""
    return f"${cents // 100}" if cents % 100 == 0 else f"${cents // 100}.{cents % 100:02d}"


def tier_name(buy_in_cents: int) -> str:
    """Display name of a tier, e.g. ``$5 Electric Poker``."""
    return f"{dollars(buy_in_cents)} Electric Poker"


def table_name(tier: Tier, number: int) -> str:
    """Name of the ``number``-th table of a tier (1-based)."""
    return f"{tier.name} #{number}"


def prize_pool_range(buy_in_cents: int, multipliers: Sequence[int]) -> tuple[int, int]:
    """(lowest, highest) prize pool a table of the tier can draw."""
    return min(multipliers) * buy_in_cents, max(multipliers) * buy_in_cents
