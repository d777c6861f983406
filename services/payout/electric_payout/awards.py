"""Prizes from a tournament's result: the pay table's shares and the finishing places.

The arithmetic is the tournament domain's (``electric_domain.tournament.prizes``): place
amounts are ``floor(pool × share / Σshares)`` with the rounding cents to 1st; players who went
out in the same hand with the same starting stack share the prizes of the places they
jointly occupy evenly, the remainder cents one each clockwise from the first seat left of
that hand's button. This module only maps the events onto it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from electric.registration.v1 import events_pb2 as registration_events
from electric.table.v1 import events_pb2 as table_events
from electric_domain.tournament import TournamentConfig
from electric_domain.tournament.prizes import Finish, award

#: Longest wallet transfer id.
MAX_TRANSFER_ID = 128


@dataclass(frozen=True)
class Award:
    """One player's prize."""

    place: int
    seat: int
    player_id: str
    entry_id: str
    amount_cents: int
    tied_count: int


def shares_for(
    config: TournamentConfig, started: registration_events.TournamentStarted
) -> tuple[int, ...]:
    """Integer share weights of the paid places: the configured pay table when its version
    is the one the tournament was started with, else the shares the tournament published."""
    if started.paytable_version == config.version:
        try:
            return config.pay_table.entry(started.multiplier).shares
        except KeyError:
            pass
    shares = tuple(p.share_bps for p in sorted(started.payouts, key=lambda p: p.place))
    if not shares or any(s <= 0 for s in shares):
        raise ValueError(
            f"tournament {started.tournament_id}: no usable pay table for version "
            f"{started.paytable_version!r} and multiplier {started.multiplier}"
        )
    return shares


def finishes(
    places: Sequence[table_events.FinishingPlace], buttons: Mapping[int, int]
) -> list[tuple[Finish, int]]:
    """Group the finishing places into the domain's ``Finish`` groups, each with the button
    seat of the hand it happened in (0 when unknown: clockwise from seat 1).

    A place with ``tied_count = k > 1`` starts a group of the k players that went out
    together (whether they are all reported at the best shared place or at consecutive
    places); the group occupies the k places from the best one down.
    """
    ordered = sorted(places, key=lambda p: (p.place, p.seat))
    out: list[tuple[Finish, int]] = []
    i = 0
    while i < len(ordered):
        first = ordered[i]
        k = max(1, first.tied_count)
        group = ordered[i : i + k]
        out.append(
            (
                Finish(
                    tuple(range(first.place, first.place + len(group))),
                    tuple(p.seat for p in group),
                ),
                buttons.get(first.eliminated_in_hand, 0),
            )
        )
        i += len(group)
    return out


def compute_awards(
    config: TournamentConfig,
    started: registration_events.TournamentStarted,
    finished: table_events.TournamentFinished,
    buttons: Mapping[int, int],
) -> list[Award]:
    """Every non-zero prize of the tournament; they sum to the prize pool."""
    pool = started.prize_pool.cents
    size = started.table_size or max(
        [len(started.seats), *(p.seat for p in finished.places)], default=0
    )
    groups = finishes(finished.places, buttons)
    by_seat = award(pool, shares_for(config, started), groups, size)
    tied = {seat: len(f.seats) for f, _ in groups for seat in f.seats}
    best = {seat: f.places[0] for f, _ in groups for seat in f.seats}
    out = [
        Award(
            place=best[p.seat],
            seat=p.seat,
            player_id=p.player_id,
            entry_id=p.entry_id,
            amount_cents=by_seat.get(p.seat, 0),
            tied_count=tied[p.seat],
        )
        for p in sorted(finished.places, key=lambda p: (p.place, p.seat))
    ]
    return [a for a in out if a.amount_cents > 0]


def prize_transfer_id(tournament_id: str, player_id: str, place: int) -> str:
    """Wallet idempotency key of a prize credit: tournament + place + player (the player id
    is hashed when the key would exceed the wallet's 128 characters)."""
    key = f"prize-{tournament_id}-{place}-{player_id}"
    if len(key) <= MAX_TRANSFER_ID:
        return key
    digest = hashlib.sha256(player_id.encode()).hexdigest()[:40]
    return f"prize-{tournament_id}-{place}-{digest}"
