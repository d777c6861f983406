"""The one codec of domain dataclasses: canonical, tagged JSON.

Domain events and commands are frozen dataclasses of ints, strings, bools, tuples, bytes,
enums and nested dataclasses. A :class:`DataclassCodec` knows a set of modules, each under a
short key, and encodes:

* dataclass → ``{"$t": "<module key>.<ClassName>", "<field>": <value>, ...}``
* enum → ``{"$e": "<module key>.<EnumName>", "v": <value>}``
* tuple / list → JSON array (decoded back to a tuple); ``bytes`` → ``{"$b": "<hex>"}``
* int / str / bool / None as themselves.

Serialised with sorted keys and no whitespace, so equal values have equal bytes (stored
records, hashes and replays depend on that); decoding gives objects equal (``==``) to the
originals. Pure: no I/O, no knowledge of any particular domain.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from enum import Enum
from types import ModuleType
from typing import Any


class CodecError(ValueError):
    """A value cannot be encoded or decoded."""


class DataclassCodec:
    """Encodes the dataclasses and enums defined in ``modules`` (key → module)."""

    def __init__(self, modules: Mapping[str, ModuleType]) -> None:
        self._by_type: dict[type, str] = {}
        self._by_tag: dict[str, type] = {}
        for key, module in modules.items():
            for name, obj in vars(module).items():
                # Only types defined in the module itself: re-imported names keep the tag of
                # their home module, so a type has exactly one tag.
                if not isinstance(obj, type) or obj.__module__ != module.__name__:
                    continue
                if dataclasses.is_dataclass(obj) or issubclass(obj, Enum):
                    tag = f"{key}.{name}"
                    self._by_type[obj] = tag
                    self._by_tag[tag] = obj

    @property
    def tags(self) -> frozenset[str]:
        """Every tag this codec knows."""
        return frozenset(self._by_tag)

    def type_tag(self, obj: Any) -> str:
        """The tag of a registered dataclass or enum instance (``tournament.ActionTaken``)."""
        try:
            return self._by_type[type(obj)]
        except KeyError as exc:
            raise CodecError(f"unregistered domain type {type(obj).__name__}") from exc

    def to_plain(self, value: Any) -> Any:
        """``value`` as JSON-ready data (dicts, lists, scalars)."""
        if isinstance(value, Enum):
            return {"$e": self.type_tag(value), "v": value.value}
        if isinstance(value, bool | int | str) or value is None:
            return value
        if isinstance(value, tuple | list):
            return [self.to_plain(v) for v in value]
        if isinstance(value, bytes):
            return {"$b": value.hex()}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            out: dict[str, Any] = {"$t": self.type_tag(value)}
            for f in dataclasses.fields(value):
                out[f.name] = self.to_plain(getattr(value, f.name))
            return out
        raise CodecError(f"cannot encode {type(value).__name__}: {value!r}")

    def from_plain(self, value: Any) -> Any:
        """The value of :meth:`to_plain` output."""
        if isinstance(value, list):
            return tuple(self.from_plain(v) for v in value)
        if isinstance(value, dict):
            if "$b" in value:
                return bytes.fromhex(value["$b"])
            if "$e" in value:
                return self._lookup(value["$e"])(value["v"])
            if "$t" in value:
                cls = self._lookup(value["$t"])
                kwargs = {k: self.from_plain(v) for k, v in value.items() if k != "$t"}
                return cls(**kwargs)
            raise CodecError(f"untagged object {value!r}")
        return value

    def encode(self, value: Any) -> tuple[str, str]:
        """``(type tag, canonical JSON)`` of a registered dataclass instance."""
        text = json.dumps(self.to_plain(value), sort_keys=True, separators=(",", ":"))
        return self.type_tag(value), text

    def decode(self, canonical_json: str) -> Any:
        """The value encoded by :meth:`encode`."""
        return self.from_plain(json.loads(canonical_json))

    def _lookup(self, tag: str) -> type:
        try:
            return self._by_tag[tag]
        except KeyError as exc:
            raise CodecError(f"unknown domain type tag {tag!r}") from exc
