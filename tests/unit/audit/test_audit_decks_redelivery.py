"""``electric-audit verify`` decks check over a topic that redelivered an event (issue 18,
found by the chaos run: after a kill -9 of the table service its relay re-sent a batch).

Topics are at least once: a copy of an event (same event id, same bytes) is a redelivery,
not a second deal. The check counted every CardsDealt copy as one more seat, derived the
hole-card pairs for a table one seat larger, and reported "hole cards … are not dealt from
the deck" for a correct hand.
"""

from __future__ import annotations

from electric.common.v1.cards_pb2 import Card
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import events_pb2 as tev
from electric_audit.checks import check_decks
from electric_audit.sources import Source, located_from_messages
from electric_domain.cards import card_str
from electric_domain.deck import commitment, derive_deck
from electric_eventlog import envelope_message, pack
from electric_eventlog.bus import ReceivedMessage
from google.protobuf.message import Message

SEED = bytes(range(32))
TOPIC = "electric.table.events"


def envelope(version: int, payload: Message) -> Envelope:
    e = Envelope(
        event_id=f"table-t-{version}",
        stream_id="table-t",
        stream_version=version,
        global_position=version,
        event_type=payload.DESCRIPTOR.full_name,
        producer="table",
    )
    e.payload.CopyFrom(pack(payload))
    return e


def topic(envelopes: list[Envelope]) -> Source:
    messages = []
    for offset, e in enumerate(envelopes):
        out = envelope_message(TOPIC, e)
        messages.append(ReceivedMessage(TOPIC, 0, offset, out.key, out.value, out.headers))
    return located_from_messages(TOPIC, messages)


def hand(hole: dict[int, list[str]]) -> list[Envelope]:
    """One hand of two seats: started, each seat's cards, ended (seed revealed)."""
    events = [
        envelope(1, tev.HandStarted(table_id="t", hand_number=1, deck_commitment=commitment(SEED)))
    ]
    for seat, cards in hole.items():
        dealt = tev.CardsDealt(
            table_id="t", hand_number=1, seat=seat, cards=[Card(text=c) for c in cards]
        )
        events.append(envelope(1 + seat, dealt))
    ended = tev.HandEnded(table_id="t", hand_number=1, deck_seed=SEED.hex())
    events.append(envelope(len(events) + 1, ended))
    return events


def test_a_redelivered_deal_is_the_same_deal() -> None:
    deck = [card_str(c) for c in derive_deck(SEED)]
    events = hand({1: [deck[0], deck[2]], 2: [deck[1], deck[3]]})
    assert check_decks([topic(events)]).ok
    redelivered = [*events[:3], events[1], events[2], *events[3:]]
    result = check_decks([topic(redelivered)])
    assert result.ok, result.first_failure


def test_cards_not_from_the_deck_still_fail() -> None:
    deck = [card_str(c) for c in derive_deck(SEED)]
    events = hand({1: [deck[0], deck[2]], 2: [deck[1], deck[9]]})
    result = check_decks([topic(events)])
    assert not result.ok and "not dealt from the deck" in result.first_failure
