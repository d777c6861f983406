"""Requests for every RPC, generated from the protobuf descriptors (the API fuzz test).

:func:`discover_rpcs` walks the generated ``electric.*.v1.*_pb2`` modules and lists every
method of every service; :class:`RequestGenerator` builds a request message field by field
from its descriptor, mixing values that reach deep into the services (ids of real tables,
players, entries, transfers and accounts, valid page tokens: the :class:`Known` pools) with
random and extreme ones: int64/int32/uint64 bounds, negative numbers, 1 MiB strings, control
characters, invalid enum numbers, forged page tokens, empty and long repeated fields, and
out-of-range timestamps and durations. Fields are left unset at random (missing fields).

Everything is drawn from one seeded :class:`random.Random`, so a run is reproducible.
"""

from __future__ import annotations

import base64
import importlib
import json
import pkgutil
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor, MethodDescriptor
from google.protobuf.message import Message

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
UINT64_MAX, UINT32_MAX = 2**64 - 1, 2**32 - 1
ONE_MIB = 1 << 20

_SIGNED64 = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_SINT64,
    FieldDescriptor.TYPE_SFIXED64,
}
_SIGNED32 = {
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_SFIXED32,
}
_UNSIGNED64 = {FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64}
_UNSIGNED32 = {FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32}


@dataclass(frozen=True)
class Rpc:
    """One method of one service, with the service (host) that serves it."""

    service: str  # "registration", "table", "wallet", "payout"
    method: MethodDescriptor

    @property
    def path(self) -> str:
        return f"/{self.method.containing_service.full_name}/{self.method.name}"

    @property
    def name(self) -> str:
        return f"{self.method.containing_service.name}/{self.method.name}"

    @property
    def streaming(self) -> bool:
        return bool(self.method.server_streaming)

    @property
    def request_class(self) -> type[Message]:
        return message_factory.GetMessageClass(self.method.input_type)

    @property
    def response_class(self) -> type[Message]:
        return message_factory.GetMessageClass(self.method.output_type)


def discover_rpcs(
    services: Sequence[str] = ("registration", "table", "wallet", "payout"),
) -> list[Rpc]:
    """Every RPC of the public services, from the generated modules' descriptors."""
    out: list[Rpc] = []
    for service in services:
        package = importlib.import_module(f"electric.{service}.v1")
        for info in pkgutil.iter_modules(package.__path__):
            if not info.name.endswith("_pb2"):
                continue
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for svc in module.DESCRIPTOR.services_by_name.values():
                out.extend(Rpc(service, m) for m in svc.methods)
    return sorted(out, key=lambda r: r.path)


@dataclass
class Known:
    """Real values of the running platform, so generated requests get past the first check."""

    table_ids: list[str] = field(default_factory=list)
    player_ids: list[str] = field(default_factory=list)
    entry_ids: list[str] = field(default_factory=list)
    transfer_ids: list[str] = field(default_factory=list)
    account_ids: list[str] = field(default_factory=list)
    tier_ids: list[str] = field(default_factory=list)
    page_tokens: list[str] = field(default_factory=list)


def forged_page_tokens(rng: random.Random) -> list[str]:
    """Page tokens a client could forge or mangle (the old ``o<offset>`` shape included)."""

    def b64(text: str) -> str:
        return base64.urlsafe_b64encode(text.encode()).decode()

    def js(before: object, scope: object = "p:fuzz-a") -> str:
        return b64(json.dumps({"before": before, "scope": scope}))

    return [
        js(2**70),
        js(-(2**70)),
        js(-1),
        js("1"),
        js(None, None),
        js(1, "p:someone-else"),
        js(1.5),
        b64("[]"),
        b64("{"),
        b64(f"o{2**70}"),
        b64(f"o{INT64_MAX}"),
        b64(f"o{2**63}"),
        b64("o-1"),
        b64("o"),
        b64(f"o{rng.randrange(10**6)}"),
        b64("x1"),
        "!!!not-base64!!!",
        "=",
        "\x00\x01",
        b64("o1") + "A",
        base64.urlsafe_b64encode(rng.randbytes(24)).decode(),
        base64.urlsafe_b64encode(rng.randbytes(300)).decode(),
        "a" * 5000,
    ]


