"""The API fuzz test, CI size: a seeded sample of generated requests for every RPC of every
service, against the four real services in this process (tests/support/fuzz_api.py).

No answer is UNKNOWN or INTERNAL, every answer stays under the size bound, and a rejected call
changes no state. ``make fuzz N=50000 SEED=…`` runs the same harness at full size.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import grpc
import pytest
from google.protobuf.message import Message

from tests.support.fuzz_api import (
    SIZE_BOUND,
    Credential,
    FuzzRunner,
    Outcome,
    StateProbe,
    mutating,
    seed_platform,
)
from tests.support.fuzz_values import Known, Rpc, discover_rpcs
from tests.support.platform_kit import Platform, embedded_platform

pytestmark = pytest.mark.timeout(300)

#: Calls of the CI sample, and its seed (fixed: a failure is reproducible with make fuzz).
SAMPLE_CALLS = 1500
SAMPLE_SEED = 20261201


async def test_fuzzed_requests_for_every_rpc_are_refused_cleanly(tmp_path: Path) -> None:
    async with embedded_platform(tmp_path) as platform:
        known, seated = await seed_platform(platform, SAMPLE_SEED)
        runner = FuzzRunner(platform, known, seated, seed=SAMPLE_SEED)
        try:
            report = await runner.run(SAMPLE_CALLS)
        finally:
            runner.close()
    print("\n" + report.table())
    # Every RPC of every service was called, with valid and invalid tokens alike.
    assert set(report.by_rpc) == {rpc.name for rpc in discover_rpcs()}
    assert report.calls == SAMPLE_CALLS
    assert report.by_code["UNAUTHENTICATED"] > 0 and report.by_code["OK"] > 0
    assert report.huge_calls > 0 and report.state_checks > SAMPLE_CALLS // 4
    findings = "\n".join(
        f"{f.kind} {f.rpc} [{f.credential}] {f.detail}\n  request: {f.request}"
        for f in report.findings
    )
    assert not report.findings, findings
    assert report.largest <= SIZE_BOUND


def test_every_service_rpc_is_discovered_from_the_descriptors() -> None:
    names = {rpc.name for rpc in discover_rpcs()}
    assert {
        "RegistrationService/Register",
        "TableService/WatchTable",
        "WalletService/Adjust",
        "PayoutService/ListWinnings",
    } <= names
    assert len(names) >= 25


def test_the_state_probe_sees_any_committed_write(tmp_path: Path) -> None:
    url = f"sqlite+pysqlite:///{tmp_path}/x.db"
    with sqlite3.connect(tmp_path / "x.db") as conn:
        conn.execute("CREATE TABLE wallet_accounts (id TEXT PRIMARY KEY, posted INTEGER)")
        conn.execute("INSERT INTO wallet_accounts VALUES ('a', 1)")
    probe = StateProbe({"wallet": url})
    try:
        before, versions = probe.fingerprint(), probe.versions()
        assert probe.fingerprint() == before
        with sqlite3.connect(tmp_path / "x.db") as conn:
            conn.execute("UPDATE wallet_accounts SET posted = 2 WHERE id = 'a'")
        assert probe.versions() != versions
        assert probe.fingerprint() != before
    finally:
        probe.close()


async def test_the_harness_reports_what_it_must(tmp_path: Path) -> None:
    """The checks can fail: a refused call that writes, an INTERNAL, an oversized answer."""
    db = tmp_path / "wallet.db"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE wallet_accounts (id TEXT PRIMARY KEY, posted INTEGER)")
    fake = Platform(hosts={}, targets={}, db_urls={"wallet": f"sqlite+pysqlite:///{db}"})
    runner = FuzzRunner(fake, Known(), "nobody", seed=1)
    calls = 0

    async def answer(rpc: Rpc, request: Message, cred: Credential) -> Outcome:
        nonlocal calls
        calls += 1
        if calls == 5:  # a refused call that nevertheless moved money
            with sqlite3.connect(db) as conn:
                conn.execute(f"INSERT INTO wallet_accounts VALUES ('x{calls}', 1)")
            return Outcome(grpc.StatusCode.PERMISSION_DENIED, 10, "no")
        if calls == 7:
            return Outcome(grpc.StatusCode.INTERNAL, 10, "boom")
        if calls == 9:
            return Outcome(grpc.StatusCode.INVALID_ARGUMENT, SIZE_BOUND + 1, "x" * SIZE_BOUND)
        return Outcome(grpc.StatusCode.NOT_FOUND, 10, "no")

    runner._call = answer  # type: ignore[method-assign]
    runner.rpcs = [r for r in discover_rpcs() if mutating(r)]
    try:
        report = await runner.run(30)
    finally:
        runner.close()
    kinds = sorted(f.kind for f in report.findings)
    assert kinds == ["size", "state", "status"], report.findings
    state = next(f for f in report.findings if f.kind == "state")
    assert "wallet.wallet_accounts" in state.detail and "PERMISSION_DENIED" in state.request
