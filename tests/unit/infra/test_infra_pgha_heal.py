"""deploy/lib/pgha_heal.py: which node of the PostgreSQL formation the healer rebuilds.

The states are pg_auto_failover's (``pg_autoctl show state --json``), as the chaos runs of
issue 28 met them (docs/chaos.md §7)."""

from __future__ import annotations

import json
import runpy
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

HEALER = Path(__file__).resolve().parents[3] / "deploy" / "lib" / "pgha_heal.py"
AFTER = 60.0


@pytest.fixture(scope="module")
def to_rebuild() -> Callable[..., int | None]:
    return runpy.run_path(str(HEALER))["to_rebuild"]  # type: ignore[no-any-return]


def node(n: int, current: str, assigned: str, tli: int, at: str) -> dict[str, Any]:
    return {
        "nodename": f"node{n}",
        "current_group_state": current,
        "assigned_group_state": assigned,
        "reported_tli": tli,
        "reported_lsn": at,
    }


# The first stall: node 2, an old primary restarted before it was rewound (its PostgreSQL
# cannot start, its keeper answers), and a failover under way that waits for its report.
STALL = [
    node(1, "report_lsn", "report_lsn", 3, "0/9A00000"),
    node(2, "catchingup", "report_lsn", 2, "0/90A47B0"),
    node(3, "primary", "draining", 3, "0/9B00000"),
]


def _decide(
    to_rebuild: Callable[..., int | None],
    nodes: list[dict[str, Any]],
    seconds: float,
    alive: Callable[[int], bool] = lambda n: True,
) -> int | None:
    since: dict[int, float] = {}
    to_rebuild(nodes, alive, since, 1000.0, AFTER)  # first seen behind
    return to_rebuild(nodes, alive, since, 1000.0 + seconds, AFTER)


def test_a_diverged_old_primary_behind_a_later_timeline_is_rebuilt(
    to_rebuild: Callable[..., int | None],
) -> None:
    assert _decide(to_rebuild, STALL, AFTER) == 2


def test_nothing_is_rebuilt_before_the_node_was_behind_for_the_whole_wait(
    to_rebuild: Callable[..., int | None],
) -> None:
    assert _decide(to_rebuild, STALL, AFTER - 1) is None


def test_a_node_whose_keeper_is_gone_is_left_to_rejoin(
    to_rebuild: Callable[..., int | None],
) -> None:
    # Node 3, the killed primary, is behind its assigned state too; with its keeper gone
    # it is a lost machine, not a stuck one. Node 2's keeper gone as well: nothing.
    assert _decide(to_rebuild, STALL, 600, alive=lambda n: n != 2) is None


def test_an_old_primary_a_little_ahead_of_its_successor_is_rebuilt_too(
    to_rebuild: Callable[..., int | None],
) -> None:
    # The usual case on a quiet formation: the killed primary had written a few records
    # past the last commit its standbys received; across timelines the positions say
    # nothing (the WAL past the fork differs). Its data is kept aside, not deleted.
    ahead = [
        node(1, "primary", "primary", 3, "0/445F5B8"),
        node(2, "demoted", "catchingup", 2, "0/4460000"),
        node(3, "secondary", "secondary", 3, "0/445F5B8"),
    ]
    assert _decide(to_rebuild, ahead, AFTER) == 2


def test_a_node_on_the_latest_timeline_is_never_dropped(
    to_rebuild: Callable[..., int | None],
) -> None:
    # The second stall's shape: a node behind its assigned state, ahead of the others on
    # the same timeline. It may be the one standby that acknowledged a commit.
    same_timeline = [
        node(1, "report_lsn", "report_lsn", 3, "0/9A00000"),
        node(2, "report_lsn", "fast_forward", 3, "0/9C00000"),
        node(3, "primary", "draining", 3, "0/9B00000"),
    ]
    assert _decide(to_rebuild, same_timeline, 600) is None


def test_a_node_that_caught_up_starts_its_wait_again(
    to_rebuild: Callable[..., int | None],
) -> None:
    since: dict[int, float] = {}

    def alive(n: int) -> bool:
        return True

    assert to_rebuild(STALL, alive, since, 0.0, AFTER) is None
    whole = [
        node(1, "primary", "primary", 3, "0/9A00000"),
        node(2, "secondary", "secondary", 3, "0/9A00000"),
        node(3, "secondary", "secondary", 3, "0/9A00000"),
    ]
    assert to_rebuild(whole, alive, since, 50.0, AFTER) is None
    assert since == {}
    assert to_rebuild(STALL, alive, since, 100.0, AFTER) is None  # behind again since 100
    assert to_rebuild(STALL, alive, since, 160.0, AFTER) == 2


