"""The canonical record each table event carries (`DomainRecord`): the replay source.

Each stored table event carries the domain event it was derived from, encoded by `codec`.
Replay decodes only these records. The single secret — a hand's deck seed inside the engine
adapter's `DeckEscrowed` — is withheld from the published record (``redacted``) and kept in
the service's own table ``table_deck_seeds`` until ``HandEnded`` reveals it.

Records of encoding version 1 (before the typed vocabulary) hold moves and reasons as plain
strings; `decode_record` upcasts them to the enums, so old streams replay unchanged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from electric.table.v1 import events_pb2 as tev
from electric_domain.holdem.moves import Move
from electric_domain.tournament import events as dev
from electric_domain.tournament.engine_adapter import DeckEscrowed
from google.protobuf.message import Message

from electric_table.tournament import codec


@dataclass(frozen=True)
class Mapped:
    """One table event to append; ``secret_seed`` is the withheld deck seed, if any."""

    message: Message
    domain_type: str
    secret_seed: tuple[int, str] | None = None


def record(e: Any, *, redacted: bool = False) -> tev.DomainRecord:
    """The `DomainRecord` of domain event ``e``."""
    tag, text = codec.encode(e)
    return tev.DomainRecord(
        type=tag, canonical_json=text, encoding_version=codec.ENCODING_VERSION, redacted=redacted
    )


def redacted_escrow(e: dev.HandEvent) -> tuple[tev.DomainRecord, tuple[int, str]]:
    """The published record of a hand's `DeckEscrowed` (seed blanked) and the secret."""
    escrow = e.event
    assert isinstance(escrow, DeckEscrowed)
    hidden = dev.HandEvent(e.hand_no, dataclasses.replace(escrow, seed_hex=""))
    return record(hidden, redacted=True), (e.hand_no, escrow.seed_hex)


def domain_of(message: Message) -> tev.DomainRecord | None:
    """The `DomainRecord` a table event carries (None for events without one)."""
    if "domain" not in message.DESCRIPTOR.fields_by_name:
        return None
    if not message.HasField("domain"):
        return None
    rec: tev.DomainRecord = message.domain  # type: ignore[attr-defined]
    return rec


def decode_record(rec: tev.DomainRecord, seeds: dict[int, str]) -> Any:
    """The domain event of ``rec``; a redacted deck seed is restored from ``seeds``."""
    e = codec.decode(rec.canonical_json)
    if rec.encoding_version < 2:
        e = _upcast_v1(e)
    if rec.redacted and isinstance(e, dev.HandEvent) and isinstance(e.event, DeckEscrowed):
        seed = seeds.get(e.hand_no)
        if not seed:
            raise codec.CodecError(f"deck seed of hand {e.hand_no} is missing")
        e = dev.HandEvent(e.hand_no, dataclasses.replace(e.event, seed_hex=seed))
    return e


def _upcast_v1(e: Any) -> Any:
    """Version-1 records: moves and reasons were strings (same values as the enums)."""
    if isinstance(e, dev.ActionTaken) and not isinstance(e.move, Move):
        return dataclasses.replace(e, move=Move(e.move))
    if isinstance(e, dev.PreActionUnselected) and not isinstance(e.reason, dev.UnselectReason):
        return dataclasses.replace(e, reason=dev.UnselectReason(e.reason))
    if isinstance(e, dev.SatOut) and not isinstance(e.reason, dev.SitOutReason):
        return dataclasses.replace(e, reason=dev.SitOutReason(e.reason))
    return e
