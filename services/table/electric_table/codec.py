"""Canonical JSON encoding of the tournament aggregate's events (replay source).

Every domain event of `electric_domain.tournament` (and the hold'em engine events it carries
inside `HandEvent`) is a frozen dataclass of ints, strings, bools, tuples, string enums and
nested dataclasses. The encoding is:

* dataclass → ``{"$t": "<module key>.<ClassName>", "<field>": <value>, ...}``
* string enum → ``{"$e": "<module key>.<EnumName>", "v": "<value>"}``
* tuple → JSON array (decoded back to a tuple); ``bytes`` → ``{"$b": "<hex>"}``
* int / str / bool / None as themselves.

Serialised with sorted keys and no whitespace, so equal events have equal bytes; decoding
gives objects equal (``==``) to the originals, which the tests check for whole tournaments.
"""

from __future__ import annotations

import dataclasses
import json
from enum import Enum
from types import ModuleType
from typing import Any

from electric_domain.holdem import events as holdem_events
from electric_domain.holdem import state as holdem_state
from electric_domain.tournament import engine_adapter, preaction
from electric_domain.tournament import events as tournament_events

ENCODING_VERSION = 1

_MODULES: dict[str, ModuleType] = {
    "tournament": tournament_events,
    "holdem": holdem_events,
    "holdem_state": holdem_state,
    "adapter": engine_adapter,
    "preaction": preaction,
}


def _build_registry() -> tuple[dict[type, str], dict[str, type]]:
    by_type: dict[type, str] = {}
    by_name: dict[str, type] = {}
    for key, module in _MODULES.items():
        for name, obj in vars(module).items():
            if not isinstance(obj, type) or obj.__module__ != module.__name__:
                continue
            if dataclasses.is_dataclass(obj) or issubclass(obj, Enum):
                tag = f"{key}.{name}"
                by_type[obj] = tag
                by_name[tag] = obj
    return by_type, by_name


_BY_TYPE, _BY_NAME = _build_registry()


class CodecError(ValueError):
    """A record cannot be encoded or decoded."""


def type_tag(obj: Any) -> str:
    """The registry tag of a dataclass instance (``tournament.ActionTaken`` …)."""
    try:
        return _BY_TYPE[type(obj)]
    except KeyError as exc:
        raise CodecError(f"unregistered domain type {type(obj).__name__}") from exc


def _enc(value: Any) -> Any:
    if isinstance(value, Enum):
        return {"$e": type_tag(value), "v": value.value}
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, tuple | list):
        return [_enc(v) for v in value]
    if isinstance(value, bytes):
        return {"$b": value.hex()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {"$t": type_tag(value)}
        for f in dataclasses.fields(value):
            out[f.name] = _enc(getattr(value, f.name))
        return out
    raise CodecError(f"cannot encode {type(value).__name__}: {value!r}")


def _dec(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_dec(v) for v in value)
    if isinstance(value, dict):
        if "$b" in value:
            return bytes.fromhex(value["$b"])
        if "$e" in value:
            return _lookup(value["$e"])(value["v"])
        if "$t" in value:
            cls = _lookup(value["$t"])
            kwargs = {k: _dec(v) for k, v in value.items() if k != "$t"}
            return cls(**kwargs)
        raise CodecError(f"untagged object {value!r}")
    return value


def _lookup(tag: str) -> Any:
    try:
        return _BY_NAME[tag]
    except KeyError as exc:
        raise CodecError(f"unknown domain type tag {tag!r}") from exc


def encode(event: Any) -> tuple[str, str]:
    """``(type tag, canonical JSON)`` of a domain event."""
    return type_tag(event), json.dumps(_enc(event), sort_keys=True, separators=(",", ":"))


def decode(canonical_json: str) -> Any:
    """The domain event encoded by `encode`."""
    return _dec(json.loads(canonical_json))
