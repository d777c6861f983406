"""Imports that run back up inside a package: the stand-in for ``farm-studio look`` (not on
this machine), used for issue 25's figures.

``python tools/import_arrows.py electric_table`` (PYTHONPATH as for ``lint-imports``) reads
the import graph with grimp (the library import-linter uses) and groups the modules into
rooms: a package's direct sub-packages and modules (``casino``'s games get rooms of their
own). It prints the room-to-room imports that lie inside a cycle of rooms (an arrow back up)
and the module imports that close a cycle of modules.
"""

from __future__ import annotations

import argparse
from collections import Counter

import grimp


def room(module: str, package: str) -> str:
    parts = module.split(".")
    if len(parts) < 2:
        return package
    if parts[1] == "casino" and len(parts) > 2 and parts[2] in ("thb", "uth"):
        return f"casino.{parts[2]}"
    return parts[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("package")
    package = parser.parse_args().package
    graph = grimp.build_graph(package)
    edges: Counter[tuple[str, str]] = Counter()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            a, b = room(module, package), room(imported, package)
            if imported.startswith(package) and a != b:
                edges[(a, b)] += 1
    rooms = sorted({r for pair in edges for r in pair})
    reach: dict[str, set[str]] = {}
    for start in rooms:
        seen: set[str] = set()
        stack = [start]
        while stack:
            here = stack.pop()
            for a, b in edges:
                if a == here and b not in seen:
                    seen.add(b)
                    stack.append(b)
        reach[start] = seen
    back = sorted(pair for pair in edges if pair[0] in reach[pair[1]])
    print(
        f"rooms: {len(rooms)}; room-to-room imports: {sum(edges.values())}; inside a cycle "
        f"of rooms: {sum(edges[p] for p in back)} over {len(back)} room pairs"
    )
    for a, b in back:
        print(f"  {a} -> {b}: {edges[(a, b)]}")
    closing = sorted(
        (m, d)
        for m in graph.modules
        for d in graph.find_modules_directly_imported_by(m)
        if d.startswith(package) and d != m and graph.chain_exists(importer=d, imported=m)
    )
    print(f"module imports inside a cycle of modules: {len(closing)}")
    for m, d in closing:
        print(f"  {m} -> {d}")


if __name__ == "__main__":
    main()
