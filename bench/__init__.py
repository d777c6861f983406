"""Benchmarks. `python -m bench` runs every `bench/bench_*.py` module and prints one table.

Each module exposes ``run() -> list[Row]``. Speed targets live here, not in timed tests;
every figure is compared with its peer measured in the same run (this machine is noisy).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    """One benchmark line: what was measured, the figure, its unit, and an optional peer."""

    area: str
    name: str
    value: float
    unit: str
    peer_name: str = ""
    peer_value: float | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if self.peer_value in (None, 0):
            return None
        return self.value / self.peer_value  # type: ignore[operator]
