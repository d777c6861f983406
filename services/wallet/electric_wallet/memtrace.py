"""The wallet's memory-report switch: :mod:`electric_platform.memtrace` under the wallet's
names (``ELECTRIC_WALLET_TRACEMALLOC=<dir>``, ``…_SECONDS``, ``…_FRAMES``). Used by
``tools/soak/wallet_mem.py`` and docs/chaos.md ("The wallet's memory under sustained load").
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from electric_platform import memtrace
from electric_platform.memtrace import Reporter, object_counts, rss_mib

ENV_DIR, ENV_SECONDS, ENV_FRAMES, ENV_DELAY = memtrace.env_names("wallet")

__all__ = [
    "ENV_DELAY",
    "ENV_DIR",
    "ENV_FRAMES",
    "ENV_SECONDS",
    "Reporter",
    "object_counts",
    "rss_mib",
    "start_from_env",
]


def start_from_env(environ: Mapping[str, str] = os.environ) -> Reporter | None:
    """Start tracing and the reporting thread when ``ELECTRIC_WALLET_TRACEMALLOC`` is set."""
    return memtrace.start_from_env("wallet", environ)
