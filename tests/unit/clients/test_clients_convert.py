"""electric_clients.convert: the one proto conversion (money, cards, timestamps) agrees with
the domain's card numbering and round-trips every value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from electric.common.v1 import cards_pb2, money_pb2
from electric_clients import accounts, convert
from electric_domain.cards import FULL_DECK, card_str, parse_card


def test_money_is_integer_cents_in_usd() -> None:
    assert convert.usd(1234) == money_pb2.Money(cents=1234, currency="USD")
    assert convert.cents(convert.usd(-5)) == -5
    assert convert.cents(money_pb2.Money(cents=7)) == 7  # "" is the platform currency
    with pytest.raises(ValueError, match="USD"):
        convert.cents(money_pb2.Money(cents=7, currency="EUR"))


def test_every_card_round_trips_and_matches_the_domain() -> None:
    for number in FULL_DECK:
        proto = convert.card(number)
        assert proto.text == card_str(number)
        assert proto.rank == number // 4 + 2 and proto.suit == number % 4 + 1
        assert convert.card_number(proto) == number
        assert convert.card_number(cards_pb2.Card(text=proto.text)) == number
        assert convert.card_of_text(proto.text) == proto
    assert convert.card_of_text("aS") == convert.card(parse_card("As"))
    assert (
        convert.card(0).rank == cards_pb2.RANK_TWO and convert.card(0).suit == cards_pb2.SUIT_CLUBS
    )
    assert (
        convert.card(51).rank == cards_pb2.RANK_ACE
        and convert.card(51).suit == cards_pb2.SUIT_SPADES
    )


@pytest.mark.parametrize("bad", [-1, 52])
def test_out_of_range_card_numbers_are_rejected(bad: int) -> None:
    with pytest.raises(ValueError):
        convert.card(bad)


def test_malformed_proto_cards_are_rejected() -> None:
    for bad in (cards_pb2.Card(), cards_pb2.Card(text="1x"), cards_pb2.Card(text="??")):
        with pytest.raises(ValueError):
            convert.card_number(bad)
    with pytest.raises(ValueError):
        convert.card_number(cards_pb2.Card(rank=15, suit=1))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        convert.card_of_text("Zz")


def test_timestamps_are_utc() -> None:
    at = datetime(2026, 3, 4, 5, 6, 7, 890_000, tzinfo=UTC)
    assert convert.utc_datetime(convert.timestamp(at)) == at
    plus2 = at.astimezone(timezone(timedelta(hours=2)))
    assert convert.timestamp(plus2) == convert.timestamp(at)
    assert convert.timestamp(at.replace(tzinfo=None)) == convert.timestamp(at)  # naive = UTC
    assert convert.timestamp_or_none(None) is None
    assert convert.ms_timestamp(1_500).ToMilliseconds() == 1_500
    assert convert.ms_duration(2_250).ToMilliseconds() == 2_250


def test_account_ids() -> None:
    assert accounts.player_account("al") == "player:al:cash"
    assert accounts.player_account("al", "bonus") == "player:al:bonus"
    assert len(set(accounts.HOUSE_ACCOUNTS)) == 5
    assert all(a.startswith("house:") for a in accounts.HOUSE_ACCOUNTS)
