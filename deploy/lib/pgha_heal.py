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

It also keeps the timelines the monitor is told true. A keeper reports a primary's
timeline from its last checkpoint, and a node whose PostgreSQL is down from its control
file (a streaming standby's comes from its WAL receiver). The first checkpoint after a
promotion is a spread one, minutes long under load, and a standby's control file moves only
at its restartpoints: for that long a restarted node is reported on an older timeline than
it is on. The monitor held a recent primary for one of an older timeline that way (the
stopped hour of seed 37, docs/chaos.md §7), and both this healer and the fast-forward guard
of ``postgres-ha.sh`` (``patch_monitor``) read that timeline. So a running node whose last
checkpoint is on an older timeline than the one it is on is asked for a CHECKPOINT (a
restartpoint on a standby), primaries before standbys. And since a keeper can report a
timeline it read when it started, even then (the hour of seed 38: a primary on timeline 5,
restarted, reported 4), each node's control file timeline is read too, PostgreSQL up or
down, recorded in the monitor for the guard (``record-timelines``), and used here: a
node's timeline is the later of the two.

Standard library only: it runs beside the formation, outside the project's virtualenv.
Started by ``postgres-ha.sh up`` (one per formation, ``heal.pid``), stopped by ``down``;
each decision is a line of ``heal.log``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

Node = Mapping[str, Any]


def lsn(text: str) -> int:
    """A PostgreSQL LSN ("16/B374D848") as a number."""
    high, low = text.split("/")
    return (int(high, 16) << 32) + int(low, 16)


def number(node: Node) -> int:
    return int(str(node["nodename"]).removeprefix("node"))


def stuck(node: Node) -> bool:
    return bool(node["current_group_state"] != node["assigned_group_state"])


def timeline(node: Node, observed: Mapping[int, int]) -> int:
    """The later of the timeline the node's keeper reported and the one its control file
    showed (``observed``): both are lower bounds, and the keeper's can be one it read long
    before (a primary on timeline 5 for two minutes, restarted, reported 4)."""
    return max(int(node["reported_tli"]), observed.get(number(node), 0))


def left_behind(
    node: Node,
    nodes: Sequence[Node],
    keeper_alive: Callable[[int], bool],
    observed: Mapping[int, int],
) -> bool:
    """Another node, whose keeper runs, is on a later timeline than ``node``: the formation
    failed over without it. (A later timeline held only by a dead node proves nothing the
    living can use: rebuilding from it is impossible, and the living may hold the data.)"""
    tli = timeline(node, observed)
    return any(
        timeline(o, observed) > tli and keeper_alive(number(o))
        for o in nodes
        if number(o) != number(node)
    )


def to_rebuild(
    nodes: Sequence[Node],
    keeper_alive: Callable[[int], bool],
    stuck_since: dict[int, float],
    now: float,
    after: float,
    observed: Mapping[int, int] | None = None,
) -> int | None:
    """The node to rebuild now, if any: one at a time, the state read again before the
    next. ``stuck_since`` (node → first time seen behind its assigned state) is updated in
    place: a node that caught up is forgotten. ``observed``: node → its control file's
    timeline."""
    seen = observed or {}
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
        and left_behind(node, nodes, keeper_alive, seen)
    ]
    # The longest behind first: the old primary of the earliest failover.
    due.sort(key=lambda node: (timeline(node, seen), stuck_since[number(node)]))
    return number(due[0]) if due else None


class Timelines(NamedTuple):
    """One line of ``postgres-ha.sh timelines``."""

    node: int
    control: int  # its control file's timeline, PostgreSQL up or down
    in_recovery: bool | None  # None: it did not answer
    checkpoint: int | None  # its last checkpoint's timeline (what a primary's keeper reports)
    live: int | None  # the timeline it is on (current WAL file, or WAL receiver)


