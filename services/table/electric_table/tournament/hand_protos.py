"""The hand engine's events (inside `HandEvent`) → ``electric.table.v1`` event protos.

The domain states each engine event in table terms (`HandFact`: seats, cards, the board so
far, all-in flags); this module only picks the proto and converts values.
"""

from __future__ import annotations

from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2
from electric_clients.convert import card
from electric_domain.holdem.state import Street
from electric_domain.tournament import events as dev
from electric_domain.tournament.engine_adapter import DeckEscrowed
from electric_domain.tournament.hand_port import HandFact, Post
from google.protobuf.message import Message

from electric_table.tournament.records import record, redacted_escrow
from electric_table.tournament.tableinfo import TableInfo

STREET_TO_PROTO = {
    Street.PREFLOP: table_pb2.STREET_PREFLOP,
    Street.FLOP: table_pb2.STREET_FLOP,
    Street.TURN: table_pb2.STREET_TURN,
    Street.RIVER: table_pb2.STREET_RIVER,
}
_POST = {
    Post.ANTE: tev.BLIND_TYPE_ANTE,
    Post.SMALL_BLIND: tev.BLIND_TYPE_SMALL_BLIND,
    Post.BIG_BLIND: tev.BLIND_TYPE_BIG_BLIND,
}


def hand_proto(
    e: dev.HandEvent, fact: HandFact | None, info: TableInfo
) -> tuple[Message, tuple[int, str] | None]:
    """The table event of one engine event (and the withheld deck seed, if any)."""
    tid = info.table_id
    hand = e.hand_no
    if isinstance(e.event, DeckEscrowed):
        rec, secret = redacted_escrow(e)
        msg = tev.HandEngineEvent(table_id=tid, hand_number=hand, kind="DeckEscrowed", domain=rec)
        return msg, secret
    rec = record(e)
    if fact is None or fact.kind not in _BUILDERS:
        kind = type(e.event).__name__
        msg = tev.HandEngineEvent(table_id=tid, hand_number=hand, kind=kind, domain=rec)
        if fact is not None and fact.seat >= 0:
            msg.seat = info.no(fact.seat)
            msg.amount = fact.amount
        return msg, None
    return _BUILDERS[fact.kind](fact, info, hand, rec), None


def _post(f: HandFact, info: TableInfo, hand: int, rec: tev.DomainRecord) -> Message:
    return tev.BlindPosted(
        table_id=info.table_id,
        hand_number=hand,
        seat=info.no(f.seat),
        blind_type=_POST[f.post],
        amount=f.amount,
        all_in=f.all_in,
        domain=rec,
    )


def _dealt(f: HandFact, info: TableInfo, hand: int, rec: tev.DomainRecord) -> Message:
    return tev.CardsDealt(
        table_id=info.table_id,
        hand_number=hand,
        seat=info.no(f.seat),
        player_id=info.player(f.seat),
        cards=[card(c) for c in f.cards],
        domain=rec,
    )


def _street(f: HandFact, info: TableInfo, hand: int, rec: tev.DomainRecord) -> Message:
    return tev.StreetDealt(
        table_id=info.table_id,
        hand_number=hand,
        street=STREET_TO_PROTO[f.street],
        cards=[card(c) for c in f.cards],
        board=[card(c) for c in f.board],
        domain=rec,
    )


def _shown(f: HandFact, info: TableInfo, hand: int, rec: tev.DomainRecord) -> Message:
    return tev.CardsShown(
        table_id=info.table_id,
        hand_number=hand,
        seat=info.no(f.seat),
        player_id=info.player(f.seat),
        cards=[card(c) for c in f.cards],
        reason=(
            tev.SHOW_REASON_PLAYER_SETTING
            if f.kind == "WinnerShown"
            else (tev.SHOW_REASON_ALL_IN if f.all_in else tev.SHOW_REASON_SHOWDOWN)
        ),
        hand_description=f.hands[0][2] if f.hands else "",
        domain=rec,
    )


def _pot(f: HandFact, info: TableInfo, hand: int, rec: tev.DomainRecord) -> Message:
    return tev.PotAwarded(
        table_id=info.table_id,
        hand_number=hand,
        pot_index=f.index,
        amount=f.amount,
        winners=[
            tev.PotWinner(
                seat=info.no(seat),
                player_id=info.player(seat),
                amount=share,
                hand_description=best[2],
                best_five=[card(c) for c in best[0]],
                category=category_proto(best[1]),
            )
            for (seat, share), best in zip(
                f.winners, f.hands or [((), -1, "")] * len(f.winners), strict=True
            )
        ],
        domain=rec,
    )


def category_proto(category: int) -> table_pb2.HandCategory.ValueType:
    """The proto hand category of an evaluator category value (-1: not shown)."""
    if category < 0:
        return table_pb2.HAND_CATEGORY_UNSPECIFIED
    return table_pb2.HandCategory.ValueType(category + 1)


_BUILDERS = {
    "AntePosted": _post,
    "BlindPosted": _post,
    "HoleCardsDealt": _dealt,
    "BoardDealt": _street,
    "HandShown": _shown,
    "WinnerShown": _shown,
    "PotAwarded": _pot,
}