def test_a_later_timeline_held_only_by_a_dead_node_rebuilds_nobody(
    to_rebuild: Callable[..., int | None],
) -> None:
    # Node 3 was promoted (timeline 3) and killed before node 2 followed it: nodes 1 and 2,
    # both behind on timeline 2, hold the only live data. Nothing is rebuilt from nothing.
    orphaned = [
        node(1, "catchingup", "report_lsn", 2, "0/9A00000"),
        node(2, "catchingup", "report_lsn", 2, "0/9B00000"),
        node(3, "primary", "draining", 3, "0/9C00000"),
    ]
    assert _decide(to_rebuild, orphaned, 600, alive=lambda n: n != 3) is None


def test_one_node_at_a_time_the_oldest_timeline_first(
    to_rebuild: Callable[..., int | None],
) -> None:
    two_behind = [
        node(1, "primary", "primary", 4, "0/9A00000"),
        node(2, "demoted", "catchingup", 3, "0/9900000"),
        node(3, "demoted", "catchingup", 2, "0/9800000"),
    ]
    assert _decide(to_rebuild, two_behind, 600) == 3


# `postgres-ha.sh timelines` just after node 2 was promoted to timeline 3 under load: its
# last checkpoint (what its keeper reports) still on 2, node 3 streaming timeline 3 from a
# restartpoint on 2, node 1 a standby not streaming (timeline unknown).
TIMELINES = "2 2 f 2 3\n3 2 t 2 3\n1 1 t 1 -\n"


def test_the_healer_reads_each_nodes_timelines() -> None:
    healer = runpy.run_path(str(HEALER))
    rows = healer["timelines"](TIMELINES + "4 3 - - -\nnot a line\n5 x t 1 1\n")
    assert [tuple(r) for r in rows] == [
        (2, 2, False, 2, 3),
        (3, 2, True, 2, 3),
        (1, 1, True, 1, None),
        (4, 3, None, None, None),  # its PostgreSQL down: the control file alone
    ]


def test_a_stale_primary_is_asked_first_then_its_standbys_and_not_again_at_once() -> None:
    healer = runpy.run_path(str(HEALER))
    rows = healer["timelines"](TIMELINES)
    asked_at: dict[int, float] = {}
    assert healer["to_checkpoint"](rows, asked_at, 100.0) == [2]  # the primary alone
    assert healer["to_checkpoint"](rows, asked_at, 105.0) == []  # asked 5 s ago
    assert healer["to_checkpoint"](rows, asked_at, 110.0) == [2]  # still stale: again
    primary_done = healer["timelines"]("2 3 f 3 3\n3 2 t 2 3\n1 1 t 1 -\n")
    assert healer["to_checkpoint"](primary_done, asked_at, 112.0) == [3]  # not 1: unknown
    fresh = healer["timelines"]("2 3 f 3 3\n3 3 t 3 3\n1 3 - - -\n")
    assert healer["to_checkpoint"](fresh, {}, 200.0) == []


def test_the_healer_checkpoints_records_and_says_what_failed() -> None:
    healer = runpy.run_path(str(HEALER))
    calls: list[tuple[str, ...]] = []
    said: list[str] = []
    answers = {"timelines": "2 2 f 2 3\n3 3 t 3 3\n", "record-timelines": ""}

    def ha(*words: str, timeout: float) -> str:
        calls.append(words)
        if words[0] == "checkpoint":
            raise subprocess.CalledProcessError(2, words, stderr="canceling statement\n")
        return answers[words[0]]

    asked_at: dict[int, float] = {}
    recorded: dict[int, int] = {3: 3}
    observed = healer["keep_timelines_true"](ha, said.append, asked_at, recorded, now=lambda: 50.0)
    assert observed == {2: 2, 3: 3}
    # node 3's is recorded already: node 2's alone is written
    assert calls == [("timelines",), ("checkpoint", "2"), ("record-timelines", "2:2")]
    assert recorded == {2: 2, 3: 3}
    assert said == [
        "checkpoint on node 2 failed: Command '('checkpoint', '2')' returned non-zero"
        " exit status 2. canceling statement"
    ]
    answers["timelines"] = "garbage"  # nothing it can read: nothing asked, nothing written
    calls.clear()
    healer["keep_timelines_true"](ha, said.append, asked_at, recorded, now=lambda: 70.0)
    assert calls == [("timelines",)] and len(said) == 1