def timelines(text: str) -> list[Timelines]:
    """``postgres-ha.sh timelines`` read ("-": unknown); a line it cannot read is left out."""

    def value(word: str) -> int | None:
        return None if word == "-" else int(word)

    rows: list[Timelines] = []
    for line in text.splitlines():
        words = line.split()
        if len(words) != 5:
            continue
        try:
            in_recovery = None if words[2] == "-" else words[2] == "t"
            rows.append(
                Timelines(
                    int(words[0]), int(words[1]), in_recovery, value(words[3]), value(words[4])
                )
            )
        except ValueError:
            continue
    return rows


def to_checkpoint(
    rows: Sequence[Timelines],
    asked_at: dict[int, float],
    now: float,
    every: float = 10.0,
) -> list[int]:
    """The nodes whose last checkpoint is on an older timeline than the one they are on,
    each asked at most once per ``every`` s; ``asked_at`` is updated. Standbys only once
    no primary is: a standby's restartpoint can only be at a checkpoint it replayed, so
    asking it before the primary's is there would be an immediate restartpoint for nothing
    (an I/O burst on a loaded machine)."""
    stale = [
        (r.node, bool(r.in_recovery))
        for r in rows
        if r.live is not None and r.checkpoint is not None and r.live > r.checkpoint
    ]
    if any(not in_recovery for _, in_recovery in stale):
        stale = [(n, in_recovery) for n, in_recovery in stale if not in_recovery]
    due = [n for n, _ in stale if now - asked_at.get(n, -every) >= every]
    for n in due:
        asked_at[n] = now
    return sorted(due)


def keep_timelines_true(
    ha: Callable[..., str],
    say: Callable[[str], None],
    asked_at: dict[int, float],
    recorded: dict[int, int],
    now: Callable[[], float] = time.monotonic,
) -> dict[int, int]:
    """One look at the nodes' timelines: the checkpoints they need, and each node's control
    file timeline recorded in the monitor when it changed (``recorded``: what the monitor
    holds), where the fast-forward guard reads it. Returns node → control file timeline."""
    try:
        rows = timelines(ha("timelines", timeout=30))
    except subprocess.SubprocessError:
        return dict(recorded)  # a node frozen or restarting: look again
    for n in to_checkpoint(rows, asked_at, now()):
        row = next(r for r in rows if r.node == n)
        role = "standby" if row.in_recovery else "primary"
        try:
            ha("checkpoint", str(n), timeout=90)  # the statement's own limit is 60 s
            say(
                f"checkpoint on node {n} ({role}): its last checkpoint was on timeline"
                f" {row.checkpoint}, it is on {row.live}"
            )
        except subprocess.SubprocessError as exc:
            say(f"checkpoint on node {n} failed: {exc} {failure(exc)}".rstrip())
    observed = {r.node: r.control for r in rows}
    changed = {n: tli for n, tli in observed.items() if recorded.get(n) != tli}
    if changed:
        try:
            ha(
                "record-timelines",
                *(f"{n}:{tli}" for n, tli in sorted(changed.items())),
                timeout=30,
            )
            recorded.update(changed)
        except subprocess.SubprocessError as exc:
            say(f"recording timelines {changed} failed: {exc} {failure(exc)}".rstrip())
    return observed


def failure(exc: subprocess.SubprocessError) -> str:
    """What a failed command wrote on stderr."""
    return " / ".join(str(getattr(exc, "stderr", None) or "").split("\n")).strip(" /")


