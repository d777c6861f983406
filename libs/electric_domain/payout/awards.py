"""Awards from a tournament's published result (the table's prizes are the source of truth).

A finishing place with ``tied_count = k > 1`` starts a group of the k players that went out
together (whether they are all reported at the best shared place or at consecutive places);
the group occupies the k places from the best one down, and every player of it is awarded at
the group's best place with ``tied_count = k`` (docs/tournament-rules.md, "Prizes").
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from electric_domain.tournament.prizes import Finish

#: Longest wallet transfer id.
MAX_TRANSFER_ID = 128


@dataclass(frozen=True)
class PlaceResult:
    """One player's finishing place as the table published it."""

    place: int
    seat: int
    player_id: str
    entry_id: str
    tied_count: int
    #: Hand in which the player went out (0 for the winner).
    eliminated_in_hand: int
    #: The prize the table's tournament rules gave this place; None when not published.
    prize_cents: int | None


@dataclass(frozen=True)
class Award:
    """One player's prize."""

    place: int
    seat: int
    player_id: str
    entry_id: str
    amount_cents: int
    tied_count: int


def _ordered(places: Sequence[PlaceResult]) -> list[PlaceResult]:
    return sorted(places, key=lambda p: (p.place, p.seat))


def finish_groups(
    places: Sequence[PlaceResult], buttons: Mapping[int, int]
) -> list[tuple[Finish, int]]:
    """The finishing places as the tournament domain's ``Finish`` groups (module doc), each
    with the button seat of the hand it happened in (0 when unknown: clockwise from 1)."""
    ordered = _ordered(places)
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


def published_awards(places: Sequence[PlaceResult]) -> list[Award]:
    """Every non-zero prize the table published, at each group's best place (module doc).
    Places without a published prize count as 0 (the audit flags them)."""
    groups = finish_groups(places, {})
    tied = {seat: len(f.seats) for f, _ in groups for seat in f.seats}
    best = {seat: f.places[0] for f, _ in groups for seat in f.seats}
    out = [
        Award(
            place=best[p.seat],
            seat=p.seat,
            player_id=p.player_id,
            entry_id=p.entry_id,
            amount_cents=p.prize_cents or 0,
            tied_count=tied[p.seat],
        )
        for p in _ordered(places)
    ]
    return [a for a in out if a.amount_cents > 0]


def prize_transfer_id(table_id: str, player_id: str, place: int) -> str:
    """Wallet idempotency key of a prize credit: table + place + player (the player id is
    hashed when the key would exceed the wallet's 128 characters)."""
    key = f"prize-{table_id}-{place}-{player_id}"
    if len(key) <= MAX_TRANSFER_ID:
        return key
    digest = hashlib.sha256(player_id.encode()).hexdigest()[:40]
    return f"prize-{table_id}-{place}-{digest}"
