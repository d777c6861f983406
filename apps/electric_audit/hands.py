"""Hands rebuilt from the table streams, and replayed through our engine.

Every table event carries the domain event it was derived from (``DomainRecord``, docs/
table-service.md). Per hand this module collects, from a table stream:

* the table's ``HandStarted`` (time, level, seats' stacks, deck commitment) and ``HandEnded``
  (the revealed seed and final stacks by seat);
* the engine's own events (``holdem.*`` inside ``tournament.HandEvent`` records) in stream
  order, and the adapter's ``DeckEscrowed`` (engine player ``i`` is table seat
  ``seats[i]``);
* the players' ids and display names from the stream's ``TableStarted``.

:func:`replay_hand` then exports the hand to PHH and replays that text through our engine
(:func:`electric_domain.phh.replay_text`, the same code as ``electric-audit replay-phh``):
the replayed finishing stacks and pots must equal the recorded ones, and the recorded
``HandEnded`` stacks by seat must equal the engine's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

from electric.table.v1 import events_pb2 as tev
from electric_domain.holdem import events as holdem_events
from electric_domain.holdem import moves as holdem_moves
from electric_domain.holdem import state as holdem_state
from electric_domain.phh import replay_text, to_phh
from electric_domain.tournament import engine_adapter, preaction
from electric_domain.tournament import events as tournament_events
from electric_eventlog.dataclass_codec import CodecError, DataclassCodec
from electric_eventlog.hashing import occurred_at_micros
from google.protobuf.message import Message

from electric_audit.sources import Located, Source

#: The modules of the table service's record codec (``electric_table.tournament.codec``; a
#: test checks both agree). The auditor decodes records without importing the service.
_MODULES: dict[str, ModuleType] = {
    "tournament": tournament_events,
    "holdem": holdem_events,
    "holdem_state": holdem_state,
    "holdem_moves": holdem_moves,
    "adapter": engine_adapter,
    "preaction": preaction,
}
CODEC = DataclassCodec(_MODULES)

_TABLE_TYPES: dict[str, type[Message]] = {
    cls.DESCRIPTOR.full_name: cls
    for cls in (
        tev.TableStarted,
        tev.HandStarted,
        tev.HandEnded,
        tev.HandEngineEvent,
        tev.BlindPosted,
        tev.CardsDealt,
        tev.ActionTaken,
        tev.StreetDealt,
        tev.CardsShown,
        tev.PotAwarded,
        tev.LevelAdvanced,
        tev.PlayerEliminated,
        tev.TournamentFinished,
    )
}


@dataclass
class Hand:
    """One hand of a table, as recorded."""

    table_id: str
    table_name: str
    number: int
    started: tev.HandStarted
    started_at: datetime
    location: str
    #: Table seat (1-based) → (player id, display name), from TableStarted.
    roster: dict[int, tuple[str, str]]
    buy_in_cents: int = 0
    currency: str = "USD"
    ended: tev.HandEnded | None = None
    ended_location: str = ""
    #: Engine events (holdem.*) in order, the first a holdem.HandStarted.
    events: list[Any] = field(default_factory=list)
    #: Table seat (1-based) of each engine player.
    seats: tuple[int, ...] = ()
    #: Decode problems met while collecting the hand.
    problems: list[str] = field(default_factory=list)

    @property
    def hand_id(self) -> str:
        """``<table id>-<hand number>``: unique across the platform."""
        return f"{self.table_id}-{self.number}"

    @property
    def complete(self) -> bool:
        return self.ended is not None and bool(self.events) and bool(self.seats)

    def player_ids(self) -> list[str]:
        return [self.roster.get(seat, (f"seat{seat}", ""))[0] for seat in self.seats]

    def names(self) -> list[str]:
        """Display names of the engine players (the player id when there is none)."""
        return [
            (self.roster.get(seat, ("", ""))[1] or self.roster.get(seat, (f"seat{seat}", ""))[0])
            for seat in self.seats
        ]


def _parse(located: Located) -> Message | None:
    cls = _TABLE_TYPES.get(located.envelope.event_type)
    if cls is None:
        return None
    message = cls()
    message.ParseFromString(located.envelope.payload.value)
    return message


def table_streams(sources: Sequence[Source]) -> dict[str, list[Located]]:
    """Every ``table-*`` stream, each event once (first source wins), in version order."""
    seen: set[str] = set()
    streams: dict[str, list[Located]] = defaultdict(list)
    for source in sources:
        for located in source.events:
            e = located.envelope
            if not e.stream_id.startswith("table-") or e.event_id in seen:
                continue
            seen.add(e.event_id)
            streams[e.stream_id].append(located)
    for events in streams.values():
        events.sort(key=lambda x: x.envelope.stream_version)
    return streams


def _moment(located: Located) -> datetime:
    return datetime.fromtimestamp(occurred_at_micros(located.envelope) / 1_000_000, tz=UTC)


def hands_of_stream(events: Iterable[Located]) -> Iterator[Hand]:
    """The hands of one table stream, in order (a hand still in play has ``ended`` None)."""
    roster: dict[int, tuple[str, str]] = {}
    table_name, buy_in, currency = "", 0, "USD"
    hand: Hand | None = None
    for located in events:
        message = _parse(located)
        if isinstance(message, tev.TableStarted):
            table_name = message.table_name
            buy_in, currency = message.buy_in.cents, message.buy_in.currency or "USD"
            roster = {s.seat: (s.player_id, s.display_name) for s in message.seats}
            continue
        if isinstance(message, tev.HandStarted):
            if hand is not None:
                yield hand
            hand = Hand(
                table_id=message.table_id,
                table_name=table_name or message.table_id,
                number=message.hand_number,
                started=message,
                started_at=_moment(located),
                location=located.location(),
                roster=dict(roster),
                buy_in_cents=buy_in,
                currency=currency,
            )
            continue
        if hand is None or message is None:
            continue
        if isinstance(message, tev.HandEnded) and message.hand_number == hand.number:
            hand.ended, hand.ended_location = message, located.location()
            continue
        number = getattr(message, "hand_number", None)
        if number != hand.number or not message.HasField("domain"):
            continue
        _collect(hand, message, located)
    if hand is not None:
        yield hand


def _collect(hand: Hand, message: Message, located: Located) -> None:
    record = message.domain  # type: ignore[attr-defined]
    try:
        decoded = CODEC.decode(record.canonical_json)
    except CodecError as exc:
        hand.problems.append(f"{located.location()}: record does not decode: {exc}")
        return
    if not isinstance(decoded, tournament_events.HandEvent):
        return
    inner = decoded.event
    if isinstance(inner, engine_adapter.DeckEscrowed):
        hand.seats = tuple(seat + 1 for seat in inner.seats)
    elif type(inner).__module__ == holdem_events.__name__:
        hand.events.append(inner)


def all_hands(sources: Sequence[Source]) -> list[Hand]:
    """Every hand of every table stream of ``sources``, by table then hand number."""
    hands: list[Hand] = []
    for _, events in sorted(table_streams(sources).items()):
        hands.extend(hands_of_stream(events))
    return hands


def hand_phh_core(hand: Hand) -> str:
    """The hand's PHH core (variant, stakes, stacks, actions, players, finishing stacks)."""
    return to_phh(hand.events, players=hand.names())


