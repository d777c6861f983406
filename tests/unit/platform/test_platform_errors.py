"""Rich errors at the edge: google.rpc.Status built by grpcio-status, byte for byte the wire
format the platform always sent, and the by-type mapping of library errors onto codes."""

from __future__ import annotations

import grpc
import pytest
from electric_eventlog import (
    ConcurrencyError,
    DuplicateEventError,
    EventLogError,
    SchemaError,
    StreamNotFoundError,
)
from electric_platform.errors import (
    STATUS_DETAILS_KEY,
    FailedPrecondition,
    ServiceError,
    decode_status_details,
    encode_status_details,
    map_status,
    rich_status,
    status_for,
)
from google.protobuf import wrappers_pb2
from google.rpc import status_pb2

#: google.rpc.Status{code: 9, message: "no money", details: [Any(Int64Value(7))]} as the
#: platform's hand-written varint encoder produced it before grpcio-status replaced it.
LEGACY_WIRE = (
    b"\x08\t\x12\x08no money\x1a4\n.type.googleapis.com/google.protobuf.Int64Value\x12\x02\x08\x07"
)


def test_rich_status_keeps_the_wire_format() -> None:
    detail = wrappers_pb2.Int64Value(value=7)
    data = encode_status_details(grpc.StatusCode.FAILED_PRECONDITION, "no money", detail)
    assert data == LEGACY_WIRE
    status = rich_status(grpc.StatusCode.FAILED_PRECONDITION, "no money", detail)
    assert status.code is grpc.StatusCode.FAILED_PRECONDITION
    assert status.details == "no money"
    assert tuple(status.trailing_metadata) == ((STATUS_DETAILS_KEY, LEGACY_WIRE),)
    parsed = status_pb2.Status.FromString(LEGACY_WIRE)
    out = wrappers_pb2.Int64Value()
    assert parsed.code == 9 and parsed.details[0].Unpack(out) and out.value == 7


def test_decode_reads_what_encode_wrote() -> None:
    data = encode_status_details(
        grpc.StatusCode.NOT_FOUND, "ünïcode ok", wrappers_pb2.StringValue(value="x")
    )
    code, message, details = decode_status_details(data)
    assert (code, message) == (5, "ünïcode ok")
    out = wrappers_pb2.StringValue()
    assert details[0].Unpack(out) and out.value == "x"


class _TableClosed(Exception):
    pass


class _TableGone(_TableClosed):
    pass


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (ConcurrencyError("s", 1, 2), grpc.StatusCode.ABORTED),
        (StreamNotFoundError("s"), grpc.StatusCode.NOT_FOUND),
        (DuplicateEventError("e"), grpc.StatusCode.ALREADY_EXISTS),
        (SchemaError("old"), grpc.StatusCode.FAILED_PRECONDITION),
        (EventLogError("other"), grpc.StatusCode.INTERNAL),
        (FailedPrecondition("no"), grpc.StatusCode.FAILED_PRECONDITION),
        (
            ServiceError("x", code=grpc.StatusCode.RESOURCE_EXHAUSTED),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
        ),
        (ValueError("bug"), grpc.StatusCode.INTERNAL),
    ],
)
def test_status_for_maps_by_type(error: BaseException, code: grpc.StatusCode) -> None:
    assert status_for(error) is code


def test_mapped_domain_errors_cover_their_subclasses() -> None:
    assert status_for(_TableGone()) is grpc.StatusCode.INTERNAL
    map_status(_TableClosed, grpc.StatusCode.FAILED_PRECONDITION)
    assert status_for(_TableGone()) is grpc.StatusCode.FAILED_PRECONDITION
    map_status(_TableGone, grpc.StatusCode.NOT_FOUND)  # the most specific type wins
    assert status_for(_TableGone()) is grpc.StatusCode.NOT_FOUND
    assert status_for(_TableClosed()) is grpc.StatusCode.FAILED_PRECONDITION
