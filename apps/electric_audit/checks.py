"""``electric-audit verify``: the checks, each with a count and its first failure's location.

Done (see docs/audit.md, "Status / next steps" for the rest):

* ``chains`` — every stream's SHA-256 chain in every store and topic
  (:class:`electric_eventlog.verify.ChainVerifier`: version gaps/reorders, ``prev_hash``
  links, recomputed hashes). Topic re-deliveries (same event id) are skipped.
* ``positions`` — a store's global positions are 1..N without a gap (catches a deleted
  last event of a stream, which the chain alone cannot see).
* ``store-topic`` — an event in both a store and a topic is byte-identical (same hash and
  payload); an event of a store is on its producer's topic (when that topic is read) and
  vice versa.
* ``decks`` — each hand's revealed seed hashes to the commitment published at HandStarted,
  and the cards dealt (hole cards, flop, turn, river) are the deck derived from it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from electric.table.v1 import events_pb2 as tev
from electric_domain.cards import card_str
from electric_domain.deck import derive_deck, verify_deck
from electric_eventlog.verify import ChainVerifier

from electric_audit.sources import Located, Source


@dataclass
class CheckResult:
    """One check over all sources: how many items were checked, failed, and the first."""

    name: str
    checked: int = 0
    failed: int = 0
    first_failure: str | None = None

    def fail(self, location: str, reason: str) -> None:
        self.failed += 1
        if self.first_failure is None:
            self.first_failure = f"{location}: {reason}"

    @property
    def ok(self) -> bool:
        return self.failed == 0


def check_chains(sources: Sequence[Source]) -> CheckResult:
    result = CheckResult("chains")
    for source in sources:
        verifier = ChainVerifier()
        seen: set[str] = set()
        events = source.events
        if source.kind == "store":
            events = sorted(events, key=lambda x: (x.envelope.stream_id, x.envelope.stream_version))
        for located in events:
            if located.envelope.event_id in seen:
                continue
            seen.add(located.envelope.event_id)
            result.checked += 1
            broken = verifier.check(located.envelope)
            if broken is not None:
                result.fail(located.location(), broken.reason)
    return result


def check_positions(sources: Sequence[Source]) -> CheckResult:
    result = CheckResult("positions")
    for source in sources:
        if source.kind != "store":
            continue
        expected = 1
        for located in source.events:
            result.checked += 1
            position = located.envelope.global_position
            if position != expected:
                result.fail(
                    located.location(),
                    f"global position {position} follows {expected - 1} "
                    f"(positions {expected}..{position - 1} are missing)",
                )
            expected = position + 1
    return result


def _service_topic(producer: str) -> str:
    return f"electric.{producer}.events"


def check_store_topic(sources: Sequence[Source]) -> CheckResult:
    result = CheckResult("store-topic")
    stores = [s for s in sources if s.kind == "store"]
    topics = {s.name: s for s in sources if s.kind == "topic"}
    if not stores or not topics:
        return result
    on_topics: dict[str, Located] = {}
    for topic in topics.values():
        for located in topic.events:
            on_topics.setdefault(located.envelope.event_id, located)
    in_stores: set[str] = set()
    for store in stores:
        for located in store.events:
            e = located.envelope
            in_stores.add(e.event_id)
            other = on_topics.get(e.event_id)
            if other is None:
                if _service_topic(e.producer) in topics:
                    result.checked += 1
                    result.fail(located.location(), f"not on topic {_service_topic(e.producer)}")
                continue
            result.checked += 1
            if other.envelope.SerializeToString(deterministic=True) != e.SerializeToString(
                deterministic=True
            ):
                result.fail(
                    located.location(), f"differs from the same event on {other.location()}"
                )
    stored_producers = {loc.envelope.producer for s in stores for loc in s.events}
    for event_id, located in on_topics.items():
        if event_id not in in_stores and located.envelope.producer in stored_producers:
            result.checked += 1
            result.fail(located.location(), "on the topic but in no store given")
    return result


def _texts(cards: Sequence[object]) -> list[str]:
    return [str(getattr(card, "text", "")) for card in cards]


@dataclass
class _Hand:
    started: Located | None = None
    commitment: str = ""
    holes: list[tuple[Located, list[str]]] | None = None
    streets: list[tuple[Located, list[str]]] | None = None
    ended: Located | None = None
    seed: str = ""


def _hands(sources: Sequence[Source]) -> dict[tuple[str, str, int], _Hand]:
    """Hands of the table streams, keyed by (source, table, hand number)."""
    hands: dict[tuple[str, str, int], _Hand] = defaultdict(_Hand)
    for source in sources:
        seen: set[str] = set()
        for located in source.events:
            name = located.envelope.event_type
            if name not in _DECK_TYPES:
                continue
            # A topic is at least once: a copy of an event is its redelivery, not one more
            # seat dealt (counted twice, it shifts every hole-card pair; issue 18).
            if located.envelope.event_id in seen:
                continue
            seen.add(located.envelope.event_id)
            message = _DECK_TYPES[name]()
            message.ParseFromString(located.envelope.payload.value)
            hand = hands[(source.label, message.table_id, message.hand_number)]
            if isinstance(message, tev.HandStarted):
                hand.started, hand.commitment = located, message.deck_commitment
            elif isinstance(message, tev.CardsDealt):
                hand.holes = [*(hand.holes or []), (located, _texts(message.cards))]
            elif isinstance(message, tev.StreetDealt):
                hand.streets = [*(hand.streets or []), (located, _texts(message.cards))]
            elif isinstance(message, tev.HandEnded):
                hand.ended, hand.seed = located, message.deck_seed
    return hands


_DECK_TYPES: dict[str, type[tev.HandStarted | tev.CardsDealt | tev.StreetDealt | tev.HandEnded]]
_DECK_TYPES = {
    cls.DESCRIPTOR.full_name: cls
    for cls in (tev.HandStarted, tev.CardsDealt, tev.StreetDealt, tev.HandEnded)
}


def _check_hand(hand: _Hand, result: CheckResult) -> None:
    if hand.ended is None or hand.started is None:
        return  # a hand still in play (or a partial read): nothing revealed to check yet
    result.checked += 1
    try:
        seed = bytes.fromhex(hand.seed)
    except ValueError:
        result.fail(hand.ended.location(), "revealed seed is not hex")
        return
    verdict = verify_deck(seed, hand.commitment)
    if not verdict.ok:
        result.fail(hand.ended.location(), verdict.reason)
        return
    deck = [card_str(c) for c in derive_deck(seed)]
    holes = hand.holes or []
    n = len(holes)
    # Dealt one card at a time from the button's left, two rounds: seat k holds deck[k]
    # and deck[n + k] (k in dealing order). Then burn, flop (3), burn, turn, burn, river.
    pairs = {frozenset((deck[k], deck[n + k])) for k in range(n)}
    for located, cards in holes:
        if frozenset(cards) not in pairs:
            result.fail(located.location(), f"hole cards {cards} are not dealt from the deck")
            return
    expected = [
        deck[2 * n + 1 : 2 * n + 4],
        deck[2 * n + 5 : 2 * n + 6],
        deck[2 * n + 7 : 2 * n + 8],
    ]
    for index, (located, cards) in enumerate(hand.streets or []):
        if index >= 3 or cards != expected[index]:
            result.fail(located.location(), f"board cards {cards} are not dealt from the deck")
            return


def check_decks(sources: Sequence[Source]) -> CheckResult:
    result = CheckResult("decks")
    for hand in _hands(sources).values():
        _check_hand(hand, result)
    return result


def run_checks(sources: Sequence[Source]) -> list[CheckResult]:
    """Every implemented check, in a fixed order."""
    return [
        check_chains(sources),
        check_positions(sources),
        check_store_topic(sources),
        check_decks(sources),
    ]
