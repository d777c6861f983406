"""The table-status consumer holds each table's progress (``TableProgress``) back and writes
the latest once per table per batch (``progress.PendingProgress``): whatever the order of
progress summaries, eliminations and seatings in a transaction, the rows end exactly as when
every event is written as it comes (hypothesis, on SQLite)."""

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
        progress.set_progress(conn, {table_id: progress.TableProgress(0, (), 0, None, T0)})


def _rows(conn: Connection) -> list[tuple[object, ...]]:
    p = t.seat_progress
    seats = conn.execute(
        select(p.c.table_id, p.c.seat, p.c.stack, p.c.eliminated, p.c.finishing_place).order_by(
            p.c.table_id, p.c.seat
        )
    ).all()
    c = t.tables.c
    turns = conn.execute(
        select(c.table_id, c.turn_seat, c.turn_deadline, c.current_hand_number, c.status)
        .where(c.table_id.in_(TABLES))
        .order_by(c.table_id)
    ).all()
    return [tuple(r) for r in seats] + [tuple(r) for r in turns]


table_ids = st.sampled_from(TABLES)
seat_nos = st.sampled_from(SEATS)
summaries = st.builds(
    progress.TableProgress,
    hand_number=st.integers(0, 9),
    stacks=st.lists(st.integers(0, 900), min_size=3, max_size=3).map(
        lambda xs: tuple(zip(SEATS, xs, strict=True))
    ),
    turn_seat=st.sampled_from((0, *SEATS)),
    turn_deadline=st.one_of(st.none(), st.integers(0, 30).map(lambda s: T0 + timedelta(s))),
    at=st.just(T0),
)
ops = st.one_of(
    st.tuples(st.just("progress"), table_ids, summaries),
    st.tuples(st.just("out"), table_ids, seat_nos, st.integers(1, 3)),
    st.tuples(st.just("seat"), table_ids, seat_nos),
)


def _apply(conn: Connection, op: tuple[object, ...], pending: progress.PendingProgress | None):
    kind, table_id = op[0], op[1]
    assert isinstance(table_id, str)
    if kind == "progress":
        summary = op[2]
        assert isinstance(summary, progress.TableProgress)
        if pending is None:
            progress.set_progress(conn, {table_id: summary})
        else:
            pending.set(conn, table_id, summary)
    elif kind == "seat":
        seat = op[2]
        assert isinstance(seat, int)
        if pending is not None:
            pending.flush(conn, table_id)  # as the consumer does at a TableStarted
        progress.seat(conn, table_id, seat, f"{table_id}-p{seat}", 500, T0)
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
        stacks = ((1, 400), (2, 500), (3, 600))
        pending.set(conn, "ta", progress.TableProgress(3, stacks, 2, None, T0))
        conn.rollback()
    with engine.begin() as conn:
        pending.flush(conn)
        assert _rows(conn)[0][:3] == ("ta", 1, 500)
