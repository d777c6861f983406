"""``python -m bench encoding`` (issue 26 item 8) runs and measures what it says: the
protobuf in use is the compiled one, and its rows compare it with the pure-Python one run in
a child process."""

from __future__ import annotations

import pytest
from google.protobuf.internal import api_implementation

from bench import bench_encoding


def test_the_encoding_bench_compares_upb_with_pure_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(bench_encoding, "ROUNDS", 200)
    monkeypatch.setattr(bench_encoding, "statement_costs", lambda _rounds: None)
    rows = {r.name: r for r in bench_encoding.run()}
    view = rows[f"protobuf TableView encode ({api_implementation.Type()})"]
    assert api_implementation.Type() == "upb"
    assert view.peer_value is not None and view.value > 0
    assert view.peer_value > 5 * view.value  # the pure-Python peer really ran
    assert "bytes" in view.note and int(view.note.split()[0]) > 1000  # a filled view
    assert rows["event chain hash (compute_hash)"].value > 0
    assert rows["access log line, JSONRenderer (stdlib json)"].value > 0
