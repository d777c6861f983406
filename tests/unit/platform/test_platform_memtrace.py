"""The shared memory-report switch (``electric_platform.memtrace``): per-service variable
names (the wallet's unchanged), off unless set, and a cheap counts-only mode (``…_FRAMES=0``)
that reports RSS and object counts without tracemalloc."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from electric_platform import memtrace
from electric_wallet import memtrace as wallet_memtrace


class Grown:
    """A type only this test makes (so its count is the test's)."""


def test_names_per_service_and_the_wallets_kept() -> None:
    assert memtrace.env_names("registration") == (
        "ELECTRIC_REGISTRATION_TRACEMALLOC",
        "ELECTRIC_REGISTRATION_TRACEMALLOC_SECONDS",
        "ELECTRIC_REGISTRATION_TRACEMALLOC_FRAMES",
        "ELECTRIC_REGISTRATION_TRACEMALLOC_DELAY",
    )
    assert wallet_memtrace.ENV_DIR == "ELECTRIC_WALLET_TRACEMALLOC"
    assert wallet_memtrace.ENV_SECONDS == "ELECTRIC_WALLET_TRACEMALLOC_SECONDS"
    assert wallet_memtrace.ENV_FRAMES == "ELECTRIC_WALLET_TRACEMALLOC_FRAMES"


def test_off_unless_this_services_variable_is_set(tmp_path: Path) -> None:
    assert memtrace.start_from_env("registration", {}) is None
    other = {"ELECTRIC_WALLET_TRACEMALLOC": str(tmp_path)}
    assert memtrace.start_from_env("registration", other) is None


def test_counts_only_mode_reports_growth_without_tracing(tmp_path: Path) -> None:
    env = {
        "ELECTRIC_REGISTRATION_TRACEMALLOC": str(tmp_path / "reports"),
        "ELECTRIC_REGISTRATION_TRACEMALLOC_FRAMES": "0",
        "ELECTRIC_REGISTRATION_TRACEMALLOC_SECONDS": "3600",  # the thread never reports here
    }
    reporter = memtrace.start_from_env("registration", env)
    assert reporter is not None and not tracemalloc.is_tracing()
    first = reporter.report()
    kept = [Grown() for _ in range(3000)]
    second = reporter.report()
    assert first.name == "0000.txt" and second.name == "0001.txt"
    text = second.read_text()
    assert text.startswith("t=") and "rss=" in text
    assert "allocation sites" not in text  # nothing traced
    previous = text.split("--- object counts grown since the previous report\n", 1)[1]
    assert any(line.split() == ["+3000", "Grown"] for line in previous.splitlines()), previous
    assert len(kept) == 3000
