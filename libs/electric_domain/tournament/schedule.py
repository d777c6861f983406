"""Levels, the tournament clock and button/blind positions (pure functions).

Clock (seed 000 §1, "Electric Mode"): the clock starts when the tournament starts; level
``i`` (0-based) runs from ``i × level_ms`` to ``(i + 1) × level_ms`` of elapsed time; the
clock reaches 0:00 at ``levels × level_ms``. A hand takes the level current when it is dealt;
the first hand dealt at or after 0:00 is an Electric Mode hand, and so is every later hand.

Positions (seed 000 "The Dealer Button", "The Blinds"; docs/design.md §5 heads-up rule), with
no dead button: the big blind moves to the next live seat clockwise after the previous big blind, so
nobody posts the big blind twice in a row, also when play goes from three to two players.
Three or more live players: the small blind is the live seat before the big blind and the
button the live seat before the small blind. Heads-up: the other player is the button and
posts the small blind (and acts first pre-flop). The first hand's button is drawn from the
revealed multiplier seed (see fairness.initial_button_index).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


def level_index(elapsed_ms: int, level_ms: int, levels: int) -> int:
    """0-based level at ``elapsed_ms`` (stays at the last level after 0:00)."""
    if elapsed_ms < 0:
        raise ValueError("elapsed time must be non-negative")
    return min(elapsed_ms // level_ms, levels - 1)


def clock_expired(elapsed_ms: int, level_ms: int, levels: int) -> bool:
    """True from 0:00 on (elapsed >= levels × level length)."""
    return elapsed_ms >= levels * level_ms


def remaining_ms(elapsed_ms: int, level_ms: int, levels: int) -> int:
    return max(0, levels * level_ms - elapsed_ms)


@dataclass(frozen=True, slots=True)
class Positions:
    """Button, small blind and big blind seats of one hand (button == sb heads-up)."""

    button: int
    small_blind: int
    big_blind: int


def _next_live(seat: int, live: Sequence[int], table_size: int) -> int:
    for step in range(1, table_size + 1):
        s = (seat + step) % table_size
        if s in live:
            return s
    raise ValueError("no live seat")


def _prev_live(seat: int, live: Sequence[int], table_size: int) -> int:
    for step in range(1, table_size + 1):
        s = (seat - step) % table_size
        if s in live:
            return s
    raise ValueError("no live seat")


def positions_from_bb(big_blind: int, live: Sequence[int], table_size: int) -> Positions:
    if len(live) < 2 or big_blind not in live:
        raise ValueError(f"need >= 2 live seats including the big blind, got {list(live)}")
    sb = _prev_live(big_blind, live, table_size)
    if len(live) == 2:
        return Positions(sb, sb, big_blind)
    return Positions(_prev_live(sb, live, table_size), sb, big_blind)


def first_positions(button: int, live: Sequence[int], table_size: int) -> Positions:
    """Positions of the first hand given the drawn button."""
    if len(live) == 2:
        return Positions(button, button, _next_live(button, live, table_size))
    sb = _next_live(button, live, table_size)
    return Positions(button, sb, _next_live(sb, live, table_size))


class ButtonRule(StrEnum):
    """How the button moves to the next hand (configuration ``button_rule``)."""

    #: Seed 000 rule 11 (default): "the dealer button will be moved clockwise to the next
    #: player" — the next live seat after the previous button; the blinds follow it.
    NEXT_PLAYER = "next_player"
    #: The big blind moves to the next live seat after the previous big blind; small blind
    #: and button are placed behind it (no player posts the big blind twice in a row; when
    #: the button player busts the button skips a seat). The rule before issue 11.
    BIG_BLIND_FORWARD = "big_blind_forward"


def next_positions(
    prev: Positions,
    live: Sequence[int],
    table_size: int,
    rule: ButtonRule = ButtonRule.NEXT_PLAYER,
) -> Positions:
    """Positions of the next hand under ``rule`` (see `ButtonRule`)."""
    if rule is ButtonRule.BIG_BLIND_FORWARD:
        return positions_from_bb(_next_live(prev.big_blind, live, table_size), live, table_size)
    return first_positions(_next_live(prev.button, live, table_size), live, table_size)
