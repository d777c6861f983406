"""Typed errors, payload registry and the documented hash encoding."""

from __future__ import annotations

import hashlib

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_eventlog import (
    ConcurrencyError,
    EventLogError,
    PayloadRegistry,
    StreamNotFoundError,
    compute_hash,
    default_registry,
    pack,
    type_name_of,
    verify_envelopes,
)
from google.protobuf import any_pb2, timestamp_pb2, wrappers_pb2


def test_concurrency_error_is_an_event_log_error_with_a_precise_message() -> None:
    error = ConcurrencyError("table-1", 3, 4)
    assert isinstance(error, EventLogError)
    assert str(error) == "stream 'table-1': expected version 3, found 4"
    assert str(ConcurrencyError("t", "no stream", None)).endswith("found no stream")
    assert isinstance(StreamNotFoundError("x"), EventLogError)


def test_registry_resolves_generated_types_and_keeps_unknown_as_any() -> None:
    registry = default_registry()
    assert registry.lookup("electric.eventlog.v1.Envelope") is Envelope
    assert registry.lookup("electric.nope.v1.Missing") is None
    packed = pack(timestamp_pb2.Timestamp(seconds=7))
    assert type_name_of(packed) == "google.protobuf.Timestamp"
    assert registry.unpack(packed) == timestamp_pb2.Timestamp(seconds=7)
    unknown = any_pb2.Any(type_url="type.googleapis.com/electric.x.v1.Y", value=b"\x01\x02")
    assert registry.unpack(unknown) is unknown
    assert pack(unknown) == unknown  # never wrapped twice


def test_explicit_registration() -> None:
    registry = PayloadRegistry()
    registry.register(wrappers_pb2.Int64Value)
    assert registry.lookup("google.protobuf.Int64Value") is wrappers_pb2.Int64Value


def _field(value: bytes) -> bytes:
    return len(value).to_bytes(8, "big") + value


def test_hash_follows_the_documented_encoding() -> None:
    env = Envelope(
        event_id="e1",
        stream_id="s",
        stream_version=1,
        global_position=9,
        event_type="google.protobuf.StringValue",
        correlation_id="c",
        causation_id="k",
        producer="wallet",
        payload=pack(wrappers_pb2.StringValue(value="v")),
    )
    env.occurred_at.seconds, env.occurred_at.nanos = 1_700_000_000, 123_456_789
    expected = hashlib.sha256(
        b"electric.eventlog.v1/sha256-v1"
        + b"".join(
            _field(f)
            for f in [
                b"",
                b"s",
                b"1",
                b"9",
                b"e1",
                b"google.protobuf.StringValue",
                b"1700000000123456",
                b"c",
                b"k",
                b"wallet",
                b"type.googleapis.com/google.protobuf.StringValue",
                env.payload.value,
            ]
        )
    ).hexdigest()
    assert compute_hash(env) == expected


def test_verify_envelopes_reports_gaps_and_broken_links() -> None:
    chain: list[Envelope] = []
    prev = ""
    for version in (1, 2, 3):
        env = Envelope(
            stream_id="s", stream_version=version, global_position=version, prev_hash=prev
        )
        env.hash = prev = compute_hash(env)
        chain.append(env)
    assert verify_envelopes(chain).ok
    report = verify_envelopes([chain[0], chain[2]])
    assert report.first_broken is not None and report.first_broken.stream_version == 3
    assert "gap" in report.first_broken.reason
    relinked = Envelope()
    relinked.CopyFrom(chain[1])
    relinked.prev_hash = "0" * 64
    relinked.hash = compute_hash(relinked)  # a forger recomputing its own hash is still caught
    report = verify_envelopes([chain[0], relinked, chain[2]])
    assert report.first_broken is not None and report.first_broken.stream_version == 2
    assert "prev_hash" in report.first_broken.reason
