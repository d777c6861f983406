"""What a registration instance announces to its peers (``peer_wakeups._merged``): changes
that need a read are merged into one announcement when they come in a row, and a table's
move stays single and in place, since a move announced after a later change would move a
peer's bar back to an older turn."""

from __future__ import annotations

from electric_registration.notify import TableMoved
from electric_registration.peer_wakeups import _merged

MOVE = TableMoved("t", 1, ((1, 500),), 1, None)
LATER = TableMoved("t", 1, ((1, 480),), 2, None)


def test_reads_in_a_row_merge_and_moves_keep_their_place() -> None:
    queued = [(["a"], None), (["b"], None), (["a"], MOVE), (["c"], None), (["a"], LATER)]
    assert _merged(queued) == [
        (["a", "b"], None),
        (["a"], MOVE),
        (["c"], None),
        (["a"], LATER),
    ]
    assert _merged([(["a"], MOVE), (["a"], LATER)]) == [(["a"], MOVE), (["a"], LATER)]
    assert _merged([]) == []
