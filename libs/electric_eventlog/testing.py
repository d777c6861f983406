"""Reusable recorder test cases: run the SAME checks against any database backend.

Subclass :class:`RecorderCases` in a pytest module and set ``engine`` (an
:class:`~sqlalchemy.Engine` on a fresh, migrated database) before each test, e.g. from the
shared ``backend_engine`` fixture of tests/support/backends.py: every ``test_*`` method then
runs on SQLite and on PostgreSQL. Services reuse the helpers and that fixture for their own
stores.
"""

from __future__ import annotations

import random
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from electric.eventlog.v1.envelope_pb2 import Envelope
from google.protobuf import any_pb2, wrappers_pb2
from sqlalchemy import Engine, func, inspect, select, text, update

from . import schema
from .consumer import IdempotentConsumer
from .engine import read_only
from .errors import ConcurrencyError, StreamNotFoundError
from .migrate import (
    EVENTLOG_VERSION_TABLE,
    EVENTLOG_VERSIONS_DIR,
    downgrade,
    migrate,
    upgrade,
)
from .model import ANY, NO_STREAM, STREAM_EXISTS, NewEvent, Snapshot
from .outbox import unsent_count
from .replay import fold_stream
from .store import EventStore
from .verify import verify


def event(text_value: str) -> wrappers_pb2.StringValue:
    """A tiny protobuf event for tests."""
    return wrappers_pb2.StringValue(value=text_value)


@dataclass
class FollowResult:
    """What a reader following the global position saw while writers were running."""

    seen: list[int] = field(default_factory=list)
    seen_event_ids: list[str] = field(default_factory=list)
    committed_event_ids: set[str] = field(default_factory=set)
    order_violations: list[str] = field(default_factory=list)

    @property
    def missing(self) -> set[str]:
        """Committed events the reader never saw (a skipped late commit lands here)."""
        return self.committed_event_ids - set(self.seen_event_ids)

    @property
    def duplicates(self) -> int:
        """How many deliveries the reader saw more than once."""
        return len(self.seen_event_ids) - len(set(self.seen_event_ids))


def follow_while_writing(
    engine: Engine,
    store: EventStore,
    *,
    writers: int = 6,
    events_per_writer: int = 25,
    streams: int = 10,
    max_hold_seconds: float = 0.004,
    rollback_every: int = 7,
    seed: int = 1,
) -> FollowResult:
    """Concurrent writers on many streams, one reader following ``read_all``.

    Each writer appends in its own transaction and then HOLDS it open for a random delay
    after its positions were allocated, so commits arrive late and out of allocation order
    unless the store serialises them; every ``rollback_every``-th transaction rolls back
    after allocating. The reader only moves forward (``after`` = last position seen): any
    event committing behind it would be missing at the end.
    """
    result = FollowResult()
    lock = threading.Lock()

    def write(worker: int) -> None:
        rng = random.Random(seed * 1000 + worker)
        for n in range(events_per_writer):
            stream = f"follow-{rng.randrange(streams)}"
            roll_back = rollback_every and (n % rollback_every == rollback_every - 1)
            try:
                with engine.begin() as conn:
                    envs = store.append(conn, stream, ANY, [event(f"w{worker}-{n}")])
                    time.sleep(rng.random() * max_hold_seconds)
                    if roll_back:
                        raise Rollback
            except (Rollback, ConcurrencyError):
                # ConcurrencyError only happens with a store that does not serialise
                # allocation (the unique (stream, version) backstop); such an event is simply
                # not committed.
                continue
            with lock:
                result.committed_event_ids.update(e.event_id for e in envs)

    return run_followed(engine, store, result, write, writers, reader_name="follower")


def run_followed(
    engine: Engine,
    store: EventStore,
    result: FollowResult,
    write: Callable[[int], None],
    writers: int,
    *,
    reader_name: str,
) -> FollowResult:
    """Run ``write(i)`` on ``writers`` threads while one reader follows ``read_all``
    into ``result``; return ``result`` once the writers are done and the reader caught up."""
    done = threading.Event()
    reader = threading.Thread(target=_follow, args=(engine, store, result, done), name=reader_name)
    reader.start()
    run_threads(write, writers)
    done.set()
    reader.join()
    return result


