"""The table-status consumer holds stack moves and turns back and writes them once per
table per batch (``progress.PendingProgress``): whatever the order of moves, turns,
absolute stacks and eliminations in a transaction, the rows end exactly as when every
event is written as it comes (hypothesis, on SQLite)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from electric_eventlog import create_engine, migrate, upgrade
from electric_registration.store import progress, seating, tiers
from electric_registration.store import tables as t
from electric_registration.store.tables import VERSIONS_DIR, metadata
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, Engine, select

T0 = datetime(2026, 12, 2, 6, 0, tzinfo=UTC)
TABLES = ("ta", "tb")
SEATS = (1, 2, 3)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    path: Path = tmp_path_factory.mktemp("pending") / "reg.db"
    eng = create_engine(f"sqlite:///{path}")
    migrate(eng)
    upgrade(
        eng,
        versions_dir=VERSIONS_DIR,
        version_table="alembic_version_registration",
        target_metadata=metadata,
    )
    with eng.begin() as conn:
        tiers.sync(
            conn,
            [
                {
                    "tier_id": "bronze",
                    "name": "Bronze",
                    "buy_in_cents": 100,
                    "rake_cents": 10,
                    "seats": 3,
                    "starting_stack": 500,
                    "sort_order": 0,
                    "game_speed": "hyper_turbo",
                    "active": 1,
                }
            ],
        )
        for table_id in TABLES:
            seating.insert_table(
                conn,
                table_id=table_id,
                tier_id="bronze",
                table_name=table_id,
                seats=3,
                seed_hex="ab" * 32,
                commitment="c0" * 32,
                paytable_version="v1",
                stream_version=1,
                opened_at=T0,
            )
    yield eng
    eng.dispose()


def _reset(conn: Connection) -> None:
    for table_id in TABLES:
        for seat in SEATS:
            progress.seat(conn, table_id, seat, f"{table_id}-p{seat}", 500, T0)
        progress.set_turn(conn, table_id, 0, None)


def _rows(conn: Connection) -> list[tuple[object, ...]]:
    p = t.seat_progress
    seats = conn.execute(
        select(p.c.table_id, p.c.seat, p.c.stack, p.c.eliminated, p.c.finishing_place).order_by(
            p.c.table_id, p.c.seat
        )
    ).all()
    turns = conn.execute(
        select(t.tables.c.table_id, t.tables.c.turn_seat, t.tables.c.turn_deadline).order_by(
            t.tables.c.table_id
        )
    ).all()
    return [tuple(r) for r in seats] + [tuple(r) for r in turns]


table_ids = st.sampled_from(TABLES)
seat_nos = st.sampled_from(SEATS)
ops = st.one_of(
    st.tuples(st.just("move"), table_ids, seat_nos, st.integers(-300, 300)),
    st.tuples(st.just("turn"), table_ids, st.sampled_from((0, *SEATS)), st.integers(0, 30)),
    st.tuples(st.just("stacks"), table_ids, st.lists(st.integers(0, 900), min_size=3, max_size=3)),
    st.tuples(st.just("out"), table_ids, seat_nos, st.integers(1, 3)),
)


def _apply(conn: Connection, op: tuple[object, ...], pending: progress.PendingProgress | None):
    kind, table_id = op[0], op[1]
    assert isinstance(table_id, str)
    if kind == "move":
        seat, delta = op[2], op[3]
        assert isinstance(seat, int) and isinstance(delta, int)
        if pending is None:
            progress.add_stack(conn, table_id, seat, delta, T0)
        else:
            pending.add_stack(conn, table_id, seat, delta, T0)
    elif kind == "turn":
        seat, secs = op[2], op[3]
        assert isinstance(seat, int) and isinstance(secs, int)
        deadline = None if seat == 0 else T0 + timedelta(seconds=secs)
        if pending is None:
            progress.set_turn(conn, table_id, seat, deadline)
        else:
            pending.set_turn(conn, table_id, seat, deadline)
    elif kind == "stacks":
        stacks = op[2]
        assert isinstance(stacks, list)
        if pending is not None:
            pending.drop(conn, table_id)  # as the consumer does before absolute stacks
        progress.set_stacks(conn, table_id, list(zip(SEATS, stacks, strict=True)), T0)
    else:
        seat, place = op[2], op[3]
        assert isinstance(seat, int) and isinstance(place, int)
        if pending is not None:
            pending.flush(conn, table_id)  # as the consumer does before an elimination
        progress.eliminated(conn, table_id, seat, place, T0)


@settings(max_examples=150, deadline=None)
@given(st.lists(ops, max_size=40))
def test_held_back_writes_end_as_writes_in_order(engine: Engine, batch: list[tuple]) -> None:
    with engine.begin() as conn:
        _reset(conn)
        for op in batch:
            _apply(conn, op, None)
        expected = _rows(conn)
        conn.rollback()
    pending = progress.PendingProgress()
    with engine.begin() as conn:
        _reset(conn)
        for op in batch:
            _apply(conn, op, pending)
        pending.flush(conn)
        assert _rows(conn) == expected
        conn.rollback()


def test_a_new_transaction_forgets_what_a_rolled_back_one_held(engine: Engine) -> None:
    pending = progress.PendingProgress()
    with engine.begin() as conn:
        _reset(conn)
    with engine.connect() as conn:
        pending.add_stack(conn, "ta", 1, -100, T0)
        conn.rollback()
    with engine.begin() as conn:
        pending.flush(conn)
        assert _rows(conn)[0][:3] == ("ta", 1, 500)
