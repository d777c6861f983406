"""Run every benchmark module (or those named on the command line) and print a table."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

import bench
from bench import Row


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.2f}" if abs(v) < 1000 else f"{v:,.0f}"


def main(argv: list[str]) -> int:
    wanted = set(argv)
    names = sorted(
        m.name for m in pkgutil.iter_modules(bench.__path__) if m.name.startswith("bench_")
    )
    rows: list[Row] = []
    for name in names:
        if wanted and name.removeprefix("bench_") not in wanted and name not in wanted:
            continue
        t0 = time.perf_counter()
        module = importlib.import_module(f"bench.{name}")
        rows.extend(module.run())
        print(f"# {name} took {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    header = ("area", "benchmark", "value", "unit", "peer", "peer value", "ratio", "note")
    table = [header] + [
        (
            r.area,
            r.name,
            _fmt(r.value),
            r.unit,
            r.peer_name or "-",
            _fmt(r.peer_value),
            "-" if r.ratio is None else f"{r.ratio:.2f}x",
            r.note,
        )
        for r in rows
    ]
    widths = [max(len(str(line[i])) for line in table) for i in range(len(header))]
    for i, line in enumerate(table):
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