def look(
    ha: Callable[..., str],
    keeper_alive: Callable[[int], bool],
    say: Callable[[str], None],
    stuck_since: dict[int, float],
    after: float,
    observed: Mapping[int, int] | None = None,
    failed: dict[int, tuple[float, int]] | None = None,
    now: Callable[[], float] = time.monotonic,
) -> int | None:
    """One look at the formation, and at most one rebuild; returns the node it tried to
    rebuild. ``failed``: node → when its last rebuild failed, and how many failed. Such a
    node may be dropped from the monitor already, where no rule would see it again: it is
    rebuilt again (10 s later, then every 60 s from the third failure) until it is back,
    its keeper running, on the latest timeline."""
    seen = observed or {}
    retry = failed if failed is not None else {}
    try:
        nodes = json.loads(ha("state", timeout=30) or "[]")
    except (subprocess.SubprocessError, ValueError):
        return None  # the monitor is restarting, or loaded: look again
    for back in list(retry):
        present = [x for x in nodes if number(x) == back]
        if (
            present
            and keeper_alive(back)
            and not left_behind(present[0], nodes, keeper_alive, seen)
        ):
            say(f"node {back} is back after its failed rebuild")
            retry.pop(back)
    n = to_rebuild(nodes, keeper_alive, stuck_since, now(), after, seen)  # always: it times
    due = [x for x, (at, fails) in sorted(retry.items()) if now() - at >= (10 if fails < 3 else 60)]
    if due:
        say(f"rebuilding node {due[0]} again: {retry[due[0]][1]} rebuild(s) failed")
        stuck_since.pop(due[0], None)
        rebuild(ha, say, due[0], retry, now)
        return due[0]
    if n is None or n in retry:  # a failed one waits for its turn above
        return None
    node = next(x for x in nodes if number(x) == n)
    others = ", ".join(
        f"node{number(o)} {where(o, seen)} ({o['current_group_state']})"
        for o in nodes
        if number(o) != n
    )
    say(
        f"rebuilding node {n}: {node['current_group_state']} (assigned"
        f" {node['assigned_group_state']}) for {now() - stuck_since[n]:.0f} s"
        f" on {where(node, seen)}; others: {others}"
    )
    stuck_since.pop(n, None)
    rebuild(ha, say, n, retry, now)
    return n


def where(node: Node, observed: Mapping[int, int]) -> str:
    """A node's timeline as reported and as its control file showed, and its position."""
    return (
        f"tli {node['reported_tli']} (control {observed.get(number(node), '?')})"
        f" at {node['reported_lsn']}"
    )


def rebuild(
    ha: Callable[..., str],
    say: Callable[[str], None],
    n: int,
    failed: dict[int, tuple[float, int]],
    now: Callable[[], float],
) -> None:
    try:
        ha("rebuild", str(n), timeout=600)
        say(f"rebuilt node {n}")
        failed.pop(n, None)
    except subprocess.SubprocessError as exc:
        say(f"rebuild of node {n} failed: {exc} {failure(exc)}".rstrip())
        failed[n] = (now(), failed.get(n, (0.0, 0))[1] + 1)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--script", required=True, help="deploy/postgres-ha.sh")
    parser.add_argument("--dir", required=True, help="the formation's folder")
    parser.add_argument("--after", type=float, default=60.0, help="seconds behind")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between looks")
    args = parser.parse_args(argv)
    folder = Path(args.dir)

    running: list[subprocess.Popen[str]] = []

    def stop(signum: int, frame: object) -> None:
        for proc in running:  # `down`: a rebuild in progress ends with the healer
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)

    def ha(*words: str, timeout: float) -> str:
        # A group of its own, ended whole at the timeout: a rebuild's pg_basebackup must not
        # outlive it and race the next try (its keeper is in a session of its own).
        with subprocess.Popen(
            ["bash", args.script, *words],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as proc:
            running.append(proc)
            try:
                out, err = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
                raise
            finally:
                running.remove(proc)
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, words, out, err)
        return out

    def keeper_alive(n: int) -> bool:
        try:
            os.kill(int((folder / f"node{n}" / "keeper.pid").read_text().split()[0]), 0)
        except (OSError, ValueError, IndexError):
            return False
        return True

    def say(line: str) -> None:
        print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}", flush=True)

    stuck_since: dict[int, float] = {}
    asked_at: dict[int, float] = {}
    recorded: dict[int, int] = {}
    failed: dict[int, tuple[float, int]] = {}
    say(f"watching {folder}: a node left behind on an older timeline {args.after:.0f} s is rebuilt")
    while (folder / "monitor").is_dir():
        try:
            observed = keep_timelines_true(ha, say, asked_at, recorded)
            tried = look(ha, keeper_alive, say, stuck_since, args.after, observed, failed)
            if tried is not None:  # its observation was deleted: sent again next look
                recorded.pop(tried, None)
        except Exception as exc:  # a state it cannot read: say so, look again
            say(f"look failed: {exc!r}")
        time.sleep(args.every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
