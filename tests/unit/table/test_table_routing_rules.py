"""Routing and group-timing rules of ``partitions`` ownership (issue 17, docs/scaling.md):
the advertised address, how an owner's answer is relayed, the consumer-group timings."""

from __future__ import annotations

import grpc
import pytest
from aiokafka import TopicPartition
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from electric.common.v1 import errors_pb2
from electric_platform.errors import rich_status
from electric_table.host.ownership import group_options, group_timings, sticky_assignor
from electric_table.host.routing import advertised_address, relayed


def test_advertised_address_defaults_to_the_bound_port_on_loopback() -> None:
    port = {"value": 0}
    address = advertised_address("0.0.0.0", lambda: port["value"], environ={})
    port["value"] = 50062  # bound after setup: read when the fence is taken
    assert address() == "127.0.0.1:50062"
    assert advertised_address("10.0.0.7", lambda: 1, environ={})() == "10.0.0.7:1"
    fixed = {"ELECTRIC_TABLE_ADVERTISED_ADDRESS": "table-2:50052"}
    assert advertised_address("0.0.0.0", lambda: 1, environ=fixed)() == "table-2:50052"


def _error(code: grpc.StatusCode, message: str, detail: object = None) -> grpc.aio.AioRpcError:
    trailers = grpc.aio.Metadata()
    if detail is not None:
        for key, value in rich_status(code, message, detail).trailing_metadata:  # type: ignore[arg-type]
            trailers.add(key, value)
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), trailers, message)


def test_the_owners_refusal_is_relayed_with_its_code_message_and_detail() -> None:
    stale = errors_pb2.StaleCommand(requested_hand_number=3, current_hand_number=4)
    err = relayed(_error(grpc.StatusCode.FAILED_PRECONDITION, "stale command", stale), "o", "t")
    assert err.code is grpc.StatusCode.FAILED_PRECONDITION
    assert err.message == "stale command"
    assert isinstance(err.detail, errors_pb2.StaleCommand) and err.detail == stale
    plain = relayed(_error(grpc.StatusCode.PERMISSION_DENIED, "not your seat"), "o", "t")
    assert (plain.code, plain.message, plain.detail) == (
        grpc.StatusCode.PERMISSION_DENIED,
        "not your seat",
        None,
    )


def test_an_unreachable_owner_is_unavailable_naming_it() -> None:
    err = relayed(_error(grpc.StatusCode.UNAVAILABLE, "connection refused"), "h:1", "t1")
    assert err.code is grpc.StatusCode.UNAVAILABLE
    assert "h:1" in err.message and "t1" in err.message and "retry" in err.message


def test_group_timings_fail_over_within_seconds_and_are_checked() -> None:
    assert group_timings({}) == {
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 500,
        "rebalance_timeout_ms": 6000,
    }
    got = group_timings({"ELECTRIC_TABLE_SESSION_TIMEOUT_MS": "9000"})
    assert got["session_timeout_ms"] == 9000
    with pytest.raises(ValueError, match="third"):
        group_timings({"ELECTRIC_TABLE_HEARTBEAT_MS": "2500"})
    with pytest.raises(ValueError, match="> 0"):
        group_timings({"ELECTRIC_TABLE_REBALANCE_TIMEOUT_MS": "0"})


def test_each_instance_has_a_sticky_assignor_of_its_own_and_lists_it_alone() -> None:
    first, second = sticky_assignor(), sticky_assignor()
    strategies = group_options(first)["partition_assignment_strategy"]
    assert strategies == (first,)  # one JoinGroup per listed strategy in aiokafka 0.14
    assert first.name == "sticky"  # the protocol name the members agree on
    # What one instance was given is its own memory, not another's in the same process.
    first.on_assignment(ConsumerProtocolMemberAssignment(0, [("t", [1, 4])], b""))
    first.on_generation_assignment(7)
    assert first.member_assignment == [TopicPartition("t", 1), TopicPartition("t", 4)]
    assert second.member_assignment is None and second.generation == -1
    assert first.metadata(["t"]).user_data != second.metadata(["t"]).user_data


def test_a_uth_table_is_on_the_partition_of_registrations_casino_table_stream() -> None:
    from aiokafka.partitioner import DefaultPartitioner
    from electric_registration.casino.lobby import casino_stream
    from electric_table.casino.uth.ownership import uth_partition, uth_resource

    parts = list(range(6))
    for n in range(1, 60):
        # Registration's stream of the table: its events' Kafka key (stream id).
        key = casino_stream(f"uth-{n}").encode()
        assert uth_resource(f"uth-{n}").encode() == key == f"casino-table-uth-{n}".encode()
        assert uth_partition(f"uth-{n}", 6) == DefaultPartitioner()(key, parts, parts)


def test_casino_off_is_for_single_ownership_only() -> None:
    from electric_table.app import casino_hosted

    assert casino_hosted({}) and casino_hosted({}, partitions=True)
    assert not casino_hosted({"ELECTRIC_TABLE_CASINO": "off"})
    with pytest.raises(ValueError, match="every instance hosts"):
        casino_hosted({"ELECTRIC_TABLE_CASINO": "off"}, partitions=True)
