"""Checks of one Register followed through a real run (the trace and log tests of issues 14
item 7 and 15 item 5): used by tests/component/audit/test_audit_trace_run.py (embedded, SQLite)
and tests/e2e/platform/test_platform_trace_e2e.py (four processes, PostgreSQL, Kafka).

``expected_events`` computes, from the stores alone, which events the Register that filled a
table caused; ``trace`` runs ``electric-audit trace --json``; ``check_trace`` and
``check_logs`` assert what the issues ask.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.payout.v1 import events_pb2 as payout_events
from electric.registration.v1 import events_pb2 as registration_events
from electric_audit.cli import main
from electric_eventlog import create_engine, schema
from electric_eventlog.codec import envelope_from_row
from sqlalchemy import select

SERVICES = ("registration", "table", "wallet", "payout")


def stored_events(url: str) -> list[Envelope]:
    """Every event of a store, in global order."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(select(schema.events).order_by(schema.events.c.global_position))
            return [envelope_from_row(r) for r in rows.mappings()]
    finally:
        engine.dispose()


def applied_events(url: str) -> list[tuple[str, str]]:
    """``(consumer, event_id)`` of every event the store's consumers applied."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            a = schema.applied
            q = select(a.c.consumer, a.c.event_id).where(a.c.outcome == "applied")
            return [(str(r[0]), str(r[1])) for r in conn.execute(q)]
    finally:
        engine.dispose()


def _payload(envelope: Envelope, message: Any) -> Any:
    assert envelope.payload.Unpack(message)
    return message


def _kind(envelope: Envelope) -> str:
    return envelope.event_type.rsplit(".", 1)[-1]


def filling_register(urls: Mapping[str, str], table_id: str) -> str:
    """The correlation id of the Register that took the table's last seat."""
    stream = [
        e
        for e in stored_events(urls["registration"])
        if e.stream_id == f"registration-table-{table_id}"
    ]
    registered = [e for e in stream if _kind(e) == "PlayerRegistered"]
    last = max(
        registered,
        key=lambda e: _payload(e, registration_events.PlayerRegistered()).players_registered,
    )
    return last.correlation_id


def expected_events(urls: Mapping[str, str], table_id: str, correlation: str) -> set[str]:
    """The ids of the events the filling Register caused, from the stores alone: the table's
    registration stream from that Register on (the table was opened and the other seats
    taken by earlier requests), every event of ``table-<id>`` (every hand), every payout
    event of the tournament and every wallet transfer of it except the other players' own
    reservations. Also asserts the stores hold what a whole tournament must."""
    reg_stream = [
        e
        for e in stored_events(urls["registration"])
        if e.stream_id == f"registration-table-{table_id}"
    ]
    expected: set[str] = set()
    others: set[str] = set()
    entries: set[str] = set()
    for e in reg_stream:
        if _kind(e) == "PlayerRegistered":
            entry = _payload(e, registration_events.PlayerRegistered()).entry_id
            entries.add(entry)
            if e.correlation_id != correlation:
                others.add(entry)
                continue
        if _kind(e) == "TableOpened":
            continue
        expected.add(e.event_id)
    kinds = {_kind(e) for e in reg_stream if e.event_id in expected}
    assert {"PlayerRegistered", "TableFilled", "TournamentStarted"} <= kinds, kinds
    table = [e for e in stored_events(urls["table"]) if e.stream_id == f"table-{table_id}"]
    table_kinds = {_kind(e) for e in table}
    wanted = {"TableStarted", "HandStarted", "CardsDealt", "BlindPosted", "TournamentFinished"}
    assert wanted <= table_kinds, table_kinds
    expected |= {e.event_id for e in table}
    payout = [e for e in stored_events(urls["payout"]) if e.stream_id == f"payout-{table_id}"]
    credited = [e for e in payout if _kind(e) == "PrizeCredited"]
    assert credited and len(credited) == sum(_kind(e) == "PrizeAwarded" for e in payout)
    expected |= {e.event_id for e in payout}
    transfers = {f"{kind}-{entry}" for entry in entries for kind in ("buyin", "rake", "net")}
    transfers |= {_payload(e, payout_events.PrizeCredited()).wallet_transfer_id for e in credited}
    wallet = [
        e
        for e in stored_events(urls["wallet"])
        if e.stream_id.removeprefix("wallet-transfer-") in transfers
    ]
    reservations_of_others = {
        e.event_id
        for e in wallet
        if e.stream_version == 1 and e.stream_id.removeprefix("wallet-transfer-buyin-") in others
    }
    assert len(wallet) > len(reservations_of_others) >= 1
    expected |= {e.event_id for e in wallet} - reservations_of_others
    return expected


