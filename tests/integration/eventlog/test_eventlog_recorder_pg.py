"""The proof that the recorder's follow test can fail on PostgreSQL: with a position
allocator that does NOT hold its lock until commit (what a plain sequence does), the same
reader misses late commits. (The recorder cases themselves run on PostgreSQL through the
shared ``backend`` fixture: tests/unit/eventlog/test_eventlog_recorder_backends.py.)
"""

from __future__ import annotations

import itertools
import threading

import pytest
from electric_eventlog import EventStore
from electric_eventlog.testing import follow_while_writing
from sqlalchemy import Connection, Engine

pytestmark = pytest.mark.integration


class _SequenceLikeStore(EventStore):
    """Allocates positions from a counter released at once, like ``nextval()`` would."""

    _counter = itertools.count(1)
    _lock = threading.Lock()

    @staticmethod
    def _allocate_positions(conn: Connection, count: int) -> int:
        with _SequenceLikeStore._lock:
            last = 0
            for _ in range(count):
                last = next(_SequenceLikeStore._counter)
            return last


def test_follow_check_catches_a_sequence_style_allocator(pg_engine: Engine) -> None:
    _SequenceLikeStore._counter = itertools.count(1)
    store = _SequenceLikeStore(pg_engine, producer="broken")
    result = follow_while_writing(
        pg_engine, store, writers=6, events_per_writer=30, max_hold_seconds=0.01, rollback_every=0
    )
    # Late commits behind the reader are missed, and the log shows gaps: exactly the bug
    # the head-row lock prevents (test_reader_following_global_position_misses_nothing).
    assert result.missing or result.order_violations
