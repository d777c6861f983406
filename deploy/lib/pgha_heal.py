"""The formation's healer: rebuilds a data node that cannot rejoin (deploy/postgres-ha.sh).

pg_auto_failover 2.0 has no remedy for one failure it meets after two failovers close
together (docs/chaos.md §7, the first stall): an old primary whose WAL went past the point
its successor was promoted at (commits no standby acknowledged, so no client was told they
were done) is restarted before it was rewound. Its PostgreSQL cannot start ("requested
timeline N does not contain minimum recovery point"), yet its keeper answers the monitor,
which waits for that node's report and, when a failover is under way, promotes nobody.

This watcher does what the operator did by hand: a node is rebuilt (dropped from the
monitor, copied anew from the primary: ``postgres-ha.sh rebuild N``, which keeps its old
data folder aside as ``diverged-<time>``, so nothing is deleted), one node at a time, when

* its keeper is alive (a node whose keeper is gone is a lost machine: the monitor already
  leaves it out, and it rejoins when its keeper is started again);
* it has been behind its assigned state for ``--after`` seconds (a rejoin by pg_rewind
  takes a few seconds); and
* another node, whose keeper runs, is on a later timeline: the formation failed over
  without it. What this
  node wrote past the point its timeline forked was never acknowledged: a commit returns
  only once a synchronous standby holds it, and the monitor promotes the standby with the
  most WAL (it has every standby report its position first, and fetches what the
  candidate lacks). Comparing positions across timelines says nothing (past the fork the
  WAL differs), and an old primary is usually a little ahead: records written after the
  last commit its standbys received. A node on the latest timeline is never dropped: a
  standby ahead of the others may be the one that acknowledged a commit.

Standard library only: it runs beside the formation, outside the project's virtualenv.
Started by ``postgres-ha.sh up`` (one per formation, ``heal.pid``), stopped by ``down``;
each decision is a line of ``heal.log``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

Node = Mapping[str, Any]


def lsn(text: str) -> int:
    """A PostgreSQL LSN ("16/B374D848") as a number."""
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


def number(node: Node) -> int:
    return int(str(node["nodename"]).removeprefix("node"))


def stuck(node: Node) -> bool:
    return bool(node["current_group_state"] != node["assigned_group_state"])


def left_behind(node: Node, nodes: Sequence[Node], keeper_alive: Callable[[int], bool]) -> bool:
    """Another node, whose keeper runs, is on a later timeline than ``node``: the formation
    failed over without it. (A later timeline held only by a dead node proves nothing the
    living can use: rebuilding from it is impossible, and the living may hold the data.)"""
    tli = int(node["reported_tli"])
    return any(
        int(o["reported_tli"]) > tli and keeper_alive(number(o))
        for o in nodes
        if number(o) != number(node)
    )


def to_rebuild(
    nodes: Sequence[Node],
    keeper_alive: Callable[[int], bool],
    stuck_since: dict[int, float],
    now: float,
    after: float,
) -> int | None:
    """The node to rebuild now, if any: one at a time, the state read again before the
    next. ``stuck_since`` (node → first time seen behind its assigned state) is updated in
    place: a node that caught up is forgotten."""
    for node in nodes:
        n = number(node)
        if stuck(node) and keeper_alive(n):
            stuck_since.setdefault(n, now)
        else:
            stuck_since.pop(n, None)
    due = [
        node
        for node in nodes
        if number(node) in stuck_since
        and now - stuck_since[number(node)] >= after
        and left_behind(node, nodes, keeper_alive)
    ]
    # The longest behind first: the old primary of the earliest failover.
    due.sort(key=lambda node: (int(node["reported_tli"]), stuck_since[number(node)]))
    return number(due[0]) if due else None


def look(
    ha: Callable[..., str],
    keeper_alive: Callable[[int], bool],
    say: Callable[[str], None],
    stuck_since: dict[int, float],
    after: float,
) -> None:
    """One look at the formation, and at most one rebuild."""
    try:
        nodes = json.loads(ha("state", timeout=30) or "[]")
    except (subprocess.SubprocessError, ValueError):
        return  # the monitor is restarting, or loaded: look again
    n = to_rebuild(nodes, keeper_alive, stuck_since, time.monotonic(), after)
    if n is None:
        return
    node = next(x for x in nodes if number(x) == n)
    others = ", ".join(
        f"node{number(o)} tli {o['reported_tli']} at {o['reported_lsn']}"
        f" ({o['current_group_state']})"
        for o in nodes
        if number(o) != n
    )
    say(
        f"rebuilding node {n}: {node['current_group_state']} (assigned"
        f" {node['assigned_group_state']}) for {time.monotonic() - stuck_since[n]:.0f} s"
        f" on timeline {node['reported_tli']} at {node['reported_lsn']}; others: {others}"
    )
    try:
        ha("rebuild", str(n), timeout=600)
        say(f"rebuilt node {n}")
    except subprocess.SubprocessError as exc:
        say(f"rebuild of node {n} failed: {exc}")
    stuck_since.pop(n, None)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--script", required=True, help="deploy/postgres-ha.sh")
    parser.add_argument("--dir", required=True, help="the formation's folder")
    parser.add_argument("--after", type=float, default=60.0, help="seconds behind")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between looks")
    args = parser.parse_args(argv)
    folder = Path(args.dir)

    def ha(*words: str, timeout: float) -> str:
        done = subprocess.run(
            ["bash", args.script, *words],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        )
        return done.stdout

    def keeper_alive(n: int) -> bool:
        try:
            os.kill(int((folder / f"node{n}" / "keeper.pid").read_text().split()[0]), 0)
        except (OSError, ValueError, IndexError):
            return False
        return True

    def say(line: str) -> None:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}", flush=True)

    stuck_since: dict[int, float] = {}
    say(f"watching {folder}: a node left behind on an older timeline {args.after:.0f} s is rebuilt")
    while (folder / "monitor").is_dir():
        try:
            look(ha, keeper_alive, say, stuck_since, args.after)
        except Exception as exc:  # a state it cannot read: say so, look again
            say(f"look failed: {exc!r}")
        time.sleep(args.every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
