"""Our hand events → PHH text (the export the audit tools and the tests round-trip)."""

from __future__ import annotations

from collections.abc import Sequence

from electric_domain.cards import cards_str
from electric_domain.holdem.events import (
    BetPlaced,
    BoardDealt,
    Called,
    Checked,
    Event,
    Folded,
    HandMucked,
    HandShown,
    HandStarted,
    HoleCardsDealt,
    Raised,
)
from electric_domain.holdem.state import HandConfig
from electric_domain.phh.replay import from_minor


def _fmt_amount(v: int, scale: int, places: int) -> str:
    return str(from_minor(v, scale, places))


def to_phh(events: Sequence[Event], *, scale: int = 1, players: Sequence[str] = ()) -> str:
    """PHH text of a hand from its events (``scale``: minor units per file unit)."""
    if not events or not isinstance(events[0], HandStarted):
        raise ValueError("events must start with HandStarted")
    cfg = events[0].config
    n = cfg.players
    places = len(str(scale)) - 1
    if 10**places != scale:
        raise ValueError("scale must be a power of ten")

    def pk(i: int) -> str:
        return f"p{(i - cfg.button - 1) % n + 1}"

    def order(values: Sequence[int]) -> list[int]:
        return [values[(cfg.button + 1 + k) % n] for k in range(n)]

    def amounts(values: Sequence[int]) -> str:
        return "[" + ", ".join(_fmt_amount(v, scale, places) for v in values) + "]"

    antes = [cfg.ante_of(i) for i in range(n)]
    blinds = [0] * n
    blinds[0], blinds[1] = cfg.small_blind, cfg.big_blind
    actions: list[str] = []
    final: tuple[int, ...] | None = None
    for e in events[1:]:
        t = type(e)
        if t is HoleCardsDealt:
            assert isinstance(e, HoleCardsDealt)
            actions.append(f"d dh {pk(e.player)} {cards_str(e.cards)}")
        elif t is BoardDealt:
            assert isinstance(e, BoardDealt)
            actions.append(f"d db {cards_str(e.cards)}")
        elif t is Folded:
            assert isinstance(e, Folded)
            actions.append(f"{pk(e.player)} f")
        elif t is Checked or t is Called:
            assert isinstance(e, Checked | Called)
            actions.append(f"{pk(e.player)} cc")
        elif t is BetPlaced or t is Raised:
            assert isinstance(e, BetPlaced | Raised)
            actions.append(f"{pk(e.player)} cbr {_fmt_amount(e.to, scale, places)}")
        elif t is HandShown:
            assert isinstance(e, HandShown)
            actions.append(f"{pk(e.player)} sm {cards_str(e.cards)}")
        elif t is HandMucked:
            assert isinstance(e, HandMucked)
            actions.append(f"{pk(e.player)} sm")
        final = getattr(e, "stacks", final)
    lines = [
        "variant = 'NT'",
        "ante_trimming_status = true",
        f"antes = {amounts(order(antes))}",
        f"blinds_or_straddles = {amounts(blinds)}",
        f"min_bet = {_fmt_amount(cfg.effective_min_bet, scale, places)}",
        f"starting_stacks = {amounts(order(cfg.stacks))}",
        "actions = [" + ", ".join(f"'{a}'" for a in actions) + "]",
    ]
    if players:
        lines.append("players = [" + ", ".join(f"'{p}'" for p in order_names(players, cfg)) + "]")
    if final is not None:
        lines.append(f"finishing_stacks = {amounts(order(final))}")
    return "\n".join(lines) + "\n"


def order_names(names: Sequence[str], cfg: HandConfig) -> list[str]:
    """Our per-index names in PHH order (p1 = left of the button)."""
    n = cfg.players
    return [names[(cfg.button + 1 + k) % n] for k in range(n)]
