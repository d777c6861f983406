"""A recorded hand as PokerStars-style hand-history text (the format tracking software reads).

The text follows the PokerStars tournament layout::

    PokerStars Hand #<n>: Tournament #<t>, $0.93+$0.07 USD Hold'em No Limit - Level I (10/20)
        - 2026/12/01 08:30:29 UTC                                          (one line)
    Table '<table name>' 3-max Seat #2 is the button
    Seat 1: <name> (500 in chips)
    <name>: posts the ante 5
    <name>: posts small blind 10
    <name>: posts big blind 20
    *** HOLE CARDS ***
    Dealt to <name> [Jc Jh]            (every player: an audit export knows all hole cards)
    <name>: calls 20 | raises 480 to 500 and is all-in | bets 40 | checks | folds
    Uncalled bet (40) returned to <name>
    *** FLOP *** [5s Kh Jd] / *** TURN *** [5s Kh Jd] [7c] / *** RIVER *** [5s Kh Jd 7c] [5c]
    *** SHOW DOWN ***
    <name>: shows [Jc Jh] (Three of a Kind, Jacks) | <name>: mucks hand
    <name> collected 1020 from pot
    *** SUMMARY ***
    Total pot 1020 | Rake 0
    Board [5s Kh Jd 7c 5c]
    Seat 1: <name> collected (1020)
    Seat 2: <name> (button) folded before Flop

Numbers the format needs as digits: the hand number is derived from the table id (the first
32 bits of its SHA-256) × 100000 + the hand number, the tournament number likewise from the
tournament id; the real ids are in the table name line and in the PHH export. Amounts are
chips; the buy-in in the header is in the tournament's currency. A winner's summary line has
no position marker (``collected (X)`` right after the name), the form every parser reads.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from electric_domain.cards import card_str
from electric_domain.evaluator import evaluate
from electric_domain.holdem import events as he

from electric_audit.hands import Hand
from electric_audit.narrative import money

_ROMAN = (
    (1000, "M"),
    (900, "CM"),
    (500, "D"),
    (400, "CD"),
    (100, "C"),
    (90, "XC"),
    (50, "L"),
    (40, "XL"),
    (10, "X"),
    (9, "IX"),
    (5, "V"),
    (4, "IV"),
    (1, "I"),
)
_STREETS = {1: "FLOP", 2: "TURN", 3: "RIVER"}
_STREET_NAMES = {0: "before Flop", 1: "on the Flop", 2: "on the Turn", 3: "on the River"}


def roman(n: int) -> str:
    out = []
    for value, letters in _ROMAN:
        while n >= value:
            out.append(letters)
            n -= value
    return "".join(out) or "0"


def number_of(identifier: str) -> int:
    """A stable 32-bit number for an id (PokerStars needs digits)."""
    return int(hashlib.sha256(identifier.encode()).hexdigest()[:8], 16)


def hand_number(hand: Hand) -> int:
    """The PokerStars hand number of a recorded hand."""
    return number_of(hand.table_id) * 100_000 + hand.number


def _cards(cards: Sequence[int]) -> str:
    return " ".join(card_str(c) for c in cards)


@dataclass
class _Street:
    bets: list[int]
    street: int = 0


def pokerstars_text(hand: Hand, *, rake_cents: int | None = None) -> str:
    """The PokerStars-style text of a complete hand (see the module doc)."""
    first = hand.events[0]
    assert isinstance(first, he.HandStarted)
    cfg = first.config
    n = cfg.players
    names = hand.names()
    seats = hand.seats
    started = hand.started
    level = started.level
    when = hand.started_at.strftime("%Y/%m/%d %H:%M:%S")
    buy_in = hand.buy_in_cents
    fee = rake_cents if rake_cents is not None else 0
    header = (
        f"PokerStars Hand #{hand_number(hand)}: Tournament #{number_of(hand.table_id)}, "
        f"{money(buy_in - fee)}+{money(fee)} {hand.currency} Hold'em No Limit - "
        f"Level {roman(level.level or 1)} ({cfg.small_blind}/{cfg.big_blind}) - {when} UTC"
    )
    size = max([len(hand.roster), *seats], default=n)
    lines = [
        header,
        f"Table '{hand.table_name}' {size}-max Seat #{seats[cfg.button]} is the button",
    ]
    for i in sorted(range(n), key=lambda i: seats[i]):
        lines.append(f"Seat {seats[i]}: {names[i]} ({cfg.stacks[i]} in chips)")
    lines += _body(hand, names)
    lines += _summary(hand, names)
    return "\n".join(lines) + "\n"


def _body(hand: Hand, names: Sequence[str]) -> list[str]:
    first = hand.events[0]
    assert isinstance(first, he.HandStarted)
    n = first.config.players
    stacks = list(first.config.stacks)
    street = _Street([0] * n)
    board: list[int] = []
    lines: list[str] = []
    shown = False
    hole_cards_header = False

    def all_in(player: int) -> str:
        return " and is all-in" if stacks[player] == 0 else ""

    def put(player: int, chips: int) -> None:
        stacks[player] -= chips
        street.bets[player] += chips

    for e in hand.events[1:]:
        if isinstance(e, he.AntePosted) and e.amount > 0:
            stacks[e.player] -= e.amount
            lines.append(f"{names[e.player]}: posts the ante {e.amount}{all_in(e.player)}")
        elif isinstance(e, he.BlindPosted) and e.amount > 0:
            put(e.player, e.amount)
            kind = "big" if e.big else "small"
            lines.append(f"{names[e.player]}: posts {kind} blind {e.amount}{all_in(e.player)}")
        elif isinstance(e, he.HoleCardsDealt):
            if not hole_cards_header:
                lines.append("*** HOLE CARDS ***")
                hole_cards_header = True
            lines.append(f"Dealt to {names[e.player]} [{_cards(e.cards)}]")
        elif isinstance(e, he.Folded):
            lines.append(f"{names[e.player]}: folds")
        elif isinstance(e, he.Checked):
            lines.append(f"{names[e.player]}: checks")
        elif isinstance(e, he.Called):
            put(e.player, e.amount)
            lines.append(f"{names[e.player]}: calls {e.amount}{all_in(e.player)}")
        elif isinstance(e, he.BetPlaced):
            put(e.player, e.to - street.bets[e.player])
            lines.append(f"{names[e.player]}: bets {e.to}{all_in(e.player)}")
        elif isinstance(e, he.Raised):
            top = max(street.bets)
            put(e.player, e.to - street.bets[e.player])
            lines.append(f"{names[e.player]}: raises {e.to - top} to {e.to}{all_in(e.player)}")
        elif isinstance(e, he.UncalledBetReturned):
            stacks[e.player] += e.amount
            street.bets[e.player] -= e.amount
            lines.append(f"Uncalled bet ({e.amount}) returned to {names[e.player]}")
        elif isinstance(e, he.BoardDealt):
            before = _cards(board)
            board.extend(e.cards)
            street.bets, street.street = [0] * n, e.street
            name = _STREETS.get(e.street, f"STREET {e.street}")
            prefix = f"*** {name} *** [{before}] " if before else f"*** {name} *** "
            lines.append(f"{prefix}[{_cards(e.cards)}]")
        elif isinstance(e, he.HandShown | he.HandMucked) and not shown:
            shown = True
    if shown:
        lines.append("*** SHOW DOWN ***")
        for e in hand.events:
            if isinstance(e, he.HandShown):
                lines.append(
                    f"{names[e.player]}: shows [{_cards(e.cards)}] ({_description(e.cards, board)})"
                )
            elif isinstance(e, he.HandMucked):
                lines.append(f"{names[e.player]}: mucks hand")
    pots = [e for e in hand.events if isinstance(e, he.PotAwarded)]
    for pot in pots:
        where = "pot" if len(pots) == 1 else ("main pot" if pot.index == 0 else "side pot")
        if len(pots) > 2 and pot.index > 0:
            where = f"side pot-{pot.index}"
        for winner, share in zip(pot.winners, pot.shares, strict=True):
            if share > 0:
                lines.append(f"{names[winner]} collected {share} from {where}")
    return lines


def _description(cards: Sequence[int], board: Sequence[int]) -> str:
    if len(board) == 5 and len(cards) == 2 and all(0 <= c < 52 for c in cards):
        return evaluate([*cards, *board]).description
    return "hand"


def _summary(hand: Hand, names: Sequence[str]) -> list[str]:
    first = hand.events[0]
    assert isinstance(first, he.HandStarted)
    cfg = first.config
    n = cfg.players
    pots = [e for e in hand.events if isinstance(e, he.PotAwarded)]
    total = sum(p.amount for p in pots)
    if len(pots) > 1:
        parts = [f"Main pot {pots[0].amount}."] + [
            f"Side pot{'' if len(pots) == 2 else f'-{p.index}'} {p.amount}." for p in pots[1:]
        ]
        pot_line = f"Total pot {total} " + " ".join(parts) + " | Rake 0"
    else:
        pot_line = f"Total pot {total} | Rake 0"
    lines = ["*** SUMMARY ***", pot_line]
    board = [c for e in hand.events if isinstance(e, he.BoardDealt) for c in e.cards]
    if board:
        lines.append(f"Board [{_cards(board)}]")
    won = [0] * n
    for pot in pots:
        for winner, share in zip(pot.winners, pot.shares, strict=True):
            won[winner] += share
    folded_on = _folded_streets(hand.events)
    shown = {e.player: e.cards for e in hand.events if isinstance(e, he.HandShown)}
    mucked = {e.player for e in hand.events if isinstance(e, he.HandMucked)}
    for i in sorted(range(n), key=lambda i: hand.seats[i]):
        seat = hand.seats[i]
        if won[i] > 0:
            lines.append(f"Seat {seat}: {names[i]} collected ({won[i]})")
            continue
        role = _role(i, cfg.button, n)
        label = f"Seat {seat}: {names[i]}{role}"
        if i in folded_on:
            lines.append(f"{label} folded {_STREET_NAMES.get(folded_on[i], 'before Flop')}")
        elif i in shown:
            desc = _description(shown[i], board)
            lines.append(f"{label} showed [{_cards(shown[i])}] and lost with {desc}")
        elif i in mucked:
            lines.append(f"{label} mucked")
        else:
            lines.append(f"{label} lost")
    return lines


def _role(player: int, button: int, n: int) -> str:
    if player == button:
        return " (button)"
    small = button if n == 2 else (button + 1) % n
    big = (button + 1) % n if n == 2 else (button + 2) % n
    if player == small:
        return " (small blind)"
    if player == big:
        return " (big blind)"
    return ""


def _folded_streets(events: Sequence[Any]) -> dict[int, int]:
    street = 0
    folded: dict[int, int] = {}
    for e in events:
        if isinstance(e, he.BoardDealt):
            street = e.street
        elif isinstance(e, he.Folded):
            folded[e.player] = street
    return folded
