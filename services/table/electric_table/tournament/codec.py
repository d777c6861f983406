"""Canonical JSON encoding of the tournament aggregate's events (replay source).

Every domain event of `electric_domain.tournament` (and the hold'em engine events it carries
inside `HandEvent`) is a frozen dataclass of ints, strings, bools, tuples, string enums and
nested dataclasses, encoded by the platform's one dataclass codec
(`electric_eventlog.dataclass_codec.DataclassCodec`) over the modules below:

* dataclass → ``{"$t": "<module key>.<ClassName>", "<field>": <value>, ...}``
* string enum → ``{"$e": "<module key>.<EnumName>", "v": "<value>"}``
* tuple → JSON array (decoded back to a tuple); ``bytes`` → ``{"$b": "<hex>"}``
* int / str / bool / None as themselves.

Serialised with sorted keys and no whitespace, so equal events have equal bytes; decoding
gives objects equal (``==``) to the originals, which the tests check for whole tournaments.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from electric_domain.holdem import events as holdem_events
from electric_domain.holdem import moves as holdem_moves
from electric_domain.holdem import state as holdem_state
from electric_domain.tournament import engine_adapter, preaction
from electric_domain.tournament import events as tournament_events
from electric_eventlog.dataclass_codec import CodecError, DataclassCodec

#: 2: moves and reasons are enums (version-1 records hold them as strings; see `records`).
ENCODING_VERSION = 2

__all__ = ["CODEC", "ENCODING_VERSION", "CodecError", "decode", "encode", "type_tag"]

_MODULES: dict[str, ModuleType] = {
    "tournament": tournament_events,
    "holdem": holdem_events,
    "holdem_state": holdem_state,
    "holdem_moves": holdem_moves,
    "adapter": engine_adapter,
    "preaction": preaction,
}


#: The tournament's events, encoded by the shared codec (electric_eventlog.dataclass_codec).
CODEC = DataclassCodec(_MODULES)


def type_tag(obj: Any) -> str:
    """The registry tag of a dataclass instance (``tournament.ActionTaken`` …)."""
    return CODEC.type_tag(obj)


def encode(event: Any) -> tuple[str, str]:
    """``(type tag, canonical JSON)`` of a domain event."""
    return CODEC.encode(event)


def decode(canonical_json: str) -> Any:
    """The domain event encoded by `encode`."""
    return CODEC.decode(canonical_json)
