"""A stored result keeps its TournamentFinished's correlation id (migration payout_0005), so
a result decided later (``Payouts.decide_pending``) records the tournament's chain."""

from __future__ import annotations

from datetime import UTC, datetime

from electric_eventlog import migrate, upgrade
from electric_payout.store import repo
from electric_payout.store.tables import VERSIONS_DIR, metadata
from sqlalchemy import Engine

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def test_a_result_keeps_its_correlation_id(backend_engine: Engine) -> None:
    engine = backend_engine
    migrate(engine)
    upgrade(
        engine,
        versions_dir=VERSIONS_DIR,
        version_table="alembic_version_payout",
        target_metadata=metadata,
    )
    with engine.begin() as conn:
        repo.add_result(
            conn, table_id="t-1", finished=b"f", source_event_id="ev-1", at=T0, correlation_id="c"
        )
        repo.add_result(conn, table_id="t-2", finished=b"f", source_event_id="ev-2", at=T0)
    with engine.begin() as conn:
        one = repo.lock_undecided_result(conn, "t-1")
        two = repo.lock_undecided_result(conn, "t-2")
    assert one is not None and (one.source_event_id, one.correlation_id) == ("ev-1", "c")
    assert two is not None and two.correlation_id == ""
