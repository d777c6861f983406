"""``python -m electric_bots`` as a process of its own plays the casino too (issue 28 item
6): with the embedded runner's options (``--thb-bots``, ``--uth-bots``) its THB and UTH bots
deal, bet, decide and settle rounds against the platform, beside its tournament bots (none
here: ``--bots 0``), and it exits 0 when its duration ends. Before, the separate-process
bots played no casino game, so the casino panels stayed empty."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest

from tests.support.auth import write_keys
from tests.support.platform_kit import embedded_platform

pytestmark = pytest.mark.timeout(300)

#: Short UTH windows (the table service reads them from its process environment).
WINDOWS = {
    "ELECTRIC_TABLE_UTH_GREEN_MS": "500",
    "ELECTRIC_TABLE_UTH_YELLOW_MS": "200",
    "ELECTRIC_TABLE_UTH_DECISION_MS": "800",
    "ELECTRIC_TABLE_UTH_PAUSE_MS": "200",
}


async def _run_bots(tmp_path: Path) -> tuple[int, str]:
    keys = write_keys(tmp_path / "keys")
    async with embedded_platform(tmp_path) as platform:
        t = platform.targets
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "electric_bots",
            "--registration", t["registration"], "--table", t["table"],
            "--wallet", t["wallet"], "--key", str(keys.issuer),
            "--bots", "0", "--thb-bots", "2", "--uth-bots", "2", "--duration", "25",
            "--prefix", "proc",
            env={**os.environ, "ELECTRIC_LOG_LEVEL": "ERROR"},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        out, _ = await asyncio.wait_for(proc.communicate(), timeout=240)
        assert proc.returncode is not None
        return proc.returncode, out.decode(errors="replace")


def test_the_separate_process_bots_play_thb_and_uth(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in WINDOWS.items():
        monkeypatch.setenv(key, value)
    code, out = asyncio.run(_run_bots(tmp_path))
    assert code == 0, out
    got = re.search(r"casino: THB rounds (\d+), UTH rounds (\d+), voided \d+, errors 0", out)
    assert got is not None, out
    thb, uth = int(got.group(1)), int(got.group(2))
    assert thb >= 1 and uth >= 1, out