def trace(
    capsys: pytest.CaptureFixture[str], trace_id: str, sources: Sequence[str]
) -> list[dict[str, Any]]:
    """``electric-audit trace ID --json <sources>``: its records (the last is the summary)."""
    capsys.readouterr()
    code = main(["trace", trace_id, "--json", *sources])
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    return [json.loads(line) for line in out.splitlines()]


def traced_events(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The event records of a trace, by event id."""
    return {r["event_id"]: r for r in records if r["node"] == "event"}


def check_trace(records: Sequence[dict[str, Any]], expected: set[str], correlation: str) -> None:
    """The trace reached every expected event, in every service, all with the Register's
    correlation id, with the tree's key links."""
    summary = records[-1]
    assert summary["node"] == "summary"
    traced = traced_events(records)
    assert set(summary["producers"]) == set(SERVICES), summary
    assert summary["correlation_ids"] == [correlation], summary
    missing = expected - set(traced)
    assert not missing, sorted(missing)[:10]
    by_type = {r["event_type"].rsplit(".", 1)[-1]: r for r in traced.values()}
    assert by_type["TournamentStarted"]["parent"] == by_type["TableFilled"]["event_id"]
    assert by_type["TableStarted"]["parent"] == by_type["TournamentStarted"]["event_id"]
    awards = {r["event_id"] for r in traced.values() if r["event_type"].endswith("Awarded")}
    credits = [r for r in traced.values() if r["event_type"].endswith("PrizeCredited")]
    assert credits and all(r["parent"] in awards for r in credits)


def check_logs(
    logs: Mapping[str, Sequence[dict[str, Any]]],
    traced: Mapping[str, dict[str, Any]],
    applied: Mapping[str, Sequence[tuple[str, str]]],
    correlation: str,
) -> None:
    """The INFO logs of every service (``logs[service]``: its parsed lines) show, with the
    Register's correlation id, the Register call, every wallet call of the chain (with the
    cause the wallet recorded) and every consumer step on an event of the chain
    (``applied[service]``: its consumers' ledger)."""
    every = [line for lines in logs.values() for line in lines]
    assert all(" " not in str(line["event"]) for line in every), [
        line["event"] for line in every if " " in str(line["event"])
    ][:5]
    info = {
        service: [
            line
            for line in lines
            if line.get("correlation_id") == correlation and line["level"] == "info"
        ]
        for service, lines in logs.items()
    }
    for service in SERVICES:
        shown = {line["event"] for line in info[service]}
        assert shown & {"rpc.completed", "consumer.applied"}, (service, shown)
    rpcs = {s: [x for x in lines if x["event"] == "rpc.completed"] for s, lines in info.items()}
    [register] = [x for x in rpcs["registration"] if x["grpc_method"] == "Register"]
    assert register["code"] == "OK" and register["peer_role"] == "player"
    assert register["request_id"] == correlation
    assert isinstance(register["duration_ms"], float | int)
    wallet_causes = {x["causation_id"] for x in rpcs["wallet"]}
    assert {x["peer_role"] for x in rpcs["wallet"]} == {"service"}
    for event in traced.values():
        if event["producer"] == "wallet":
            assert event["causation_id"] in wallet_causes, event
    steps = 0
    for service, pairs in applied.items():
        logged = {
            (x["consumer"], x["event_id"])
            for x in info[service]
            if x["event"] == "consumer.applied"
        }
        mine = [p for p in pairs if p[1] in traced]
        steps += len(mine)
        missing = [p for p in mine if p not in logged]
        assert not missing, (service, missing[:10])
    assert steps >= 5