class RequestGenerator:
    """Builds random requests for :class:`Rpc` s (see the module docstring)."""

    def __init__(self, rng: random.Random, known: Known, *, huge_strings: float = 0.04) -> None:
        self.rng = rng
        self.known = known
        self.huge_strings = huge_strings
        self._huge_used = False
        self._forged = forged_page_tokens(rng)
        self._pools: list[tuple[Callable[[str], bool], Callable[[], list[str]]]] = [
            (lambda n: n.endswith("table_id") or n == "tournament_id", lambda: known.table_ids),
            (lambda n: n.endswith("player_id"), lambda: known.player_ids),
            (lambda n: n.endswith("entry_id"), lambda: known.entry_ids),
            (lambda n: n.endswith("transfer_id"), lambda: known.transfer_ids),
            (lambda n: n.endswith("account_id"), lambda: known.account_ids),
            (lambda n: n.endswith("tier_id"), lambda: known.tier_ids),
            (lambda n: n == "page_token", lambda: known.page_tokens + self._forged),
            (lambda n: n == "currency", lambda: ["USD", "usd", "EUR", "XXX", "US"]),
        ]

    # -- top level ----------------------------------------------------------------------

    def request(self, rpc: Rpc) -> Message:
        """A new random request for ``rpc`` (at most one 1 MiB string in it)."""
        self._huge_used = False
        msg = rpc.request_class()
        self._fill(msg, depth=0)
        return msg

    @property
    def huge_used(self) -> bool:
        """True when the last request carries a 1 MiB value."""
        return self._huge_used

    # -- fields -------------------------------------------------------------------------

    def _fill(self, msg: Message, depth: int) -> None:
        rng = self.rng
        # Sometimes everything unset (an empty request), usually most fields set.
        if rng.random() < 0.08:
            return
        p_set = rng.choice((0.5, 0.8, 1.0))
        for fd in msg.DESCRIPTOR.fields:
            if rng.random() > p_set:
                continue
            if fd.is_repeated:
                self._fill_repeated(msg, fd, depth)
            elif fd.type == FieldDescriptor.TYPE_MESSAGE:
                if depth < 4:
                    self._fill_message(getattr(msg, fd.name), fd.message_type, depth + 1)
            else:
                setattr(msg, fd.name, self._scalar(fd))

    def _fill_repeated(self, msg: Message, fd: Any, depth: int) -> None:
        rng = self.rng
        count = rng.choice((0, 1, 1, 2, 3, rng.randrange(4, 40), 2000 if depth == 0 else 5))
        target = getattr(msg, fd.name)
        if fd.type == FieldDescriptor.TYPE_MESSAGE:
            if depth >= 4:
                return
            count = min(count, 200)
            for _ in range(count):
                self._fill_message(target.add(), fd.message_type, depth + 1)
            return
        repeat_one = rng.random() < 0.3  # the same value many times
        first = self._scalar(fd)
        for _ in range(count):
            target.append(first if repeat_one else self._scalar(fd, small=True))

    def _fill_message(self, msg: Message, descriptor: Any, depth: int) -> None:
        name = descriptor.full_name
        rng = self.rng
        if name in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
            msg.seconds = rng.choice(  # type: ignore[attr-defined]
                (0, 1, -1, INT64_MAX, INT64_MIN, 253402300800, -62135596801, rng.randrange(10**10))
            )
            msg.nanos = rng.choice((0, 1, -1, 999_999_999, 10**9, INT32_MAX, INT32_MIN))  # type: ignore[attr-defined]
            return
        if name == "google.protobuf.Any":
            msg.type_url = rng.choice(("", "type.googleapis.com/x", "garbage"))  # type: ignore[attr-defined]
            msg.value = rng.randbytes(rng.randrange(0, 64))  # type: ignore[attr-defined]
            return
        self._fill(msg, depth)

    def _scalar(self, fd: Any, *, small: bool = False) -> Any:
        t = fd.type
        rng = self.rng
        if t in _SIGNED64:
            return self._int(INT64_MIN, INT64_MAX)
        if t in _SIGNED32:
            return self._int(INT32_MIN, INT32_MAX)
        if t in _UNSIGNED64:
            return self._int(0, UINT64_MAX)
        if t in _UNSIGNED32:
            return self._int(0, UINT32_MAX)
        if t == FieldDescriptor.TYPE_BOOL:
            return rng.random() < 0.5
        if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
            return rng.choice((0.0, -1.0, 1e308, float("nan"), float("inf"), rng.random()))
        if t == FieldDescriptor.TYPE_ENUM:
            values = [v.number for v in fd.enum_type.values]
            if rng.random() < 0.7:
                return rng.choice(values)
            return rng.choice((max(values) + 1, 99, -1, INT32_MAX, INT32_MIN))
        if t == FieldDescriptor.TYPE_BYTES:
            if not small and self._take_huge():
                return rng.randbytes(ONE_MIB)
            return rng.randbytes(rng.choice((0, 1, 16, 300)))
        return self._string(fd.name, small=small)

    def _int(self, lo: int, hi: int) -> int:
        rng = self.rng
        r = rng.random()
        if r < 0.35:
            return rng.choice((0, 1, 2, 3, 5, 10, 100))
        if r < 0.55:
            return max(lo, min(hi, rng.choice((-1, -2, -100, -(2**31), -(2**53)))))
        if r < 0.8:
            return rng.choice(
                (
                    lo,
                    hi,
                    hi - 1,
                    lo + 1,
                    max(lo, min(hi, 2**31)),
                    max(lo, min(hi, 2**53)),
                    max(lo, min(hi, 10**15)),
                    max(lo, min(hi, 10**15 + 1)),
                )
            )
        return rng.randint(max(lo, -(10**6)), min(hi, 10**6))

    def _take_huge(self) -> bool:
        if self._huge_used or self.rng.random() >= self.huge_strings:
            return False
        self._huge_used = True
        return True

    def _string(self, name: str, *, small: bool = False) -> str:
        rng = self.rng
        if not small and self._take_huge():
            unit = rng.choice(("A", "é", "\U0001f0a1", "%s", "'"))
            return unit * (ONE_MIB // len(unit.encode()))  # 1 MiB on the wire
        for match, pool in self._pools:
            if match(name) and rng.random() < 0.6:
                values = pool()
                if values:
                    return rng.choice(values)
        r = rng.random()
        if r < 0.3:
            return ""
        if r < 0.45 or (r < 0.85 and name.endswith("player_id")):
            # Player ids never repeat outside the known pool: a made-up player that a Deposit
            # funded could never be registered again by a later call, so no third player can
            # fill a table and start a tournament whose timers write on their own.
            return str(uuid.UUID(int=rng.getrandbits(128)))
        if r < 0.85:
            return rng.choice(_ODD_STRINGS)
        return "".join(chr(rng.randrange(1, 0x2FFF)) for _ in range(rng.randrange(1, 300)))


_ODD_STRINGS = (
    " ",
    "x",
    "\x00",
    "a\x00b",
    "' OR 1=1 --",
    '"; DROP TABLE eventlog_events; --',
    "../../../../etc/passwd",
    "%s%s%s%n",
    "{}",
    "${jndi:ldap://x}",
    "\u202e\u200b\ufeff",
    "\U0001f0a1\U0001f0b1",
    "player:",
    "player::cash",
    "house:rake",
    "house:",
    "operator:cash_in",
    "electric-0",
    "electric--1",
    "electric-99999999999999999999999",
    "9" * 40,
    "-1",
    "NaN",
    "a" * 257,
    "b" * 4097,
    "\n\r\t",
)
