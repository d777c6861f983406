"""The per-stream SHA-256 chain: canonical encoding of an envelope and its hash.

Canonical encoding (version 1), documented in docs/event-store.md: the ASCII tag
``electric.eventlog.v1/sha256-v1`` followed by these fields in this order, each as an 8-byte
big-endian length and its bytes (text as UTF-8, integers as base-10 ASCII):

    prev_hash, stream_id, stream_version, global_position, event_id, event_type,
    occurred_at (microseconds since the Unix epoch, UTC), correlation_id, causation_id,
    producer, payload.type_url, payload.value

An explicit concatenation rather than "deterministic protobuf serialisation": protobuf only
promises determinism within one build of one library, and an auditor must be able to
recompute the hash in any language from the documented fields.
"""

from __future__ import annotations

import hashlib

from electric.eventlog.v1.envelope_pb2 import Envelope

HASH_TAG = b"electric.eventlog.v1/sha256-v1"


def occurred_at_micros(envelope: Envelope) -> int:
    """``envelope.occurred_at`` as integer microseconds since the epoch (nanos truncated)."""
    return envelope.occurred_at.seconds * 1_000_000 + envelope.occurred_at.nanos // 1_000


def canonical_bytes(envelope: Envelope) -> bytes:
    """The bytes hashed for ``envelope`` (its ``hash`` field is not part of them)."""
    return b"".join(
        (
            HASH_TAG,
            field(envelope.prev_hash.encode()),
            field(envelope.stream_id.encode()),
            field(str(envelope.stream_version).encode()),
            field(str(envelope.global_position).encode()),
            canonical_tail(envelope),
        )
    )


def field(value: bytes) -> bytes:
    """One field of the canonical encoding: 8-byte big-endian length, then the bytes."""
    return len(value).to_bytes(8, "big") + value


def canonical_tail(envelope: Envelope) -> bytes:
    """The encoded fields after ``global_position`` (event id .. payload value): known
    before positions are allocated, so the PostgreSQL fast path of the store sends them
    ready-made and the database only prepends the four position-dependent fields."""
    return b"".join(
        field(part)
        for part in (
            envelope.event_id.encode(),
            envelope.event_type.encode(),
            str(occurred_at_micros(envelope)).encode(),
            envelope.correlation_id.encode(),
            envelope.causation_id.encode(),
            envelope.producer.encode(),
            envelope.payload.type_url.encode(),
            envelope.payload.value,
        )
    )


def compute_hash(envelope: Envelope) -> str:
    """Hex SHA-256 of :func:`canonical_bytes` of ``envelope``."""
    return hashlib.sha256(canonical_bytes(envelope)).hexdigest()
