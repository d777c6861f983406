"""The seams that make one tree's run repeatable: a virtual clock, seeded ids, seeded seeds.

Runs inside a worker process (``worker.py``), before and after the tree's modules load. The
domain already takes time and randomness as inputs (``DealHand(now, seed)``, the casino
handlers' ``now_ms`` and ``seed``, the table manager's ``Clock``); what is left outside it:

* ``uuid.uuid4`` (event ids in the event store, UTH round ids): replaced by a generator
  seeded per scenario, so the same run makes the same ids in every tree that asks for them
  in the same order (the comparison still replaces ids by ordinals: ``compare.py``);
* ``time.time`` / ``time.time_ns`` and ``datetime.now`` in the services and libraries (the
  envelopes' ``occurred_at`` of table appends, ``created_at`` columns, the event store's
  default clock): every ``electric*``
  module's ``datetime`` name is pointed at :class:`VirtualDatetime`, whose ``now`` reads
  the scenario's virtual clock and whose instances (and ``isinstance`` checks) are plain
  ``datetime`` ones; their ``time`` name at :class:`VirtualTime` (a tournament's start
  time is ``time.time_ns()`` in the consumer that starts it).
"""

from __future__ import annotations

import hashlib
import random
import sys
import time
import types
import uuid
from datetime import UTC, datetime, tzinfo
from typing import Any

_real_uuid4 = uuid.uuid4


class VirtualClock:
    """Epoch milliseconds that move only when a scenario moves them."""

    def __init__(self, start_ms: int) -> None:
        self.now = start_ms

    def now_ms(self) -> int:
        return self.now

    def advance_to(self, at_ms: int) -> None:
        self.now = max(self.now, at_ms)


#: The clock ``VirtualDatetime.now`` reads (one scenario runs at a time in a worker).
CLOCK = VirtualClock(1_800_000_000_000)


class _DatetimeType(type):
    """``isinstance(x, VirtualDatetime)`` holds for every real ``datetime``: a module whose
    ``datetime`` name was swapped keeps recognising the values SQLAlchemy and protobuf
    give it."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, datetime)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, datetime)


class VirtualDatetime(datetime, metaclass=_DatetimeType):
    """``datetime`` whose ``now`` / ``utcnow`` are the virtual clock's (real instances)."""

    @classmethod
    def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
        at = datetime.fromtimestamp(CLOCK.now / 1000, UTC)
        return at if tz is None or tz is UTC else at.astimezone(tz)

    @classmethod
    def utcnow(cls) -> datetime:  # type: ignore[override]
        return datetime.fromtimestamp(CLOCK.now / 1000, UTC).replace(tzinfo=None)


class SeededIds:
    """``uuid.uuid4`` from a seeded generator (reseeded at every scenario)."""

    def __init__(self) -> None:
        self._rng = random.Random(0)

    def reseed(self, *parts: object) -> None:
        self._rng = random.Random(seed_bytes("ids", *parts))

    def uuid4(self) -> uuid.UUID:
        return uuid.UUID(int=self._rng.getrandbits(128), version=4)


IDS = SeededIds()


def seed_bytes(*parts: object) -> bytes:
    """32 bytes named by ``parts`` (deck seeds, multiplier seeds, generator seeds)."""
    return hashlib.sha256("/".join(map(str, parts)).encode()).digest()


def install_ids() -> None:
    """Seeded ``uuid.uuid4`` (before the tree's modules are imported, so a module that
    bound the name at import gets it too)."""
    uuid.uuid4 = IDS.uuid4


class VirtualTime(types.ModuleType):
    """The ``time`` module with ``time`` / ``time_ns`` read from the virtual clock (the
    monotonic clocks and everything else are the real module's)."""

    def __init__(self) -> None:
        super().__init__("time")

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    @staticmethod
    def time() -> float:
        return CLOCK.now / 1000

    @staticmethod
    def time_ns() -> int:
        return CLOCK.now * 1_000_000


_VIRTUAL_TIME = VirtualTime()


def install_clock() -> list[str]:
    """Point every loaded ``electric*`` module's ``datetime`` at :class:`VirtualDatetime`
    and its ``time`` at :class:`VirtualTime` (call after importing the tree: a tournament's
    start time, for one, is ``time.time_ns()``); the modules changed."""
    changed = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("electric") or module is None:
            continue
        if getattr(module, "datetime", None) is datetime:
            module.datetime = VirtualDatetime  # type: ignore[attr-defined]
            changed.append(name)
        if getattr(module, "time", None) is time:
            module.time = _VIRTUAL_TIME  # type: ignore[attr-defined]
            changed.append(name)
    return changed


def drop_editable_finder() -> None:
    """The virtualenv's editable install maps ``electric_*`` to one checkout; a submodule
    the worker's tree lacks would silently load from there. Without the finder it fails."""
    sys.meta_path[:] = [
        f for f in sys.meta_path if not getattr(f, "__module__", "").startswith("__editable__")
    ]


def check_origins(*roots: str) -> None:
    """Every loaded ``electric*`` module comes from one of ``roots`` (the tree, its ``gen``)."""
    prefixes = tuple(r.rstrip("/") + "/" for r in roots)
    strays = [
        f"{name}: {path}"
        for name, module in list(sys.modules.items())
        if name.startswith("electric")
        and (path := getattr(module, "__file__", None) or "")
        and not path.startswith(prefixes)
    ]
    if strays:
        raise RuntimeError(f"modules loaded from outside {roots}: {strays[:5]}")
