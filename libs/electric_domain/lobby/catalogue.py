"""What the lobby shows of a tier: the pay table with odds, prizes and blinds per multiplier.

Shares are shown in basis points that always sum to 10000 (rounding down, the remainder to
1st place), so a winner-take-all prize shows 10000. Amounts are the tournament domain's
(``electric_domain.tournament.prizes.place_amounts``: floor, the rounding cents to 1st).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from electric_domain.tournament import TournamentConfig
from electric_domain.tournament.config import BlindLevel
from electric_domain.tournament.prizes import place_amounts


def share_bps(shares: Sequence[int]) -> tuple[int, ...]:
    """Basis points of each paid place; they sum to exactly 10000 (remainder to 1st)."""
    total = sum(shares)
    if not shares or total <= 0:
        raise ValueError(f"bad shares {tuple(shares)}")
    bps = [s * 10_000 // total for s in shares]
    bps[0] += 10_000 - sum(bps)
    return tuple(bps)


@dataclass(frozen=True)
class PrizeLine:
    """One paid place."""

    place: int
    share_bps: int
    amount_cents: int


@dataclass(frozen=True)
class PayTableLine:
    """One multiplier of a tier's pay table."""

    multiplier: int
    weight: int
    weight_total: int
    prize_pool_cents: int
    prizes: tuple[PrizeLine, ...]
    levels: tuple[BlindLevel, ...]
    #: Tournament clock until Electric Mode.
    clock_ms: int


def prizes_for(config: TournamentConfig, multiplier: int, buy_in_cents: int) -> list[PrizeLine]:
    """Paid places of a table of ``buy_in_cents`` with ``multiplier``."""
    pool = multiplier * buy_in_cents
    shares = config.pay_table.entry(multiplier).shares
    amounts = place_amounts(pool, shares, config.seats)
    return [PrizeLine(i + 1, bps, amounts[i]) for i, bps in enumerate(share_bps(shares))]


def pay_table_lines(config: TournamentConfig, buy_in_cents: int) -> list[PayTableLine]:
    """The pay table of a tier, in the configuration's order."""
    pay_table = config.pay_table
    return [
        PayTableLine(
            multiplier=e.multiplier,
            weight=e.weight,
            weight_total=pay_table.weight_total,
            prize_pool_cents=e.multiplier * buy_in_cents,
            prizes=tuple(prizes_for(config, e.multiplier, buy_in_cents)),
            levels=tuple(config.blind_levels[: e.levels]),
            clock_ms=config.clock_ms(e.multiplier),
        )
        for e in pay_table.entries
    ]
