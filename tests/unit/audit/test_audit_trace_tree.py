"""``electric-audit trace``: selection and tree shape over hand-made envelopes (the real run
is tests/component/audit/test_audit_trace_run.py)."""

from __future__ import annotations

import json

import pytest
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_audit import trace
from electric_audit.sources import Located, Source


def _env(event_id: str, corr: str, cause: str, producer: str, second: int) -> Envelope:
    e = Envelope(
        event_id=event_id,
        stream_id=f"s-{producer}",
        stream_version=second,
        event_type=f"electric.{producer}.v1.E{event_id}",
        correlation_id=corr,
        causation_id=cause,
        producer=producer,
    )
    e.occurred_at.FromSeconds(1_700_000_000 + second)
    return e


def _source(name: str, envelopes: list[Envelope]) -> Source:
    src = Source(name, "store")
    for i, e in enumerate(envelopes):
        src.events.append(Located(e, src.label, f"position {i + 1}", i + 1))
    return src


def _sources() -> list[Source]:
    # Register R (correlation C): registered (caused by R), filled, wallet post (caused by
    # filled, other correlation by mistake: still followed), started, a hand; a timer
    # expiry caused by the hand; a player's command X inside the same correlation; noise.
    reg = _source(
        "registration",
        [
            _env("registered", "C", "R", "registration", 1),
            _env("filled", "C", "R", "registration", 2),
            _env("started", "C", "filled", "registration", 4),
            _env("other", "D", "Q", "registration", 5),
        ],
    )
    wallet = _source("wallet", [_env("posted", "Z", "filled", "wallet", 3)])
    table = _source(
        "table",
        [
            _env("hand", "C", "started", "table", 6),
            _env("timeout", "C", "hand", "table", 7),
            _env("acted", "C", "X", "table", 8),
            _env("noise", "D", "other", "table", 9),
        ],
    )
    # The same events seen again on a topic are shown once.
    topic = _source("electric.table.events", [_env("hand", "C", "started", "table", 6)])
    return [reg, wallet, table, topic]


def test_a_correlation_id_selects_its_chain_and_what_it_caused() -> None:
    t = trace.build(_sources(), "C")
    got = [e.envelope.event_id for e in t.events]
    assert got == ["registered", "filled", "posted", "started", "hand", "timeout", "acted"]
    shape = [(d, n.kind, n.id, p.id if p else None) for d, n, p in t.walk()]
    assert shape == [
        (0, "root", "C", None),
        (1, "cause", "R", "C"),
        (2, "event", "registered", "R"),
        (2, "event", "filled", "R"),
        (3, "event", "posted", "filled"),
        (3, "event", "started", "filled"),
        (4, "event", "hand", "started"),
        (5, "event", "timeout", "hand"),
        (1, "cause", "X", "C"),
        (2, "event", "acted", "X"),
    ]


def test_an_event_id_selects_what_it_caused_and_a_request_id_its_events() -> None:
    t = trace.build(_sources(), "started")
    assert t.root.event is not None and t.root.event.envelope.event_id == "started"
    assert [e.envelope.event_id for e in t.events] == ["started", "hand", "timeout"]
    assert [(d, n.id) for d, n, _ in t.walk()] == [(0, "started"), (1, "hand"), (2, "timeout")]
    by_request = trace.build(_sources(), "R")
    assert {e.envelope.event_id for e in by_request.events} == {
        "registered",
        "filled",
        "posted",
        "started",
        "hand",
        "timeout",
    }
    assert trace.build(_sources(), "nothing").events == []


def test_summary_and_json_records() -> None:
    t = trace.build(_sources(), "C")
    s = trace.summary(t)
    assert s["events"] == 7
    assert s["producers"] == {"registration": 3, "table": 3, "wallet": 1}
    assert s["correlation_ids"] == ["C", "Z"]
    records = [trace.node_record(d, n, p) for d, n, p in t.walk()]
    assert records[4]["event_id"] == "posted" and records[4]["parent"] == "filled"
    assert records[4]["source"] == "store:wallet" and records[4]["depth"] == 3
    json.dumps(records)
    assert trace.node_text(2, t.root.children[0].children[0]).startswith("    Eregistered")


def test_deep_chains_are_walked_without_recursion() -> None:
    chain = [_env("e0", "C", "R", "table", 0)]
    chain += [_env(f"e{i}", "C", f"e{i - 1}", "table", i) for i in range(1, 3000)]
    t = trace.build([_source("table", chain)], "C")
    walked = list(t.walk())
    depth, deepest, _ = walked[-1]
    assert depth == 3001 == max(d for d, _, _ in walked) and len(walked) == 3002
    line = trace.node_text(depth, deepest)
    assert line.startswith("  " * trace.MAX_INDENT + "[3001] Ee2999  table")


@pytest.mark.parametrize("argv", [["trace", "C"]])
def test_trace_without_sources_is_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from electric_audit.cli import main

    assert main(argv) == 2
    assert "give --store" in capsys.readouterr().err
