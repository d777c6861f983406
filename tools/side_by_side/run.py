"""``make side-by-side BASE=<rev>``: the same seeded scenarios on a base tree and this one.

Four worker processes (``worker.py``), two at a time: the base tree's run and this tree's
run, then each tree's replay of the base's stores (as after a restart). Per scenario it
compares the published events, the player views (every answer and view during the run, and
the final views) and ``electric-audit``'s reports, and prints one row per scenario; then a
row per scenario for the replay ("old streams still replay": the rows each tree rebuilds
from the base's events equal the base's stored rows, and this tree's final views and audit
of the base's stores equal the base's own), then the first difference of each part that
differs.
Exit status 1 on any difference, 0 when everything is identical.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from tools.side_by_side import compare, trees

#: The last commit before issue 25's refactors (the apps move, 24150c4, is its child).
DEFAULT_BASE = "0b7b33e"


@dataclass
class Row:
    scenario: str
    parts: list[compare.Part]
    counts: dict[str, tuple[int, int]]
    raw_identical: int = 0

    @property
    def identical(self) -> bool:
        return all(p.identical for p in self.parts)


def worker_args(args: argparse.Namespace) -> list[str]:
    return [
        f"--seed={args.seed}",
        f"--tournaments={args.tournaments}",
        f"--thb-sets={args.thb_sets}",
        f"--thb-rounds={args.thb_rounds}",
        f"--uth-tables={args.uth_tables}",
        f"--uth-rounds={args.uth_rounds}",
    ]


def start_worker(tree: Path, mode: str, out: Path, extra: list[str]) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ELECTRIC_")}
    env["PYTHONPATH"] = trees.python_path(tree)
    command = [sys.executable, "-m", "tools.side_by_side.worker", mode, f"--out={out}"]
    return subprocess.Popen(
        [*command, "--roots", str(tree), *extra],
        env=env,
        cwd=out.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_all(workers: dict[str, subprocess.Popen[str]], bar: tqdm) -> None:
    """Progress from the workers' "<scenario> done" lines; fail with a worker's stderr."""
    lines: queue.Queue[str] = queue.Queue()
    errors: dict[str, str] = {}

    def read(name: str, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            lines.put(f"{name}: {line.strip()}")
        errors[name] = proc.stderr.read()

    readers = [threading.Thread(target=read, args=item) for item in workers.items()]
    for r in readers:
        r.start()
    while any(r.is_alive() for r in readers) or not lines.empty():
        try:
            bar.set_postfix_str(lines.get(timeout=0.2)[:40])
            bar.update(1)
        except queue.Empty:
            continue
    for name, proc in workers.items():
        if proc.wait() != 0:
            raise SystemExit(f"side-by-side: the {name} worker failed:\n{errors[name][-4000:]}")


def load(folder: Path, name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((folder / name / "result.json").read_text())
    return result


def compare_run(name: str, old_dir: Path, new_dir: Path) -> Row:
    old, new = load(old_dir, name), load(new_dir, name)
    a = compare.Normaliser(paths=(str(old_dir / name),))
    b = compare.Normaliser(paths=(str(new_dir / name),))
    parts = [
        compare.Part("published", a.published(old["published"]), b.published(new["published"])),
        compare.Part("views", a.walk(old["views"]), b.walk(new["views"])),
        compare.Part("final views", a.walk(old["final"]), b.walk(new["final"])),
        compare.Part(
            "audit",
            a.walk(compare.audit_lines(old["audits"])),
            b.walk(compare.audit_lines(new["audits"])),
        ),
    ]
    counts = {
        "events": (len(old["published"]), len(new["published"])),
        "views": (len(old["views"]) + len(old["final"]), len(new["views"]) + len(new["final"])),
        "audit checks": (compare.audit_checks(old["audits"]), compare.audit_checks(new["audits"])),
    }
    raw = sum(
        x["value"] == y["value"] for x, y in zip(old["published"], new["published"], strict=False)
    )
    return Row(name, parts, counts, raw)


def compare_replay(name: str, old_dir: Path, old_replay: Path, new_replay: Path) -> Row:
    """The base's stores read after a restart by each tree: the rows each rebuilds from
    the events against the stored rows (no difference), the final views and the audit."""
    old, a_run, b_run = load(old_dir, name), load(old_replay, name), load(new_replay, name)
    a = compare.Normaliser(paths=(str(old_replay / name),))
    b = compare.Normaliser(paths=(str(new_replay / name),))
    a.published(old["published"])  # the same ids, numbered in the same order
    b.published(old["published"])
    parts = [
        compare.Part("old tree's rows rebuilt by the old tree", [], a_run["row_differences"]),
        compare.Part("old tree's rows rebuilt by the new tree", [], b_run["row_differences"]),
        compare.Part("final views", a.walk(a_run["final"]), b.walk(b_run["final"])),
        compare.Part(
            "audit",
            a.walk(compare.audit_lines(a_run["audits"])),
            b.walk(compare.audit_lines(b_run["audits"])),
        ),
    ]
    counts = {
        "events": (len(old["published"]), len(old["published"])),
        "views": (len(a_run["final"]), len(b_run["final"])),
        "audit checks": (
            compare.audit_checks(a_run["audits"]),
            compare.audit_checks(b_run["audits"]),
        ),
    }
    return Row(f"{name} (old stores replayed)", parts, counts, len(old["published"]))


def table(rows: list[Row]) -> str:
    head = ["scenario", "events old/new", "views old/new", "audit checks old/new"]
    head += ["bytes identical", "identical"]
    body = [
        [
            r.scenario,
            *(f"{o}/{n}" for o, n in r.counts.values()),
            f"{r.raw_identical}/{r.counts['events'][0]}",
            "yes" if r.identical else "NO",
        ]
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]

    def line(cells: list[str]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    rule = "-+-".join("-" * w for w in widths)
    return "\n".join([line(head), rule, *(line(b) for b in body)])


def scenario_names(args: argparse.Namespace) -> list[str]:
    return (
        [f"tournament-{i}" for i in range(args.tournaments)]
        + [f"thb-{i}" for i in range(args.thb_sets)]
        + [f"uth-{i}" for i in range(args.uth_tables)]
    )


def side_by_side(args: argparse.Namespace) -> tuple[list[Row], str]:
    """Run both trees and the replay; the rows and the printed report."""
    names = scenario_names(args)
    out = Path(args.out or tempfile.mkdtemp(prefix="side-by-side-"))
    old_dir, new_dir = out / "old", out / "new"
    old_replay, new_replay = out / "old-replays-old", out / "new-replays-old"
    for d in (old_dir, new_dir, old_replay, new_replay):
        d.mkdir(parents=True, exist_ok=True)
    common = worker_args(args)
    with trees.base_tree(args.base, keep=args.keep) as base:
        bar = tqdm(total=4 * len(names), desc="side by side", unit="scenario", disable=None)
        perturbed = ["--perturb"] if args.perturb else []
        wait_all(
            {
                "old": start_worker(base, "run", old_dir, common),
                "new": start_worker(trees.HERE, "run", new_dir, common + perturbed),
            },
            bar,
        )
        replay = ["--source", str(old_dir), *common]
        wait_all(
            {
                "old replay": start_worker(base, "replay", old_replay, replay),
                "new replay": start_worker(trees.HERE, "replay", new_replay, replay),
            },
            bar,
        )
        bar.close()
    rows = [compare_run(n, old_dir, new_dir) for n in names]
    rows += [compare_replay(n, old_dir, old_replay, new_replay) for n in names]
    commit = trees.resolve(args.base)[:12]
    here = trees.git("rev-parse", "--short=12", "HEAD")
    dirty = (
        " + uncommitted changes"
        if trees.git("status", "--porcelain", "--untracked-files=no")
        else ""
    )
    report = [
        f"old: {args.base} ({commit})   new: {here}{dirty}   seed {args.seed}   results: {out}",
        "",
        table(rows),
    ]
    for row in rows:
        for part in row.parts:
            if not part.identical:
                report += ["", f"{row.scenario}: {part.name} differ", part.report()]
    verdict = "identical" if all(r.identical for r in rows) else "DIFFERENT"
    report += ["", f"side by side: {verdict}"]
    return rows, "\n".join(report)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.side_by_side", description=__doc__)
    p.add_argument("--base", default=DEFAULT_BASE, help=f"old tree (default {DEFAULT_BASE})")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--tournaments", type=int, default=10)
    p.add_argument("--thb-sets", type=int, default=3, help="THB tables (players take turns)")
    p.add_argument("--thb-rounds", type=int, default=30, help="rounds per THB table")
    p.add_argument("--uth-tables", type=int, default=3)
    p.add_argument("--uth-rounds", type=int, default=20, help="rounds per UTH table")
    p.add_argument("--out", help="keep the stores and results here (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep the base worktree")
    p.add_argument(
        "--perturb",
        action="store_true",
        help="inject a difference on the new side (a deck seed): shows the comparison fails",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    rows, report = side_by_side(args)
    print(report)
    return 0 if all(r.identical for r in rows) else 1
