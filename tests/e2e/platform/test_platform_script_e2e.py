"""`deploy/platform.sh` starts the four services as processes, two table instances and two of
each other service, on PostgreSQL and Kafka; bots play a tournament through the round-robin
targets it prints; `down` stops every process (issue 17 item 6, docs/scaling.md)."""

from __future__ import annotations

import contextlib
import os
import random
import re
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.support.infra import fresh_database

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "deploy" / "platform.sh"
SERVICES = ("registration", "table", "wallet", "payout")


def free_base() -> int:
    """A port base whose service ports (base + 1..4, + 10 for the second instances) are free."""
    for _ in range(50):
        # Below the ephemeral range (tests/support/ports.py): base + 14 < 32768.
        base = random.randrange(20_000, 32_000, 100)
        ports = [base + s + 10 * k for s in range(1, 5) for k in range(2)]
        with contextlib.ExitStack() as stack:
            try:
                for port in ports:
                    sock = stack.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return base
    raise AssertionError("no free port range")


def test_platform_script_runs_twins_that_play_a_tournament(
    tmp_path: Path, postgres_url: str, kafka_bootstrap: str
) -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    grpc_base, metrics_base = free_base(), free_base()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ELECTRIC_")}
    env.pop("DATABASE_URL", None)
    env.update(
        ELECTRIC_PLATFORM_VAR=str(tmp_path / "platform"),
        ELECTRIC_PLATFORM_GRPC_BASE=str(grpc_base),
        ELECTRIC_PLATFORM_METRICS_BASE=str(metrics_base),
        KAFKA_BOOTSTRAP_SERVERS=kafka_bootstrap,
        ELECTRIC_KAFKA_NAMESPACE=f"pscript{uuid.uuid4().hex[:8]}",
        ELECTRIC_TABLE_HAND_PAUSE_MS="0",
        PYTHON=sys.executable,
    )
    with contextlib.ExitStack() as stack:
        for service in SERVICES:
            url = stack.enter_context(fresh_database(postgres_url, prefix=f"pscript_{service}"))
            env[f"ELECTRIC_PLATFORM_{service.upper()}_DB_URL"] = url
        try:
            up = subprocess.run(
                ["bash", str(SCRIPT), "up", "2", "2"],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=True,
            ).stdout
            for service in SERVICES:
                for k in (1, 2):
                    assert f"{service}-{k}: pid" in up, up
            targets = dict(re.findall(r"^  (registration|table) (ipv4:\S+)$", up, re.M))
            wallet = f"ipv4:127.0.0.1:{grpc_base + 3},127.0.0.1:{grpc_base + 13}"
            assert targets["table"] == f"ipv4:127.0.0.1:{grpc_base + 2},127.0.0.1:{grpc_base + 12}"
            bots = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "electric_bots",
                    "--registration",
                    targets["registration"],
                    "--table",
                    targets["table"],
                    "--wallet",
                    wallet,
                    "--bots",
                    "3",
                    "--tournaments",
                    "1",
                    "--duration",
                    "240",
                    "--think",
                    "0",
                    "--key",
                    str(tmp_path / "platform" / "keys" / "issuer.jwk.json"),
                ],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            summary = bots.stdout.strip().splitlines()[-1] if bots.stdout.strip() else ""
            found = re.search(r"tables finished (\d+).*errors (\d+)", summary)
            assert found, f"{bots.stdout[-2000:]}\n{bots.stderr[-2000:]}"
            assert int(found.group(1)) >= 1 and int(found.group(2)) == 0, summary
            status = subprocess.run(
                ["bash", str(SCRIPT), "status"], env=env, capture_output=True, text=True
            )
            assert status.returncode == 0
            assert status.stdout.count(": running") == 8, status.stdout
        finally:
            subprocess.run(["bash", str(SCRIPT), "down"], env=env, timeout=120, check=True)
            logs = {
                p.name: p.read_text(errors="replace") for p in (tmp_path / "platform").glob("*.log")
            }
        status = subprocess.run(
            ["bash", str(SCRIPT), "status"], env=env, capture_output=True, text=True
        )
        assert status.returncode == 3 and ": running" not in status.stdout
        failed = [name for name, text in logs.items() if "start_failed" in text]
        assert not failed, "\n".join(logs[name][-3000:] for name in failed)
