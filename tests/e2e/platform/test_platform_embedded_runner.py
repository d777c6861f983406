"""`python -m electric_runner` (= `make run`) as a newcomer runs it: one process, SQLite under
a fresh var dir, no servers. It prints where each service listens, shows tournaments being
played within seconds, answers gRPC on the printed addresses, and exits 0 on SIGTERM.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

ROOT = Path(__file__).resolve().parents[3]
#: A newcomer sees tournaments finish within this many seconds of the start.
FIRST_FINISH_SECONDS = 90.0
ADDRESS = re.compile(r"^\s+(registration|table|wallet|payout)\s+grpc (127\.0\.0\.1:\d+)")
FINISHED = re.compile(r"finished (\d+)")
HANDS = re.compile(r"hands dealt (\d+)")
MINT = re.compile(r"python -m electric_platform\.token --key (\S+) --sub alice --role player")


def test_embedded_runner_plays_tournaments_and_stops_cleanly(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ELECTRIC_") and k not in ("DATABASE_URL", "KAFKA_BOOTSTRAP_SERVERS")
    }
    env["ELECTRIC_VAR_DIR"] = str(tmp_path / "var")
    proc = subprocess.Popen(
        [sys.executable, "-m", "electric_runner", "--free-ports", "--refresh", "0.5"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")))  # type: ignore[union-attr]
    reader.start()
    started = time.monotonic()
    try:
        addresses: dict[str, str] = {}
        finished = hands = 0
        while time.monotonic() - started < FIRST_FINISH_SECONDS and proc.poll() is None:
            for line in list(lines):
                if m := ADDRESS.match(line):
                    addresses[m.group(1)] = m.group(2)
                if "tournaments" in line and (f := FINISHED.search(line)):
                    finished = max(finished, int(f.group(1)))
                    hands = max(hands, int(HANDS.search(line).group(1)))  # type: ignore[union-attr]
            if finished >= 1:
                break
            time.sleep(0.5)
        output = "".join(lines)
        assert proc.poll() is None, output
        assert set(addresses) == {"registration", "table", "wallet", "payout"}, output
        # The run made its own keys (no shared development secret) and says how to mint.
        mint = MINT.search(output)
        assert mint is not None, output
        issuer_key = Path(mint.group(1))
        if not issuer_key.is_absolute():
            issuer_key = tmp_path / issuer_key
        assert issuer_key.parent == (tmp_path / "var" / "keys")
        assert (issuer_key.stat().st_mode & 0o077) == 0, "private keys are 0600"
        assert finished >= 1 and hands >= 1, output[-3000:]
        first_finish = time.monotonic() - started
        # The printed addresses serve: health, and the lobby with a development token.
        for target in addresses.values():
            with grpc.insecure_channel(target) as ch:
                health = health_pb2_grpc.HealthStub(ch).Check(
                    health_pb2.HealthCheckRequest(), timeout=5
                )
                assert health.status == health_pb2.HealthCheckResponse.SERVING
        minted = subprocess.run(
            [
                *(sys.executable, "-m", "electric_platform.token", "--key", str(issuer_key)),
                *("--sub", "newcomer", "--role", "player", "--ttl", "60"),
            ],
            capture_output=True,
            text=True,
            check=True,
            cwd=tmp_path,
        )
        token = minted.stdout.strip()
        with grpc.insecure_channel(addresses["registration"]) as ch:
            lobby = registration_pb2_grpc.RegistrationServiceStub(ch).ListLobby(
                registration_pb2.ListLobbyRequest(),
                metadata=(("authorization", f"Bearer {token}"),),
                timeout=5,
            )
        assert len(lobby.tiers) == 5
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0, "".join(lines)[-3000:]
        print(f"\nfirst tournament finished after {first_finish:.1f}s")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        reader.join(10)
    tail = "".join(lines)
    assert "stopped:" in tail
    # Each service kept its own SQLite file under the var dir.
    for name in ("registration", "table", "wallet", "payout"):
        assert (tmp_path / "var" / f"{name}.db").exists()
