"""What a fuzz run found: :class:`Finding` s and the :class:`FuzzReport` summary table
(used by :mod:`tests.support.fuzz_api`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from google.protobuf import text_format
from google.protobuf.message import Message

#: Upper bound of one response: message + status message + trailing metadata, in bytes.
SIZE_BOUND = 64 * 1024


@dataclass
class Finding:
    """A check that failed, with the request that made it fail."""

    kind: str  # "status", "size", "state"
    rpc: str
    credential: str
    detail: str
    request: str


@dataclass
class FuzzReport:
    """What a run did and found."""

    calls: int = 0
    by_rpc: Counter[str] = field(default_factory=Counter)
    by_code: Counter[str] = field(default_factory=Counter)
    by_rpc_code: Counter[tuple[str, str]] = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    #: The first status message seen per (rpc, code) that is not OK (for the summary).
    examples: dict[tuple[str, str], str] = field(default_factory=dict)
    largest: int = 0
    #: Tables that changed with no call in flight (background work), by how often seen.
    background: Counter[str] = field(default_factory=Counter)
    #: Idempotency-record tables written by refused calls (see REQUEST_LOG_TABLES).
    request_log: Counter[str] = field(default_factory=Counter)
    #: Calls whose request carried a 1 MiB string or bytes value.
    huge_calls: int = 0
    state_checks: int = 0
    #: Accepted calls after which some service kept writing for 5 s (background work).
    unsettled: int = 0
    seconds: float = 0.0

    def failures(self, kind: str | None = None) -> list[Finding]:
        return [f for f in self.findings if kind is None or f.kind == kind]

    def table(self) -> str:
        """The summary: calls and status codes per RPC, then totals."""
        codes = sorted(self.by_code, key=lambda c: (-self.by_code[c], c))
        width = max((len(r) for r in self.by_rpc), default=10)
        short = {c: c[:9] for c in codes}
        lines = [f"{'rpc':<{width}} {'calls':>7} " + " ".join(f"{short[c]:>9}" for c in codes)]
        for rpc in sorted(self.by_rpc):
            cells = " ".join(f"{self.by_rpc_code.get((rpc, c), 0) or '':>9}" for c in codes)
            lines.append(f"{rpc:<{width}} {self.by_rpc[rpc]:>7} {cells}")
        cells = " ".join(f"{self.by_code[c]:>9}" for c in codes)
        lines.append(f"{'total':<{width}} {self.calls:>7} {cells}")
        rate = self.calls / self.seconds if self.seconds else 0.0
        lines.append(
            f"{self.calls} calls in {self.seconds:.1f}s ({rate:.0f}/s), {self.huge_calls} with a "
            f"1 MiB value, {self.state_checks} state checks, largest response {self.largest} "
            f"bytes (bound {SIZE_BOUND}), findings: "
            + (
                ", ".join(f"{k} {n}" for k, n in Counter(f.kind for f in self.findings).items())
                or "none"
            )
        )
        if self.background:
            lines.append(
                "tables that change on their own (compared by size from then on): "
                + ", ".join(f"{k} {n}" for k, n in sorted(self.background.items()))
            )
        if self.unsettled:
            lines.append(f"accepted calls followed by 5 s of background writes: {self.unsettled}")
        if self.request_log:
            lines.append(
                "refusals remembered for idempotency: "
                + ", ".join(f"{k} {n}" for k, n in sorted(self.request_log.items()))
            )
        return "\n".join(lines)


def describe(message: Message, limit: int = 600) -> str:
    """A short one-line text form of a request (long strings cut)."""
    copy = type(message)()
    copy.CopyFrom(message)
    _shorten(copy)
    text = text_format.MessageToString(copy, as_one_line=True)
    return text if len(text) <= limit else text[:limit] + "…"


def _shorten(message: Message) -> None:
    for fd, value in message.ListFields():
        if fd.is_repeated:
            if fd.type == fd.TYPE_MESSAGE:
                for item in value:
                    _shorten(item)
                if len(value) > 3:
                    del value[3:]
            elif len(value) > 3:
                del value[3:]
        elif fd.type == fd.TYPE_MESSAGE:
            _shorten(value)
        elif isinstance(value, str) and len(value) > 80:
            setattr(message, fd.name, f"{value[:40]}…[{len(value)}]")
        elif isinstance(value, bytes) and len(value) > 80:
            setattr(message, fd.name, value[:40] + b"...")
