"""CPU per Act by process (`bench/platform_cpu.py`): a process's CPU time is read from
``/proc/<pid>/stat`` and grows with the work it does (0 once it is gone), and the per-Act
figures are each group's CPU in the window over the Acts, with their sum."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import platform_cpu

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def test_a_busy_process_is_measured_and_a_gone_one_is_zero(tmp_path: Path) -> None:
    script = tmp_path / "busy.py"
    script.write_text(
        "import time\n"
        "end = time.process_time() + 0.6\n"
        "while time.process_time() < end:\n"
        "    pass\n"
        "input()\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE)
    try:
        before = platform_cpu.snapshot({"busy": proc.pid}, infra=False)
        deadline = time.monotonic() + 60
        while platform_cpu.snapshot({"busy": proc.pid}, infra=False)["busy"] < 0.5:
            assert time.monotonic() < deadline, "the busy process never used its CPU"
            time.sleep(0.05)
        after = platform_cpu.snapshot({"busy": proc.pid}, infra=False)
    finally:
        proc.communicate(b"\n", timeout=30)
    assert after["busy"] - before["busy"] > 0.3
    assert after["bots"] >= before["bots"] >= 0  # this process
    assert platform_cpu.snapshot({"gone": proc.pid}, infra=False)["gone"] == 0.0


def test_per_act_figures_and_their_sum() -> None:
    before = {"table": 1.0, "bots": 0.5}
    after = {"table": 1.4, "bots": 0.6}
    got = platform_cpu.per_act_ms(before, after, acts=100)
    assert got == pytest.approx({"table": 4.0, "bots": 1.0, "platform": 5.0})
    assert platform_cpu.per_act_ms(before, after, acts=0) == {}
    assert platform_cpu.parse_named("table=12,table-2=13") == {"table": 12, "table-2": 13}
    assert platform_cpu.parse_named("") == {}
