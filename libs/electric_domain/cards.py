"""Playing cards as small integers.

A card is an ``int`` in ``0..51``: ``rank * 4 + suit`` where ``rank`` is ``0`` for a deuce up to
``12`` for an ace and ``suit`` is ``0..3`` for clubs, diamonds, hearts, spades (``c d h s``).
This is the same numbering the hand evaluator (phevaluator) uses natively, so cards go to the
evaluator without conversion. :data:`UNKNOWN_CARD` (``-1``) stands for a card nobody has seen
(PHH ``??``).

Text form is rank then suit, e.g. ``"As"``, ``"Td"``, ``"2c"``.
"""

from __future__ import annotations

from collections.abc import Iterable

RANKS = "23456789TJQKA"
SUITS = "cdhs"
UNKNOWN_CARD = -1
FULL_DECK: tuple[int, ...] = tuple(range(52))

RANK_NAMES = (
    "Two",
    "Three",
    "Four",
    "Five",
    "Six",
    "Seven",
    "Eight",
    "Nine",
    "Ten",
    "Jack",
    "Queen",
    "King",
    "Ace",
)
RANK_PLURALS = (
    "Twos",
    "Threes",
    "Fours",
    "Fives",
    "Sixes",
    "Sevens",
    "Eights",
    "Nines",
    "Tens",
    "Jacks",
    "Queens",
    "Kings",
    "Aces",
)

_TEXT = tuple(r + s for r in RANKS for s in SUITS)
_BY_TEXT = {t: i for i, t in enumerate(_TEXT)}


def make_card(rank: int, suit: int) -> int:
    """The card of ``rank`` (0 = deuce .. 12 = ace) and ``suit`` (0..3 = c, d, h, s)."""
    if not (0 <= rank < 13 and 0 <= suit < 4):
        raise ValueError(f"bad rank/suit {rank}/{suit}")
    return rank * 4 + suit


def rank_of(card: int) -> int:
    """Rank index 0 (deuce) .. 12 (ace)."""
    return card >> 2


def suit_of(card: int) -> int:
    """Suit index 0..3 (clubs, diamonds, hearts, spades)."""
    return card & 3


def card_str(card: int) -> str:
    """``"As"``-style text; ``"??"`` for :data:`UNKNOWN_CARD`."""
    if card == UNKNOWN_CARD:
        return "??"
    if not 0 <= card < 52:
        raise ValueError(f"not a card: {card!r}")
    return _TEXT[card]


def cards_str(cards: Iterable[int]) -> str:
    """Concatenated text of several cards, e.g. ``"AsKd"``."""
    return "".join(card_str(c) for c in cards)


def parse_card(text: str) -> int:
    """Parse one card (``"As"``, case of the suit letter ignored); ``"??"`` is unknown."""
    if text == "??":
        return UNKNOWN_CARD
    if len(text) == 2:
        card = _BY_TEXT.get(text[0].upper() + text[1].lower())
        if card is not None:
            return card
    raise ValueError(f"not a card: {text!r}")


def parse_cards(text: str) -> tuple[int, ...]:
    """Parse concatenated cards (``"AsKd"``, spaces allowed)."""
    if len(text) == 4:
        a, b = _BY_TEXT.get(text[:2]), _BY_TEXT.get(text[2:])
        if a is not None and b is not None:
            return (a, b)
    compact = text.replace(" ", "")
    if len(compact) % 2:
        raise ValueError(f"not a list of cards: {text!r}")
    return tuple(parse_card(compact[i : i + 2]) for i in range(0, len(compact), 2))
