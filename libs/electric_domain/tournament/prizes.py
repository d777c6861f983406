"""Finishing places and prizes (seed 000 "Prizes Awarded"; docs/design.md §5).

Rules implemented here (documented in docs/tournament-rules.md):

* Place amounts: ``prize_k = floor(pool × share_k / Σshares)`` for each paid place; the cents
  lost to flooring go to 1st place, so the amounts sum exactly to the prize pool.
* Players eliminated in the same hand take the places just below those still playing,
  ordered by their stacks at the START of that hand: the smaller stack finishes lower.
* Players eliminated in the same hand with the same starting stack share the places they
  jointly occupy: the sum of those places' prizes is split evenly in cents; the remainder
  cents go one each to the tied players in seat order clockwise starting from the first seat
  left of that hand's button.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


def place_amounts(pool_cents: int, shares: Sequence[int], places: int) -> tuple[int, ...]:
    """Cents for places 1..``places`` (unpaid places get 0); sums exactly to ``pool_cents``."""
    if pool_cents < 0:
        raise ValueError("pool must be non-negative")
    if not shares or len(shares) > places or any(s <= 0 for s in shares):
        raise ValueError(f"bad shares {tuple(shares)} for {places} places")
    total = sum(shares)
    amounts = [pool_cents * s // total for s in shares]
    amounts[0] += pool_cents - sum(amounts)
    return tuple(amounts) + (0,) * (places - len(shares))


@dataclass(frozen=True, slots=True)
class Finish:
    """Places taken by a group of players (one player unless tied)."""

    places: tuple[int, ...]
    seats: tuple[int, ...]


def rank_busts(busted_start_stacks: Mapping[int, int], players_left: int) -> tuple[Finish, ...]:
    """Order the players busted in one hand into places below the ``players_left`` survivors.

    ``busted_start_stacks`` maps seat → chips at the start of the hand. Returns groups from
    the best place to the worst; equal starting stacks form one group sharing its places.
    """
    by_stack: dict[int, list[int]] = {}
    for seat, stack in busted_start_stacks.items():
        by_stack.setdefault(stack, []).append(seat)
    out: list[Finish] = []
    next_place = players_left + 1
    for stack in sorted(by_stack, reverse=True):
        seats = tuple(sorted(by_stack[stack]))
        out.append(Finish(tuple(range(next_place, next_place + len(seats))), seats))
        next_place += len(seats)
    return tuple(out)


def clockwise_from_button(seats: Sequence[int], button: int, table_size: int) -> list[int]:
    """``seats`` sorted clockwise starting from the first seat left of ``button``."""
    return sorted(seats, key=lambda s: (s - button - 1) % table_size)


def split_group(
    amounts: Sequence[int], finish: Finish, button: int, table_size: int
) -> dict[int, int]:
    """Prize per seat of one group: the places' amounts pooled and shared evenly in cents."""
    total = sum(amounts[p - 1] for p in finish.places)
    n = len(finish.seats)
    base, rem = divmod(total, n)
    order = clockwise_from_button(finish.seats, button, table_size)
    return {seat: base + (1 if i < rem else 0) for i, seat in enumerate(order)}


def award(
    pool_cents: int,
    shares: Sequence[int],
    finishes: Sequence[tuple[Finish, int]],
    table_size: int,
) -> dict[int, int]:
    """Prize per seat from all finishes (each with the button of the hand it happened in)."""
    amounts = place_amounts(pool_cents, shares, table_size)
    prizes: dict[int, int] = {}
    for finish, button in finishes:
        prizes.update(split_group(amounts, finish, button, table_size))
    return prizes
