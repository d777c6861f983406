"""The PostgreSQL fast path of ``EventStore.append`` (one pipelined round trip, hash chain
computed in SQL) against the Python definition of the hash and the generic path's errors.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from electric_eventlog import (
    ANY,
    NO_STREAM,
    DuplicateEventError,
    EventStore,
    NewEvent,
    verify,
)
from electric_eventlog.hashing import compute_hash
from electric_eventlog.testing import event
from google.protobuf import any_pb2
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

pytestmark = pytest.mark.integration


def test_fast_path_is_taken_and_sql_hashes_equal_python_hashes(pg_engine: Engine) -> None:
    store = EventStore(pg_engine, producer="fäst")
    with pg_engine.connect() as conn:
        assert store._pg_fast_path(conn)
    stream = "ströme-€-1"
    at = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    unknown = any_pb2.Any(type_url="type.example/unknown.Type", value=bytes(range(256)))
    batches = [
        [event("a")],
        [event("b" * 500), NewEvent(event("c"), occurred_at=at, causation_id="çause")],
        [NewEvent(unknown, event_id="fixed-id-1")] + [event(str(i)) for i in range(120)],
    ]
    stored = []
    for batch in batches:
        stored += store.append_in_new_tx(
            stream, ANY, batch, correlation_id="corr-ü", causation_id="cause"
        )
    assert [e.stream_version for e in stored] == list(range(1, len(stored) + 1))
    assert [e.global_position for e in stored] == list(range(1, len(stored) + 1))
    for previous, env in zip([None, *stored], stored, strict=False):
        assert env.hash == compute_hash(env)
        assert env.prev_hash == (previous.hash if previous else "")
    assert stored[2].causation_id == "çause" and stored[2].occurred_at.ToDatetime(UTC) == at
    with pg_engine.connect() as conn:
        read = store.read_stream(conn, stream)
        assert [e.SerializeToString() for e in read] == [e.SerializeToString() for e in stored]
        assert read[3].payload == unknown
        assert verify(conn).ok
        outbox = conn.execute(text("SELECT count(*) FROM eventlog_outbox")).scalar()
        assert outbox == len(stored)


def test_no_outbox_rows_without_topic(pg_engine: Engine) -> None:
    store = EventStore(pg_engine, producer="quiet", topic="")
    store.append_in_new_tx("q-1", NO_STREAM, [event("a"), event("b")])
    with pg_engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM eventlog_outbox")).scalar() == 0
        assert conn.execute(text("SELECT count(*) FROM eventlog_events")).scalar() == 2


def test_duplicate_event_id_is_typed(pg_engine: Engine) -> None:
    store = EventStore(pg_engine, producer="dup")
    store.append_in_new_tx("d-1", NO_STREAM, [NewEvent(event("a"), event_id="same")])
    with pytest.raises(DuplicateEventError):
        store.append_in_new_tx("d-2", NO_STREAM, [NewEvent(event("b"), event_id="same")])
    with pg_engine.connect() as conn:
        assert store.last_position(conn) == 1  # the failed append left no gap


def test_error_of_a_statement_queued_before_the_append_keeps_its_type(
    pg_engine: Engine,
) -> None:
    """A caller may pipeline its own write with the append (the wallet does): the write's
    error is raised by ``append`` as the SQLAlchemy error ``conn.execute`` would raise."""
    store = EventStore(pg_engine, producer="pipe")
    with pg_engine.begin() as conn:
        conn.execute(text("CREATE TABLE own (id int PRIMARY KEY)"))
        conn.execute(text("INSERT INTO own VALUES (1)"))
    with pytest.raises(IntegrityError), pg_engine.begin() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        with raw.pipeline():  # type: ignore[attr-defined]
            raw.cursor().execute("INSERT INTO own VALUES (1)")
            store.append(conn, "p-1", NO_STREAM, [event("a")])
    with pg_engine.connect() as conn:
        assert store.last_position(conn) == 0
