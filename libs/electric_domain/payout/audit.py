"""Payout's audit control over the table's prizes.

The table's tournament domain computes the prizes and publishes them; payout pays those.
Before any money moves, payout re-computes them from the pay table (the arithmetic of
``electric_domain.tournament.prizes``: place amounts ``floor(pool × share / Σshares)`` with
the rounding cents to 1st, ties sharing the places they occupy evenly, remainder cents one
each clockwise from the first seat left of that hand's button) and compares:

- every seat's published prize with the re-computed one (a missing prize is a failure);
- the published prizes' total with the prize pool TournamentStarted announced;
- the prize pool and multiplier the result names with those of TournamentStarted.

Any difference holds the whole tournament (:class:`Held`): nothing is awarded or credited.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from electric_domain.payout.awards import Award, PlaceResult, finish_groups, published_awards
from electric_domain.tournament import TournamentConfig
from electric_domain.tournament.prizes import award


class UnknownPayTable(ValueError):
    """Neither the configured pay table nor the published shares can price the tournament."""


class PrizeCheck(enum.Enum):
    """What disagreed."""

    SEAT_PRIZE = "seat_prize"
    MISSING_PRIZE = "missing_prize"
    TOTAL = "total"
    PRIZE_POOL = "prize_pool"
    MULTIPLIER = "multiplier"
    PAY_TABLE = "pay_table"


@dataclass(frozen=True)
class Discrepancy:
    """One disagreement between the published result and the re-check."""

    check: PrizeCheck
    seat: int = 0
    player_id: str = ""
    published_cents: int = 0
    expected_cents: int = 0
    detail: str = ""


@dataclass(frozen=True)
class Terms:
    """What TournamentStarted fixed for the tournament."""

    pool_cents: int
    multiplier: int
    paytable_version: str
    table_size: int
    #: The published places' share weights (basis points), 1st first.
    published_shares: tuple[int, ...] = ()


@dataclass(frozen=True)
class Settled:
    """The prizes check out: award these."""

    awards: tuple[Award, ...]


@dataclass(frozen=True)
class Held:
    """The re-check disagrees: move no money for this tournament."""

    discrepancies: tuple[Discrepancy, ...]


def shares_for(config: TournamentConfig, terms: Terms) -> tuple[int, ...]:
    """Share weights of the paid places: the configured pay table when its version is the
    one the tournament was started with, else the shares the tournament published."""
    if terms.paytable_version == config.version:
        try:
            return config.pay_table.entry(terms.multiplier).shares
        except KeyError:
            pass
    shares = terms.published_shares
    if not shares or any(s <= 0 for s in shares):
        raise UnknownPayTable(
            f"no usable pay table for version {terms.paytable_version!r} and multiplier "
            f"{terms.multiplier}"
        )
    return shares


def expected_prizes(
    config: TournamentConfig,
    terms: Terms,
    places: Sequence[PlaceResult],
    buttons: Mapping[int, int],
) -> dict[int, int]:
    """Prize per seat by the pay table (module doc); sums to the prize pool."""
    size = terms.table_size or max((p.seat for p in places), default=0)
    return award(terms.pool_cents, shares_for(config, terms), finish_groups(places, buttons), size)


def check_prizes(
    config: TournamentConfig,
    terms: Terms,
    places: Sequence[PlaceResult],
    buttons: Mapping[int, int],
    *,
    result_pool_cents: int = 0,
    result_multiplier: int = 0,
) -> list[Discrepancy]:
    """Every disagreement between the published prizes and the re-check (empty: all agree).
    ``result_pool_cents`` / ``result_multiplier``: what the result names (0: not named)."""
    found: list[Discrepancy] = []
    if result_pool_cents and result_pool_cents != terms.pool_cents:
        found.append(
            Discrepancy(
                PrizeCheck.PRIZE_POOL,
                published_cents=result_pool_cents,
                expected_cents=terms.pool_cents,
                detail="the result's prize pool differs from TournamentStarted's",
            )
        )
    if result_multiplier and result_multiplier != terms.multiplier:
        found.append(
            Discrepancy(
                PrizeCheck.MULTIPLIER,
                detail=f"result multiplier {result_multiplier}, started {terms.multiplier}",
            )
        )
    try:
        expected = expected_prizes(config, terms, places, buttons)
    except (UnknownPayTable, ValueError) as err:
        found.append(Discrepancy(PrizeCheck.PAY_TABLE, detail=str(err)))
        expected = None
    for p in sorted(places, key=lambda p: (p.place, p.seat)):
        want = expected.get(p.seat, 0) if expected is not None else 0
        if p.prize_cents is None:
            found.append(
                Discrepancy(
                    PrizeCheck.MISSING_PRIZE,
                    seat=p.seat,
                    player_id=p.player_id,
                    expected_cents=want,
                    detail="the result carries no prize for this place",
                )
            )
        elif expected is not None and p.prize_cents != want:
            found.append(
                Discrepancy(
                    PrizeCheck.SEAT_PRIZE,
                    seat=p.seat,
                    player_id=p.player_id,
                    published_cents=p.prize_cents,
                    expected_cents=want,
                )
            )
    total = sum(p.prize_cents or 0 for p in places)
    if total != terms.pool_cents:
        found.append(
            Discrepancy(
                PrizeCheck.TOTAL,
                published_cents=total,
                expected_cents=terms.pool_cents,
                detail="the published prizes do not sum to the prize pool",
            )
        )
    return found


def settle(
    config: TournamentConfig,
    terms: Terms,
    places: Sequence[PlaceResult],
    buttons: Mapping[int, int],
    *,
    result_pool_cents: int = 0,
    result_multiplier: int = 0,
) -> Settled | Held:
    """Pay the published prizes when the audit re-check agrees; hold them otherwise."""
    found = check_prizes(
        config,
        terms,
        places,
        buttons,
        result_pool_cents=result_pool_cents,
        result_multiplier=result_multiplier,
    )
    if found:
        return Held(tuple(found))
    return Settled(tuple(published_awards(places)))