def _follow(engine: Engine, store: EventStore, result: FollowResult, done: threading.Event) -> None:
    """The reader: moves only forward (``after`` = last position seen) and records every
    gap in the global positions or in a stream's versions; stops once ``done`` is set and a
    read after that found nothing more."""
    after = 0
    last_version: dict[str, int] = {}
    while True:
        finished = done.is_set()
        with read_only(engine.connect()) as conn, conn.begin():
            batch = store.read_all(conn, after=after, limit=200)
        for env in batch:
            if env.global_position != after + 1:
                result.order_violations.append(
                    f"position {env.global_position} after {after} (gap)"
                )
            if env.stream_version != last_version.get(env.stream_id, 0) + 1:
                result.order_violations.append(
                    f"{env.stream_id} v{env.stream_version} after "
                    f"v{last_version.get(env.stream_id, 0)}"
                )
            last_version[env.stream_id] = env.stream_version
            after = env.global_position
            result.seen.append(env.global_position)
            result.seen_event_ids.append(env.event_id)
        if finished and not batch:
            return
        if not batch:
            time.sleep(0.001)


class Rollback(Exception):
    """Raised inside a test transaction to roll it back on purpose."""


class StoreCases:
    """The set-up every reusable case class shares: subclasses set ``engine`` (a fresh,
    migrated database) before each test and may name their own ``producer``."""

    engine: Engine
    producer = "testsvc"

    def make_store(self) -> EventStore:
        return EventStore(self.engine, producer=self.producer)


