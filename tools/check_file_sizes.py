"""Fail when a non-generated Python file of the repository is over 600 lines.

Large files are split by concept (issue 10); this check keeps them that way. Generated code
is exempt: the protobuf modules under ``gen/`` and the Alembic migration scripts under
``*/migrations/versions/`` (written once, never edited). Run from anywhere:
``python tools/check_file_sizes.py [--max 600] [ROOT]``; exit status 1 lists the offenders.
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

MAX_LINES = 600
ROOT = Path(__file__).resolve().parents[1]
#: Path parts that mark generated or third-party code.
_SKIP_DIRS = frozenset({"gen", ".venv", ".tools", "node_modules", "build", "dist", "var"})


def _generated(rel: Path) -> bool:
    parts = rel.parts
    if _SKIP_DIRS.intersection(parts) or any(p.startswith(".") for p in parts[:-1]):
        return True
    return any(a == "migrations" and b == "versions" for a, b in itertools.pairwise(parts))


def python_files(root: Path) -> list[Path]:
    """The repository's Python files: tracked and untracked-but-not-ignored ones from git,
    else every ``*.py`` under ``root``."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        paths: Iterable[Path] = (root / p for p in listed)
    except (OSError, subprocess.CalledProcessError):
        paths = root.rglob("*.py")
    return sorted(p for p in paths if p.is_file() and not _generated(p.relative_to(root)))


def line_count(path: Path) -> int:
    with path.open("rb") as f:
        return sum(1 for _ in f)


def oversized(root: Path, limit: int) -> list[tuple[Path, int]]:
    """(file, lines) of every checked file longer than ``limit`` lines."""
    sizes = ((p, line_count(p)) for p in python_files(root))
    return [(p.relative_to(root), n) for p, n in sizes if n > limit]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", nargs="?", type=Path, default=ROOT)
    parser.add_argument("--max", type=int, default=MAX_LINES, help="most lines allowed")
    args = parser.parse_args(argv)
    found = oversized(args.root.resolve(), args.max)
    for path, lines in found:
        print(f"{path}: {lines} lines (> {args.max}); split it by concept", file=sys.stderr)
    if not found:
        print(f"file sizes: every non-generated Python file has at most {args.max} lines")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
