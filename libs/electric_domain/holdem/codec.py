"""JSON-ready dicts for hand events and commands (for event stores, logs and the wire).

``event_to_dict(e)`` gives ``{"type": "Raised", "player": 2, "to": 60, "all_in": false}``
(tuples become lists; :class:`HandStarted` nests its config); ``event_from_dict`` inverts it
exactly. Same for commands. Pure, no I/O.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from electric_domain.holdem import commands as _commands
from electric_domain.holdem import events as _events
from electric_domain.holdem.commands import Command
from electric_domain.holdem.events import Event, HandStarted
from electric_domain.holdem.state import HandConfig

_EVENT_TYPES: dict[str, type] = {
    name: obj
    for name, obj in vars(_events).items()
    if isinstance(obj, type)
    and dataclasses.is_dataclass(obj)
    and obj.__module__ == _events.__name__
}
_COMMAND_TYPES: dict[str, type] = {
    name: obj
    for name, obj in vars(_commands).items()
    if isinstance(obj, type)
    and dataclasses.is_dataclass(obj)
    and obj.__module__ == _commands.__name__
}


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if isinstance(v, HandConfig):
        return {f.name: _plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
    return v


def _tuples(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_tuples(x) for x in v)
    return v


def _to_dict(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type(obj).__name__}
    for f in dataclasses.fields(obj):
        out[f.name] = _plain(getattr(obj, f.name))
    return out


def _from_dict(data: dict[str, Any], types: dict[str, type], what: str) -> Any:
    cls = types.get(str(data.get("type")))
    if cls is None:
        raise ValueError(f"unknown {what} type {data.get('type')!r}")
    kwargs = {k: _tuples(v) for k, v in data.items() if k != "type"}
    if cls is HandStarted:
        cfg = dict(data["config"])
        kwargs["config"] = HandConfig(**{k: _tuples(v) for k, v in cfg.items()})
    return cls(**kwargs)


def event_to_dict(event: Event) -> dict[str, Any]:
    """A JSON-ready dict of ``event``."""
    return _to_dict(event)


def event_from_dict(data: dict[str, Any]) -> Event:
    """The event of :func:`event_to_dict` output."""
    return _from_dict(data, _EVENT_TYPES, "event")  # type: ignore[no-any-return]


def command_to_dict(command: Command) -> dict[str, Any]:
    """A JSON-ready dict of ``command``."""
    return _to_dict(command)


def command_from_dict(data: dict[str, Any]) -> Command:
    """The command of :func:`command_to_dict` output."""
    return _from_dict(data, _COMMAND_TYPES, "command")  # type: ignore[no-any-return]