class RecorderCases(StoreCases):
    """Backend-independent event store cases. Subclasses set ``engine`` before each test."""

    def test_append_and_read_stream(self) -> None:
        store = self.make_store()
        stored = store.append_in_new_tx(
            "s-1", NO_STREAM, [event("a"), event("b"), event("c")], correlation_id="corr"
        )
        assert [e.stream_version for e in stored] == [1, 2, 3]
        assert [e.global_position for e in stored] == [1, 2, 3]
        assert stored[0].prev_hash == "" and stored[1].prev_hash == stored[0].hash
        with self.engine.connect() as conn:
            read = store.read_stream(conn, "s-1")
            assert [e.SerializeToString() for e in read] == [e.SerializeToString() for e in stored]
            assert [store.decode(e) for e in read] == [event("a"), event("b"), event("c")]
            assert read[0].event_type == "google.protobuf.StringValue"
            assert read[0].correlation_id == "corr" and read[0].producer == self.producer
            assert store.read_stream(conn, "s-1", from_version=2, to_version=2)[0] == read[1]
            assert store.current_version(conn, "s-1") == 3
            assert store.current_version(conn, "nope") == 0
            assert store.read_stream(conn, "nope") == []

    def test_expected_version_semantics(self) -> None:
        store = self.make_store()
        store.append_in_new_tx("s-2", 0, [event("a")])
        for expected in (NO_STREAM, 0, 2):
            try:
                store.append_in_new_tx("s-2", expected, [event("x")])
            except ConcurrencyError as exc:
                assert exc.stream_id == "s-2" and exc.actual == 1
            else:
                raise AssertionError(f"expected_version={expected} should conflict")
        try:
            store.append_in_new_tx("missing", STREAM_EXISTS, [event("x")])
        except StreamNotFoundError:
            pass
        else:
            raise AssertionError("STREAM_EXISTS on a missing stream should fail")
        assert store.append_in_new_tx("s-2", STREAM_EXISTS, [event("b")])[0].stream_version == 2
        assert store.append_in_new_tx("s-2", ANY, [event("c")])[0].stream_version == 3
        assert store.append_in_new_tx("s-2", 3, [event("d")])[0].stream_version == 4
        with self.engine.connect() as conn:
            # Failed appends allocated nothing that stuck: positions stay gap-free.
            assert [e.global_position for e in store.read_all(conn)] == [1, 2, 3, 4]

    def test_two_writers_race_exactly_one_wins(self) -> None:
        store = self.make_store()
        for round_no in range(10):
            stream = f"race-{round_no}"
            store.append_in_new_tx(stream, NO_STREAM, [event("created")])
            outcomes = self._race(store, stream)
            assert sorted(outcomes) == ["conflict", "won"], outcomes
            with self.engine.connect() as conn:
                assert store.current_version(conn, stream) == 2

    def _race(self, store: EventStore, stream: str) -> list[str]:
        """Two writers read the same version, then append at once; their outcomes."""
        barrier = threading.Barrier(2)
        outcomes: list[str] = []

        def writer(name: int) -> None:
            with self.engine.connect() as conn:
                version = store.current_version(conn, stream)
            barrier.wait()
            try:
                with self.engine.begin() as conn:
                    store.append(conn, stream, version, [event(str(name))])
                    time.sleep(0.01)  # hold the transaction so the other writer overlaps
                outcomes.append("won")
            except ConcurrencyError:
                outcomes.append("conflict")

        run_threads(writer, 2)
        return outcomes

    def test_reader_following_global_position_misses_nothing(self) -> None:
        store = self.make_store()
        result = follow_while_writing(self.engine, store)
        assert result.committed_event_ids, "writers committed nothing"
        assert not result.missing, f"reader skipped {len(result.missing)} late commits"
        assert result.duplicates == 0
        assert result.order_violations == []
        assert result.seen == list(range(1, len(result.seen) + 1))
        with self.engine.connect() as conn:
            assert verify(conn).ok

    def test_read_all_from_position(self) -> None:
        store = self.make_store()
        for i in range(5):
            store.append_in_new_tx(f"r-{i % 2}", ANY, [event(str(i)), event(f"{i}b")])
        with self.engine.connect() as conn:
            everything = store.read_all(conn)
            assert [e.global_position for e in everything] == list(range(1, 11))
            tail = store.read_all(conn, after=7, limit=2)
            assert [e.global_position for e in tail] == [8, 9]
            assert [e.global_position for e in store.iter_all(conn, after=3, batch_size=2)] == (
                list(range(4, 11))
            )
            assert store.last_position(conn) == 10

    def test_snapshots(self) -> None:
        store = self.make_store()
        store.append_in_new_tx("snap", NO_STREAM, [event("1"), event("2"), event("3")])
        with self.engine.begin() as conn:
            assert store.load_snapshot(conn, "snap") is None
            store.save_snapshot(conn, "snap", 2, wrappers_pb2.StringValue(value="12"))
            store.save_snapshot(conn, "snap", 2, wrappers_pb2.StringValue(value="ignored"))
        store.append_in_new_tx("snap", 3, [event("4")])
        with self.engine.connect() as conn:
            snapshot = store.load_snapshot(conn, "snap")
            assert snapshot is not None and snapshot.stream_version == 2
            assert snapshot.state == wrappers_pb2.StringValue(value="12")
            assert store.load_snapshot(conn, "snap", max_version=1) is None

            def apply(state: str, env: Envelope) -> str:
                payload = store.decode(env)
                assert isinstance(payload, wrappers_pb2.StringValue)
                return state + payload.value

            def from_snapshot(snap: Snapshot) -> str:
                assert isinstance(snap.state, wrappers_pb2.StringValue)
                return snap.state.value

            full, version = fold_stream(conn, store, "snap", "", apply)
            fast = fold_stream(conn, store, "snap", "", apply, from_snapshot=from_snapshot)
            assert (full, version) == ("1234", 4) == fast

    def test_append_joins_the_callers_transaction(self) -> None:
        store = self.make_store()
        with self.engine.begin() as conn:
            conn.execute(text("CREATE TABLE IF NOT EXISTS svc_projection (id TEXT PRIMARY KEY)"))
        try:
            with self.engine.begin() as conn:
                conn.execute(text("INSERT INTO svc_projection (id) VALUES ('p1')"))
                store.append(conn, "tx-1", NO_STREAM, [event("a")])
                raise Rollback
        except Rollback:
            pass
        with self.engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM svc_projection")).scalar() == 0
            assert store.read_stream(conn, "tx-1") == []
            assert unsent_count(conn) == 0
            assert store.last_position(conn) == 0
        with self.engine.begin() as conn:
            conn.execute(text("INSERT INTO svc_projection (id) VALUES ('p1')"))
            store.append(conn, "tx-1", NO_STREAM, [event("a")])
        with self.engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM svc_projection")).scalar() == 1
            assert unsent_count(conn) == 1 and unsent_count(conn, store.topic) == 1

    def test_unknown_type_passes_through_untouched(self) -> None:
        store = self.make_store()
        unknown = any_pb2.Any(
            type_url="type.googleapis.com/electric.future.v9.Thing", value=b"\x08\x2a\xff"
        )
        stored = store.append_in_new_tx(
            "u-1", NO_STREAM, [NewEvent(payload=unknown, event_id="e-unknown")]
        )
        with self.engine.connect() as conn:
            (read,) = store.read_stream(conn, "u-1")
        assert read.event_type == "electric.future.v9.Thing"
        assert read.payload == unknown and read.event_id == "e-unknown"
        assert store.decode(read) == unknown  # kept as Any, not dropped
        assert read.hash == stored[0].hash

    def test_tampered_payload_byte_is_reported_at_that_event(self) -> None:
        store = self.make_store()
        for i in range(3):
            store.append_in_new_tx(f"t-{i}", ANY, [event(f"{i}-{j}") for j in range(4)])
        with self.engine.connect() as conn:
            assert verify(conn).ok and verify(conn).events_checked == 12
            target = store.read_stream(conn, "t-1")[2]
        tampered = bytearray(target.payload.value)
        tampered[-1] ^= 0x01
        with self.engine.begin() as conn:
            conn.execute(
                update(schema.events)
                .where(schema.events.c.global_position == target.global_position)
                .values(payload=bytes(tampered))
            )
        with self.engine.connect() as conn:
            report = verify(conn)
            assert not report.ok and report.first_broken is not None
            assert (report.first_broken.stream_id, report.first_broken.stream_version) == ("t-1", 3)
            assert report.first_broken.global_position == target.global_position
            assert "hash mismatch" in report.first_broken.reason
            assert verify(conn, "t-0").ok and not verify(conn, "t-1").ok

    def test_migrations_match_schema_and_go_down_and_up(self) -> None:
        with self.engine.connect() as conn:
            context = MigrationContext.configure(conn)
            diffs = [
                diff
                for diff in compare_metadata(context, schema.metadata)
                if not (diff[0] == "remove_table" and diff[1].name.startswith("alembic_version"))
            ]
            assert diffs == [], f"migrations differ from schema.py: {diffs}"
            names = set(inspect(conn).get_table_names())
        assert set(schema.metadata.tables) | {EVENTLOG_VERSION_TABLE} <= names
        downgrade(
            self.engine,
            versions_dir=EVENTLOG_VERSIONS_DIR,
            version_table=EVENTLOG_VERSION_TABLE,
            revision="base",
        )
        with self.engine.connect() as conn:
            assert not set(schema.metadata.tables) & set(inspect(conn).get_table_names())
        migrate(self.engine)
        migrate(self.engine)  # idempotent
        assert self.make_store().append_in_new_tx("m", NO_STREAM, [event("x")])

    def test_service_migrations_keep_their_own_history(self) -> None:
        with tempfile.TemporaryDirectory() as versions:
            Path(versions, "svc_0001_things.py").write_text(SERVICE_REVISION)
            upgrade(self.engine, versions_dir=versions, version_table="alembic_version_svc")
            upgrade(self.engine, versions_dir=versions, version_table="alembic_version_svc")
        with self.engine.connect() as conn:
            assert "svc_things" in inspect(conn).get_table_names()
            svc = conn.execute(text("SELECT version_num FROM alembic_version_svc")).scalars()
            own = conn.execute(text(f"SELECT version_num FROM {EVENTLOG_VERSION_TABLE}"))
            assert list(svc) == ["svc_0001"]
            assert list(own.scalars()) == ["eventlog_0003"]

    def test_concurrent_duplicate_apply_has_one_effect(self) -> None:
        consumer = IdempotentConsumer("cases.dup")
        envelope = self.make_store().append_in_new_tx("d-1", NO_STREAM, [event("x")])[0]
        barrier = threading.Barrier(4)
        results: list[bool] = []

        def deliver(_: int) -> None:
            barrier.wait()
            with self.engine.begin() as conn:
                results.append(consumer.apply(conn, envelope))
                time.sleep(0.01)  # the effect would run here, inside the same transaction

        run_threads(deliver, 4)
        assert sorted(results) == [False, False, False, True], results

    def test_outbox_row_per_event(self) -> None:
        store = self.make_store()
        store.append_in_new_tx("o-1", NO_STREAM, [event("a"), event("b")])
        with self.engine.connect() as conn:
            topics = conn.execute(
                select(schema.outbox.c.topic, func.count()).group_by(schema.outbox.c.topic)
            ).all()
        assert [tuple(r) for r in topics] == [(f"electric.{self.producer}.events", 2)]


SERVICE_REVISION = """
revision = "svc_0001"
down_revision = None
branch_labels = None
depends_on = None

import sqlalchemy as sa
from alembic import op


def upgrade() -> None:
    op.create_table("svc_things", sa.Column("id", sa.Integer, primary_key=True))


def downgrade() -> None:
    op.drop_table("svc_things")
"""


def run_threads(target: Callable[[int], None], count: int) -> None:
    """Run ``target(i)`` on ``count`` threads and wait for all."""
    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
