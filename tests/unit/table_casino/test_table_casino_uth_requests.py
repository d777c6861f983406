"""The stored answers of a UTH pass's queued commands are read in ONE query
(``BetBatches._unanswered``), with the same answers as one read per command: answered OK,
a stored refusal raised again, a request id used for another rpc refused, the rest fresh.
And a bet whose intent the auto-void rule resolved (another instance's sweep) cannot be
placed: the placing transaction rolls back. SQLite and PostgreSQL."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import grpc
import pytest
from electric_eventlog import migrate, upgrade
from electric_table.casino import repo
from electric_table.casino.uth.batch import DECIDE, BetBatches, Queued
from electric_table.errors import service_error
from electric_table.store.tables import VERSIONS_DIR, metadata
from sqlalchemy import Engine, event


def test_a_pass_reads_its_stored_answers_in_one_query(backend_engine: Engine) -> None:
    engine = backend_engine
    migrate(engine)
    upgrade(
        engine,
        versions_dir=VERSIONS_DIR,
        version_table="alembic_version_table",
        target_metadata=metadata,
    )
    with engine.begin() as conn:
        repo.insert_request(conn, "p1", "r1", repo.RequestRow("PlaceBets", "uth-r-1", "OK", ""))
        refused = repo.RequestRow("PlaceBets", "uth-r-1", "FAILED_PRECONDITION", "betting closed")
        repo.insert_request(conn, "p2", "r2", refused)
        repo.insert_request(conn, "p3", "r3", repo.RequestRow(DECIDE, "uth-r-1", "OK", ""))
        # Another player's row with the same request id must not answer p4's.
        repo.insert_request(conn, "zz", "r4", repo.RequestRow("PlaceBets", "uth-r-1", "OK", ""))
    items = [Queued(f"p{n}", "ante", 100, f"r{n}") for n in range(1, 6)]
    batches = BetBatches(SimpleNamespace(engine=engine))  # type: ignore[arg-type]
    selects: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "casino_requests" in statement:
            selects.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        fresh = batches._unanswered(items)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(selects) == 1
    assert [i.player for i in fresh] == ["p4", "p5"]
    p1, p2, p3 = items[:3]
    assert p1.done and p1.error is None
    assert p2.error is not None
    assert service_error(p2.error).code is grpc.StatusCode.FAILED_PRECONDITION
    assert str(p2.error) == "betting closed"
    assert p3.error is not None
    assert service_error(p3.error).code is grpc.StatusCode.INVALID_ARGUMENT
    assert not any(i.done for i in fresh)


def test_a_bet_whose_intent_was_resolved_cannot_be_placed(backend_engine: Engine) -> None:
    engine = backend_engine
    migrate(engine)
    upgrade(
        engine,
        versions_dir=VERSIONS_DIR,
        version_table="alembic_version_table",
        target_metadata=metadata,
    )
    live = repo.BetRow("r-1:ante", "r-1", "ann", "ante", 100, "", False)
    swept = repo.BetRow("r-1:flop", "r-1", "ann", "flop", 200, "", False)
    with engine.begin() as conn:
        repo.record_intent(conn, live)
        repo.record_intent(conn, swept)
        repo.owe(conn, {swept.bet_id: repo.VOID})  # the auto-void rule resolved it
    with pytest.raises(repo.IntentResolved), engine.begin() as conn:
        repo.mark_placed(conn, [live.bet_id, swept.bet_id])
    with engine.connect() as conn:  # rolled back: the live intent is still an intent
        ops = {b.bet_id: b.owed_op for b in repo.bets(conn, "r-1")}
    assert ops == {live.bet_id: repo.INTENT, swept.bet_id: repo.VOID}
    with engine.begin() as conn:
        repo.mark_placed(conn, [live.bet_id])
    with engine.connect() as conn:
        assert {b.bet_id: b.owed_op for b in repo.bets(conn, "r-1")}[live.bet_id] == ""
