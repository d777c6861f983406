"""THB domain events ↔ table casino events (each carrying its canonical `DomainRecord`).

The round's deck seed is withheld from the published `RoundStarted` record (``redacted``) and
kept in ``table_casino_rounds.seed_hex`` until `DeckRevealed`; replay restores it.
Bets get stable ids ``<round_id>:<spot>`` — the wallet transfer id of their reservation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import electric_domain.casino.common.money as money
import electric_domain.casino.thb.events as thb
import electric_domain.casino.uth.events as uth
from electric.table.v1 import casino_events_pb2 as cev
from electric.table.v1 import events_pb2 as tev
from electric_eventlog.dataclass_codec import CodecError, DataclassCodec
from google.protobuf.message import Message

ENCODING_VERSION = 1
CODEC = DataclassCodec({"thb": thb, "uth": uth, "casino_money": money})

__all__ = ["CODEC", "CodecError", "RoundKey", "bet_id", "decode", "to_protos"]


@dataclass(frozen=True)
class RoundKey:
    """Who and where a round is."""

    round_id: str
    table_id: str
    game: str
    player_id: str


def bet_id(round_id: str, spot: str) -> str:
    """The bet's id: also the wallet transfer id of its reservation."""
    return f"{round_id}:{spot}"


def record(e: Any, *, redacted: bool = False) -> tev.DomainRecord:
    tag, text = CODEC.encode(e)
    return tev.DomainRecord(
        type=tag, canonical_json=text, encoding_version=ENCODING_VERSION, redacted=redacted
    )


def bet_results(key: RoundKey, results: Iterable[money.BetResult]) -> list[cev.CasinoBetResult]:
    return [
        cev.CasinoBetResult(
            bet_id=bet_id(key.round_id, r.spot),
            spot=r.spot,
            stake_cents=r.stake_cents,
            outcome=r.outcome.value,
            win_cents=r.win_cents,
            returned_cents=r.returned_cents,
        )
        for r in results
        if r.stake_cents > 0
    ]


def to_protos(
    key: RoundKey, events: Sequence[Any], *, voided_by: str = "", street: str = "flop"
) -> list[Message]:
    """The table events of THB domain ``events`` (in order). ``street``: the street a
    decision in ``events`` was made before (flop, turn or river)."""
    out: list[Message] = []
    rid, pid = key.round_id, key.player_id
    for e in events:
        if isinstance(e, thb.RoundStarted):
            hidden = dataclasses.replace(e, deck_seed_hex="")
            out.append(
                cev.CasinoRoundStarted(
                    round_id=rid,
                    table_id=key.table_id,
                    game=key.game,
                    player_id=pid,
                    game_number=e.game_number,
                    deck_commitment=e.deck_commitment,
                    config_version=e.config_version,
                    domain=record(hidden, redacted=True),
                )
            )
            out.append(_bet(key, "ante", e.ante_cents))
        elif isinstance(e, thb.HoleCardsDealt):
            out.append(
                cev.CasinoHoleCardsDealt(
                    round_id=rid,
                    player_id=pid,
                    cards=list(e.player_cards),
                    nickname=e.nickname or "",
                    domain=record(e),
                )
            )
        elif isinstance(e, thb.Folded):
            out.append(_decision(key, "fold", "flop", 0, e))
        elif isinstance(e, thb.FlopCalled):
            out.append(_decision(key, "call_flop", "flop", e.amount_cents, e))
            out.append(_bet(key, "flop", e.amount_cents))
        elif isinstance(e, thb.StreetBet):
            out.append(_decision(key, "bet", e.street, e.amount_cents, e))
            out.append(_bet(key, e.street, e.amount_cents))
        elif isinstance(e, thb.StreetChecked):
            out.append(_decision(key, "check", e.street, 0, e))
        elif isinstance(e, thb.BoardDealt):
            out.append(
                cev.CasinoBoardDealt(
                    round_id=rid,
                    street=e.street,
                    cards=list(e.cards),
                    hand_text=e.hand_text,
                    domain=record(e),
                )
            )
        elif isinstance(e, thb.Showdown):
            out.append(
                cev.CasinoShowdown(
                    round_id=rid,
                    dealer_cards=list(e.dealer_cards),
                    player_hand=e.player_hand,
                    dealer_hand=e.dealer_hand,
                    winner=e.winner,
                    domain=record(e),
                )
            )
        elif isinstance(e, thb.Settled):
            out.append(
                cev.CasinoRoundSettled(
                    round_id=rid,
                    table_id=key.table_id,
                    game=key.game,
                    players=[
                        cev.CasinoPlayerResult(player_id=pid, results=bet_results(key, e.results))
                    ],
                    staked_cents=e.staked_cents,
                    returned_cents=e.returned_cents,
                    house_net_cents=e.house_net_cents,
                    domain=record(e),
                )
            )
        elif isinstance(e, thb.RoundVoided):
            out.append(
                cev.CasinoRoundVoided(
                    round_id=rid,
                    table_id=key.table_id,
                    game=key.game,
                    reason=e.reason,
                    players=[
                        cev.CasinoPlayerResult(player_id=pid, results=bet_results(key, e.results))
                    ],
                    voided_by=voided_by,
                    domain=record(e),
                )
            )
        elif isinstance(e, thb.DeckRevealed):
            out.append(
                cev.CasinoDeckRevealed(
                    round_id=rid,
                    deck_seed_hex=e.deck_seed_hex,
                    deck_commitment=e.deck_commitment,
                    domain=record(e),
                )
            )
        else:  # pragma: no cover - every THB event is mapped above
            raise CodecError(f"unmapped THB event {type(e).__name__}")
    return out


def _bet(key: RoundKey, spot: str, amount: int) -> cev.CasinoBetPlaced:
    return cev.CasinoBetPlaced(
        round_id=key.round_id,
        table_id=key.table_id,
        player_id=key.player_id,
        bet_id=bet_id(key.round_id, spot),
        spot=spot,
        amount_cents=amount,
    )


def _decision(key: RoundKey, decision: str, street: str, amount: int, e: Any) -> Message:
    return cev.CasinoDecisionMade(
        round_id=key.round_id,
        player_id=key.player_id,
        decision=decision,
        street=street,
        amount_cents=amount,
        domain=record(e),
    )


def decode(message: Message, seed_hex: str) -> Any | None:
    """The THB domain event a stored message carries (None if it carries none); a redacted
    RoundStarted gets its deck seed back from ``seed_hex``."""
    if "domain" not in message.DESCRIPTOR.fields_by_name or not message.HasField("domain"):
        return None
    rec: tev.DomainRecord = message.domain  # type: ignore[attr-defined]
    e = CODEC.decode(rec.canonical_json)
    if rec.redacted and isinstance(e, thb.RoundStarted):
        if not seed_hex:
            raise CodecError(f"deck seed of round {e.round_id} is missing")
        e = dataclasses.replace(e, deck_seed_hex=seed_hex)
    return e