# The hour of seed 38 (16:30:35): node 2, primary on timeline 5 for two minutes, stopped
# and restarted, then the failover candidate with the most WAL. Its keeper reported
# timeline 4 (read when the keeper started), its control file showed 5.
SEED_38 = [
    node(1, "report_lsn", "report_lsn", 5, "0/1E96C220"),
    node(2, "report_lsn", "fast_forward", 4, "0/1EA64F28"),
    node(3, "report_lsn", "report_lsn", 5, "0/1E96C220"),
]


def test_a_node_whose_control_file_is_on_the_latest_timeline_is_not_rebuilt(
    to_rebuild: Callable[..., int | None],
) -> None:
    stuck_since = {2: 0.0}
    # On the keeper's word alone it is left behind, and was rebuilt (the slow road).
    assert to_rebuild(SEED_38, lambda n: True, dict(stuck_since), 61.0, AFTER) == 2
    observed = {1: 5, 2: 5, 3: 5}
    assert to_rebuild(SEED_38, lambda n: True, stuck_since, 61.0, AFTER, observed) is None
    # An old primary that cannot start keeps its old timeline in its control file too.
    assert to_rebuild(SEED_38, lambda n: True, stuck_since, 61.0, AFTER, {2: 4}) == 2


def test_a_failed_rebuild_is_done_again_before_anything_else() -> None:
    """A rebuild drops the node from the monitor first: when it fails after that, no rule
    sees the node again (the first hour of seed 38 was left with two nodes so)."""
    healer = runpy.run_path(str(HEALER))
    calls: list[tuple[str, ...]] = []
    said: list[str] = []
    fail = [True]
    without_2 = [x for x in STALL if x["nodename"] != "node2"]

    def ha(*words: str, timeout: float) -> str:
        calls.append(words)
        if words[0] == "rebuild" and fail[0]:
            raise subprocess.CalledProcessError(3, words, stderr="create failed\nat step 2\n")
        return json.dumps(STALL if len(calls) == 1 else without_2) if words[0] == "state" else ""

    stuck_since = {2: 0.0}
    failed: dict[int, tuple[float, int]] = {}
    clock = [61.0]

    def look() -> None:
        healer["look"](
            ha, lambda n: True, said.append, stuck_since, AFTER, {}, failed, lambda: clock[0]
        )

    look()
    assert calls == [("state",), ("rebuild", "2")] and failed == {2: (61.0, 1)}
    clock[0] = 65.0  # too soon: nothing but a look
    look()
    assert calls[2:] == [("state",)]
    clock[0] = 71.0  # node 2 is still gone from the monitor: again, and it fails again
    look()
    assert calls[3:] == [("state",), ("rebuild", "2")] and failed == {2: (71.0, 2)}
    clock[0], fail[0] = 81.0, False
    look()
    assert calls[5:] == [("state",), ("rebuild", "2")] and failed == {}
    assert said[1:] == [
        "rebuild of node 2 failed: Command '('rebuild', '2')' returned non-zero exit status 3."
        " create failed / at step 2",
        "rebuilding node 2 again: 1 rebuild(s) failed",
        "rebuild of node 2 failed: Command '('rebuild', '2')' returned non-zero exit status 3."
        " create failed / at step 2",
        "rebuilding node 2 again: 2 rebuild(s) failed",
        "rebuilt node 2",
    ]


def test_a_node_back_on_the_latest_timeline_is_not_rebuilt_again() -> None:
    """Even while it still catches up: its rebuild failed after it registered (its keeper
    slow to start on a loaded machine), and it is rejoining by itself."""
    healer = runpy.run_path(str(HEALER))
    said: list[str] = []
    calls: list[tuple[str, ...]] = []
    back = [
        node(1, "primary", "primary", 3, "0/9A00000"),
        node(2, "catchingup", "secondary", 3, "0/9000000"),
    ]

    def ha(*words: str, timeout: float) -> str:
        calls.append(words)
        return json.dumps(back)

    failed = {2: (0.0, 1)}
    healer["look"](ha, lambda n: True, said.append, {}, AFTER, {}, failed, lambda: 100.0)
    assert failed == {} and calls == [("state",)]
    assert said == ["node 2 is back after its failed rebuild"]
    # Back, but behind on an older timeline: not done, rebuilt again when due.
    back[1] = node(2, "catchingup", "secondary", 2, "0/9000000")
    failed = {2: (0.0, 1)}
    healer["look"](ha, lambda n: True, said.append, {}, AFTER, {}, failed, lambda: 100.0)
    assert calls[-1] == ("rebuild", "2")
