"""Behaviour kept (issue 25 item 7), the short CI version of ``make side-by-side``.

The same seeded tournaments, THB rounds and UTH rounds run on the base revision (a git
worktree made from this clone's history, its protos generated) and on this tree, each in a
process of its own; their published events, player views and audit reports must be
identical, and both trees must read the base's stores back the same way (docs/testing.md,
"Side by side"). A clone without the base revision FAILS: CI clones main's full history.
The second test injects a difference (one deck seed on the new side) and checks the run
reports it, with the first difference.
"""

from __future__ import annotations

import pytest

from tools.side_by_side import run

pytestmark = pytest.mark.e2e


def _run(
    *extra: str, tournaments: int = 2, thb: int = 6, uth: int = 3
) -> tuple[list[run.Row], str]:
    args = run.parser().parse_args(
        [
            f"--tournaments={tournaments}",
            "--thb-sets=1",
            f"--thb-rounds={thb}",
            "--uth-tables=1",
            f"--uth-rounds={uth}",
            *extra,
        ]
    )
    try:
        return run.side_by_side(args)
    except SystemExit as exc:  # the base revision is missing, or a worker failed
        pytest.fail(str(exc))


def test_the_base_and_this_tree_publish_show_and_audit_the_same() -> None:
    rows, report = _run()
    print(report)
    assert all(r.identical for r in rows), report
    played = {r.scenario: r.counts for r in rows}
    assert played["tournament-0"]["events"][0] > 100  # a whole tournament, not a stub
    assert played["uth-0"]["audit checks"][0] > 0
    assert len(rows) == 8  # 4 scenarios, each replayed from the base's stores


def test_an_injected_difference_is_reported_with_where_it_starts() -> None:
    rows, report = _run("--perturb", tournaments=1, thb=2, uth=1)
    assert not all(r.identical for r in rows)
    assert "tournament-0: published differ" in report
    assert "first difference at published[" in report
    assert "deck_commitment" in report
    assert "side by side: DIFFERENT" in report
