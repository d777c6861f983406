"""Hole-card nicknames from seed 001's "Texas Hold'em Glossary" (suits do not matter)."""

from __future__ import annotations

from electric_domain.cards import RANKS

_GLOSSARY = {
    "AA": "Bullets",
    "AK": "Big Slick",
    "AJ": "Ajax",
    "KK": "Cowboys",
    "KQ": "Marriage",
    "KJ": "Kojak",
    "K9": "Canine",
    "QQ": "Ladies",
    "QJ": "Maverick",
    "Q7": "Computer Hand",
    "JJ": "Jokers",
    "J9": "T.J. Cloutier",
    "J5": "Jackson",
    "T5": "Five and dime",
    "T2": "Doyle Brunson",
    "99": "Meat hooks",
    "88": "Snowmen",
    "77": "Hockey Sticks",
    "72": "The Hammer",
    "55": "Speed Limit",
    "54": "Jesse James",
    "44": "Sailboats",
    "22": "Ducks",
}


def nickname(a: int, b: int) -> str | None:
    """The glossary name of hole cards ``a``/``b`` (card ids), or None."""
    hi, lo = max(a >> 2, b >> 2), min(a >> 2, b >> 2)
    return _GLOSSARY.get(RANKS[hi] + RANKS[lo])
