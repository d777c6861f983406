"""The one place where plain values become protobuf messages and back.

Money is integer cents (never floats) in ``electric.common.v1.Money``; cards are the engine's
card numbers; times are UTC datetimes or epoch milliseconds in ``google.protobuf`` well-known
types. Ids are plain strings on the wire; the ids of wallet accounts shared between services
are built in :mod:`electric_clients.accounts`. Every service, the bots, the runner and the
tests convert through these functions, so a unit or an encoding is decided once.
"""

from __future__ import annotations

from datetime import UTC, datetime

from electric.common.v1 import cards_pb2, money_pb2
from google.protobuf import duration_pb2, timestamp_pb2

# ---------------------------------------------------------------------------------- money

#: The platform currency; ``Money.currency`` "" means this one (money.proto).
CURRENCY = "USD"


def usd(cents: int) -> money_pb2.Money:
    """``Money`` of ``cents`` US cents."""
    return money_pb2.Money(cents=cents, currency=CURRENCY)


def cents(money: money_pb2.Money) -> int:
    """The cents of a ``Money`` in the platform currency (ValueError for another currency)."""
    if money.currency not in ("", CURRENCY):
        raise ValueError(f"not {CURRENCY}: {money.currency!r}")
    return int(money.cents)


# ---------------------------------------------------------------------------------- cards

#: Rank letters in the engine's order: index 0 is a deuce, 12 an ace.
RANKS = "23456789TJQKA"
#: Suit letters in the engine's order: clubs, diamonds, hearts, spades.
SUITS = "cdhs"


def card(number: int) -> cards_pb2.Card:
    """The proto card of an engine card number ``rank * 4 + suit`` (0..51; see
    ``electric_domain.cards``): ``Rank`` = rank + 2, ``Suit`` = suit + 1, ``text`` ``"As"``."""
    if not 0 <= number < 52:
        raise ValueError(f"not a card: {number!r}")
    rank, suit = divmod(number, 4)
    return cards_pb2.Card(
        rank=rank + 2,  # type: ignore[arg-type]  # protobuf enums are ints on the wire
        suit=suit + 1,  # type: ignore[arg-type]
        text=RANKS[rank] + SUITS[suit],
    )


def card_of_text(text: str) -> cards_pb2.Card:
    """The proto card of ``"As"``-style text (suit letter case ignored)."""
    if len(text) != 2 or text[0].upper() not in RANKS or text[1].lower() not in SUITS:
        raise ValueError(f"not a card: {text!r}")
    return card(RANKS.index(text[0].upper()) * 4 + SUITS.index(text[1].lower()))


def card_number(proto: cards_pb2.Card) -> int:
    """The engine card number of a proto card: from rank and suit, else from its text."""
    if proto.rank and proto.suit:
        rank, suit = int(proto.rank) - 2, int(proto.suit) - 1
        if not (0 <= rank < 13 and 0 <= suit < 4):
            raise ValueError(f"bad rank/suit {proto.rank}/{proto.suit}")
        return rank * 4 + suit
    text = proto.text
    if len(text) != 2:
        raise ValueError(f"card without rank/suit or text: {proto!r}")
    return RANKS.index(text[0].upper()) * 4 + SUITS.index(text[1].lower())


# ------------------------------------------------------------------------------ timestamps


def timestamp(at: datetime) -> timestamp_pb2.Timestamp:
    """A ``Timestamp`` of an aware datetime (a naive one is taken as UTC)."""
    out = timestamp_pb2.Timestamp()
    out.FromDatetime(at if at.tzinfo else at.replace(tzinfo=UTC))
    return out


def timestamp_or_none(at: datetime | None) -> timestamp_pb2.Timestamp | None:
    """:func:`timestamp`, or None for None (an unset optional field)."""
    return None if at is None else timestamp(at)


def utc_datetime(ts: timestamp_pb2.Timestamp) -> datetime:
    """The aware UTC datetime of a ``Timestamp``."""
    return ts.ToDatetime(tzinfo=UTC)


def ms_timestamp(ms: int) -> timestamp_pb2.Timestamp:
    """A ``Timestamp`` of epoch milliseconds (the domain's clock unit)."""
    out = timestamp_pb2.Timestamp()
    out.FromMilliseconds(ms)
    return out


def ms_duration(ms: int) -> duration_pb2.Duration:
    """A ``Duration`` of milliseconds."""
    out = duration_pb2.Duration()
    out.FromMilliseconds(ms)
    return out
