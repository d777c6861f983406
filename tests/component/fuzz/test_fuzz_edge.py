"""The API fuzz test through the browser edge (web/edge): the same harness, requests and
checks as ``test_fuzz_api.py`` (tests/support/fuzz_api.py), every call made as a browser
makes it (connect-python, Connect or gRPC-Web) through the edge in front of the four real
services. No answer is UNKNOWN or INTERNAL, a refused call changes no state, every internal
method answers UNIMPLEMENTED there and every public one is called (and served).
``make fuzz EDGE=1`` / ``python -m tests.support.fuzz_main --edge`` runs it at full size.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from electric.common.v1 import access_pb2

from tests.support.fuzz_api import FuzzRunner, seed_platform
from tests.support.fuzz_edge import UNLIMITED, EdgeTransport
from tests.support.fuzz_report import SIZE_BOUND
from tests.support.fuzz_values import discover_rpcs
from tests.support.platform_kit import embedded_platform
from tests.support.web_edge import browser_edge

pytestmark = pytest.mark.timeout(300)

#: Calls of the sample, and its seed (fixed: reproducible with fuzz_main --edge).
EDGE_CALLS = 600
EDGE_SEED = 20261207


async def test_fuzzed_requests_through_the_browser_edge(tmp_path: Path) -> None:
    async with embedded_platform(tmp_path) as platform:
        known, seated = await seed_platform(platform, EDGE_SEED)
        async with browser_edge(platform.targets, extra_args=UNLIMITED) as edge:
            transport = EdgeTransport(edge, EDGE_SEED)
            runner = FuzzRunner(platform, known, seated, seed=EDGE_SEED, transport=transport)
            try:
                report = await runner.run(EDGE_CALLS)
            finally:
                runner.close()
    print("\n" + report.table())
    print(f"protocols: {transport.by_protocol}")
    rpcs = discover_rpcs()
    internal = {
        r.name
        for r in rpcs
        if r.method.GetOptions().Extensions[access_pb2.exposure] != access_pb2.EXPOSURE_PUBLIC
    }
    public = {r.name for r in rpcs} - internal
    assert len(public) == 31 and len(internal) == 11
    # Every RPC was called; internal ones only ever answered UNIMPLEMENTED, public ones never.
    assert set(report.by_rpc) == public | internal
    for (name, code), count in report.by_rpc_code.items():
        if name in internal:
            assert code == "UNIMPLEMENTED", (name, code, count)
        else:
            assert code != "UNIMPLEMENTED", (name, code, count, report.examples.get((name, code)))
    # Some public call of every kind got through and some were refused.
    assert {n for (n, code) in report.by_rpc_code if code == "OK"} & public
    assert report.by_code["UNAUTHENTICATED"] > 0 and report.by_code["OK"] > 0
    assert report.by_code["RESOURCE_EXHAUSTED"] > 0  # the 1 MiB values: over the edge's limit
    assert min(transport.by_protocol.values()) > EDGE_CALLS // 4
    assert report.calls == EDGE_CALLS and report.state_checks > EDGE_CALLS // 4
    findings = "\n".join(
        f"{f.kind} {f.rpc} [{f.credential}] {f.detail}\n  request: {f.request}"
        for f in report.findings
    )
    assert not report.findings, findings
    assert report.largest <= SIZE_BOUND
