"""The table's edge: domain refusals map to gRPC statuses by type, and stored records of
the first encoding (moves and reasons as strings) still replay as typed events."""

from __future__ import annotations

import json

import grpc
import pytest
from electric.table.v1 import events_pb2 as tev
from electric_domain.holdem import Move, Street
from electric_domain.tournament import (
    InvalidCommand,
    NotAllowedNow,
    Rejected,
    RejectReason,
    SitOutReason,
    UnselectReason,
)
from electric_domain.tournament import events as dev
from electric_domain.tournament.preaction import PreAction
from electric_platform import FailedPrecondition, ServiceError
from electric_table.errors import service_error
from electric_table.tournament import codec
from electric_table.tournament.records import decode_record, record


@pytest.mark.parametrize(
    ("refusal", "code"),
    [
        (
            InvalidCommand(RejectReason.UNKNOWN_MOVE, "unknown move"),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            NotAllowedNow(RejectReason.NOT_YOUR_TURN, "not yours"),
            grpc.StatusCode.FAILED_PRECONDITION,
        ),
        (Rejected(RejectReason.FINISHED, "over"), grpc.StatusCode.FAILED_PRECONDITION),
    ],
)
def test_refusals_map_to_statuses_by_type(refusal: Rejected, code: grpc.StatusCode) -> None:
    err = service_error(refusal)
    assert isinstance(err, ServiceError) and err.code is code and err.message == str(refusal)


def test_service_errors_pass_through() -> None:
    err = FailedPrecondition("stale")
    assert service_error(err) is err


#: Fields added with version 2 (absent from version-1 records).
_V2_FIELDS = ("hand_no", "action_seq", "amount_added", "street_bet", "all_in", "street", "action")


def _v1(event: object) -> tev.DomainRecord:
    """The record version 1 wrote: moves and reasons were plain strings; the fields that
    came with version 2 were not there."""
    rec = record(event)
    plain = json.loads(rec.canonical_json)
    for key in ("move", "reason"):
        if isinstance(plain.get(key), dict):
            plain[key] = plain[key]["v"]
    for key in _V2_FIELDS:
        plain.pop(key, None)
    text = json.dumps(plain, sort_keys=True, separators=(",", ":"))
    return tev.DomainRecord(type=rec.type, canonical_json=text, encoding_version=1)


def test_version_1_records_decode_to_typed_events() -> None:
    taken = dev.ActionTaken(2, Move.RAISE_TO, 60, dev.Cause.PLAYER, True, 10_000, 5)
    unselected = dev.PreActionUnselected(1, UnselectReason.BET, 7)
    sat_out = dev.SatOut(0, SitOutReason.TIMEOUTS, 9)
    for event in (taken, unselected, sat_out):
        old = _v1(event)
        assert '"move":{' not in old.canonical_json and '"reason":{' not in old.canonical_json
        decoded = decode_record(old, {})
        assert decoded == event
        for field in ("move", "reason"):
            if hasattr(event, field):
                assert type(getattr(decoded, field)) is type(getattr(event, field))


def test_current_records_round_trip_with_their_enums() -> None:
    taken = dev.ActionTaken(
        0, Move.BET, 40, dev.Cause.PLAYER, True, 10_000, 5,
        hand_no=3, action_seq=4, amount_added=40, street_bet=40, street=Street.TURN,
    )  # fmt: skip
    unselected = dev.PreActionUnselected(1, UnselectReason.PLAYER, 7, PreAction.CALL, 3)
    for event in (taken, unselected):
        rec = record(event)
        assert rec.encoding_version == codec.ENCODING_VERSION == 2
        assert decode_record(rec, {}) == event
