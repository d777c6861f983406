"""The wallet's memory-report switch (``ELECTRIC_WALLET_TRACEMALLOC``, issue 18): off unless
set; when on, each report after the first names the allocation sites that grew."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from electric_wallet.memtrace import Reporter, start_from_env


def test_off_unless_set() -> None:
    assert start_from_env({}) is None


def test_report_names_the_growing_site(tmp_path: Path) -> None:
    tracemalloc.start(4)
    try:
        reporter = Reporter(tmp_path)
        first = reporter.report()
        kept = [bytearray(1000) for _ in range(2000)]  # ~2 MB held at this line
        second = reporter.report()
    finally:
        tracemalloc.stop()
    assert first.read_text().startswith("t=") and "rss=" in first.read_text()
    text = second.read_text()
    top = text.split("--- allocation sites grown since the first report\n", 1)[1].splitlines()
    assert top[0].split()[0].startswith("+")  # the site that grew most comes first: ours
    assert any("test_wallet_memtrace.py" in line for line in top[1:9]), top[:9]
    assert len(kept) == 2000
