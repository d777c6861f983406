"""deploy/lib/pgha_heal.py: which node of the PostgreSQL formation the healer rebuilds.

The states are pg_auto_failover's (``pg_autoctl show state --json``), as the chaos runs of
issue 28 met them (docs/chaos.md §7)."""

from __future__ import annotations

import runpy
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
