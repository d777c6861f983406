"""`python -m bench platform` (issue 16 item 4) with tiny parameters: on each backend it
prints the platform rows of `make bench`'s table with real, finite numbers.

Tiny: 2 tables in flight for 4 s (then a bounded drain), so the figures mean nothing as
performance; the test checks that every figure was measured (bots acted and their views
came back, tables were seated, tournaments finished and were credited, the echo peer ran,
and the CPU per Act of each platform process was measured: the services, the bots and, on
PostgreSQL/Kafka, the two servers).
"""

from __future__ import annotations

import math
import re

import pytest

from bench.__main__ import main as bench_main

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(600)]

FIGURES = (
    "Act throughput",
    "Act latency p50",
    "Act latency p99",
    "Register -> seated p50",
    "Register -> seated p99",
    "Finished -> credited p50",
    "Finished -> credited p99",
)


def _number(text: str) -> float:
    return float(text.replace(",", "")) if text != "-" else math.nan


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_bench_platform_prints_measured_rows(
    backend: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if backend == "postgres":
        monkeypatch.setenv("DATABASE_URL", request.getfixturevalue("postgres_url"))
        monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", request.getfixturevalue("kafka_bootstrap"))
    monkeypatch.setenv("BENCH_PLATFORM_BACKENDS", backend)
    monkeypatch.setenv("BENCH_PLATFORM_LEVELS", "2")
    monkeypatch.setenv("BENCH_PLATFORM_SECONDS", "4")
    monkeypatch.setenv("BENCH_PLATFORM_DRAIN_SECONDS", "15")
    monkeypatch.setenv("BENCH_PLATFORM_CREDIT_WAIT_SECONDS", "45")

    assert bench_main(["platform"]) == 0
    out = capsys.readouterr().out
    rows: dict[str, list[str]] = {}
    for line in out.splitlines():
        if line.startswith("platform "):
            cells = re.split(r"\s{2,}", line.strip())
            rows[cells[1]] = cells
    tag = f"({backend}, 2 in flight)"
    for figure in FIGURES:
        assert f"{figure} {tag}" in rows, out
    values = {figure: _number(rows[f"{figure} {tag}"][2]) for figure in FIGURES}
    for figure, value in values.items():
        assert math.isfinite(value) and value >= 0, (figure, out)
    assert values["Act throughput"] > 0
    assert 0 < values["Act latency p50"] <= values["Act latency p99"]
    assert 0 < values["Register -> seated p50"] <= values["Register -> seated p99"]
    assert values["Finished -> credited p50"] <= values["Finished -> credited p99"]
    # The peer (bare grpc.aio echo, same loop) ran in the same run: a rate and a ratio.
    throughput = rows[f"Act throughput {tag}"]
    assert throughput[4] == "grpc.aio echo, same loop"
    assert _number(throughput[5]) > 0 and throughput[6].endswith("x"), out
    # CPU per Act by process (issue 26 item 6): each measured, and the sum of them.
    cpu = {k: _number(v[2]) for k, v in rows.items() if k.startswith("CPU per Act: ")}
    names = {k.removeprefix("CPU per Act: ").removesuffix(f" {tag}") for k in cpu}
    wanted = {"bots", "platform"} | (
        {"registration", "table", "wallet", "payout", "postgres", "kafka"}
        if backend == "postgres"
        else {"runner (4 services)"}
    )
    assert wanted <= names, out
    assert all(math.isfinite(v) and v >= 0 for v in cpu.values()), out
    total = cpu[f"CPU per Act: platform {tag}"]
    assert total > 0 and math.isclose(total, sum(cpu.values()) - total, rel_tol=0.01), out
    credited = rows[f"Finished -> credited p99 {tag}"][-1]
    done, finished = (int(x) for x in re.findall(r"(\d+)/(\d+) finished", credited)[0])
    assert finished >= 1 and 1 <= done <= finished, out