@dataclass(frozen=True)
class ReplayVerdict:
    ok: bool
    reason: str = ""


def replay_hand(hand: Hand) -> ReplayVerdict:
    """Replay the hand through our engine from its PHH and compare with the record."""
    if not hand.complete:
        return ReplayVerdict(False, "hand is not complete (no HandEnded or engine events)")
    if hand.problems:
        return ReplayVerdict(False, hand.problems[0])
    first = hand.events[0]
    if not isinstance(first, holdem_events.HandStarted):
        return ReplayVerdict(False, "engine events do not start with HandStarted")
    config = first.config
    n = config.players
    if n != len(hand.seats):
        return ReplayVerdict(False, f"{n} engine players but {len(hand.seats)} seats escrowed")
    try:
        (result,) = replay_text(hand_phh_core(hand), multi=False, keep_events=True)
    except ValueError as exc:
        return ReplayVerdict(False, f"cannot export the hand to PHH: {exc}")
    if result.error is not None:
        return ReplayVerdict(False, f"our engine rejects the hand: {result.error}")
    order = [(config.button + 1 + k) % n for k in range(n)]
    ended = [e for e in hand.events if isinstance(e, holdem_events.HandEnded)]
    if not ended:
        return ReplayVerdict(False, "the engine's HandEnded is missing")
    recorded = [ended[-1].stacks[i] for i in order]
    if list(result.minor_stacks or ()) != recorded:
        return ReplayVerdict(
            False, f"replayed stacks {list(result.minor_stacks or ())} != recorded {recorded}"
        )
    verdict = _pots_match(hand, result.events, order)
    if not verdict.ok:
        return verdict
    return _table_stacks_match(hand, ended[-1].stacks)


def _pots(events: Iterable[Any], remap: Sequence[int] | None) -> list[tuple[int, list[int]]]:
    pots = []
    for e in events:
        if isinstance(e, holdem_events.PotAwarded):
            winners = [remap[w] if remap else w for w in e.winners]
            pots.append((e.amount, sorted(zip(winners, e.shares, strict=True))))
    return [(amount, [w for pair in shares for w in pair]) for amount, shares in pots]


def _pots_match(hand: Hand, replayed: Sequence[Any], order: Sequence[int]) -> ReplayVerdict:
    # Replayed player k (PHH p(k+1)) is our engine player order[k].
    mine = _pots(replayed, order)
    recorded = _pots(hand.events, None)
    if mine != recorded:
        return ReplayVerdict(False, f"replayed pots {mine} != recorded pots {recorded}")
    return ReplayVerdict(True)


def _table_stacks_match(hand: Hand, engine_stacks: Sequence[int]) -> ReplayVerdict:
    assert hand.ended is not None
    by_seat = {s.seat: s.stack for s in hand.ended.stacks}
    for seat, stack in zip(hand.seats, engine_stacks, strict=True):
        if by_seat.get(seat) != stack:
            return ReplayVerdict(
                False, f"HandEnded gives seat {seat} {by_seat.get(seat)}, the engine {stack}"
            )
    return ReplayVerdict(True)
