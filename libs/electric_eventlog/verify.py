"""Tamper evidence: walk the per-stream SHA-256 chains and report the first broken link."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from electric.eventlog.v1.envelope_pb2 import Envelope
from sqlalchemy import Connection, select, tuple_

from . import schema
from .codec import envelope_from_row
from .hashing import compute_hash


@dataclass(frozen=True)
class BrokenLink:
    """Where a chain breaks: the first event whose stored data does not check out."""

    stream_id: str
    stream_version: int
    global_position: int
    reason: str


@dataclass(frozen=True)
class VerificationReport:
    """Outcome of :func:`verify`: how much was checked and the first broken link, if any."""

    streams_checked: int
    events_checked: int
    first_broken: BrokenLink | None

    @property
    def ok(self) -> bool:
        """True when every checked chain is intact."""
        return self.first_broken is None


class ChainVerifier:
    """Checks envelopes fed in stream order (streams one after the other, or interleaved)."""

    def __init__(self) -> None:
        self._tips: dict[str, tuple[int, str]] = {}
        self.events_checked = 0

    @property
    def streams_checked(self) -> int:
        """Number of distinct streams seen so far."""
        return len(self._tips)

    def check(self, envelope: Envelope) -> BrokenLink | None:
        """Check one envelope against its stream's previous one; the break, if any."""
        self.events_checked += 1
        version, prev_hash = self._tips.get(envelope.stream_id, (0, ""))
        reason = ""
        if envelope.stream_version != version + 1:
            reason = f"version {envelope.stream_version} follows {version} (gap or reorder)"
        elif envelope.prev_hash != prev_hash:
            reason = "prev_hash does not match the hash of the previous event"
        else:
            recomputed = compute_hash(envelope)
            if recomputed != envelope.hash:
                reason = f"hash mismatch: stored {envelope.hash}, recomputed {recomputed}"
        # Chain on the STORED hash, so one tampered event is reported once, not cascaded.
        self._tips[envelope.stream_id] = (envelope.stream_version, envelope.hash)
        if not reason:
            return None
        return BrokenLink(
            envelope.stream_id, envelope.stream_version, envelope.global_position, reason
        )


def verify_envelopes(envelopes: Iterable[Envelope]) -> VerificationReport:
    """Verify envelopes from any source (store, Kafka topic, export) given in stream order."""
    verifier = ChainVerifier()
    for envelope in envelopes:
        broken = verifier.check(envelope)
        if broken:
            return VerificationReport(verifier.streams_checked, verifier.events_checked, broken)
    return VerificationReport(verifier.streams_checked, verifier.events_checked, None)


def verify(
    conn: Connection, stream_id: str | None = None, *, batch_size: int = 1000
) -> VerificationReport:
    """Verify one stream (or every stream) of the store behind ``conn``.

    Walks ``(stream_id, stream_version)`` order in keyset-paginated batches, so memory stays
    flat on large stores. Returns at the first broken link.
    """
    events = schema.events
    key = tuple_(events.c.stream_id, events.c.stream_version)
    after: tuple[str, int] | None = None
    verifier = ChainVerifier()
    while True:
        query = select(events).order_by(events.c.stream_id, events.c.stream_version)
        if stream_id is not None:
            query = query.where(events.c.stream_id == stream_id)
        if after is not None:
            query = query.where(key > tuple_(*after))
        rows = list(conn.execute(query.limit(batch_size)).mappings())
        for row in rows:
            broken = verifier.check(envelope_from_row(row))
            if broken:
                return VerificationReport(verifier.streams_checked, verifier.events_checked, broken)
        if len(rows) < batch_size:
            return VerificationReport(verifier.streams_checked, verifier.events_checked, None)
        after = (rows[-1]["stream_id"], rows[-1]["stream_version"])
