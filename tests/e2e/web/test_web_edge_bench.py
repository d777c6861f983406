"""``python -m bench web_edge``, CI size: the bench that fills docs/web-edge.md's latency rows
runs end to end (the runner, the edge, both paths) and measures Acts on both paths."""

from __future__ import annotations

import pytest

from bench import bench_web_edge

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]


def test_the_edge_bench_measures_act_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_web_edge, "SECONDS", 8.0)
    monkeypatch.setattr(bench_web_edge, "TABLES", 2)
    rows = {row.name: row for row in bench_web_edge.run()}
    p50 = rows["Act p50 via the edge (Connect)"]
    assert p50.peer_name == "Act p50 direct (gRPC)"
    edge_acts, direct_acts = (int(n) for n in p50.note.split(" Acts")[0].split(" / "))
    # The paths alternate Act by Act, so each carried about half.
    assert min(edge_acts, direct_acts) >= 10, p50.note
    assert 0 < p50.value <= rows["Act p99 via the edge (Connect)"].value
    assert (p50.peer_value or 0) > 0
    assert rows["edge CPU per Act (Go process)"].value > 0
