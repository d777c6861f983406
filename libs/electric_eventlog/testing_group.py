"""Reusable group-commit cases (:mod:`.group`), run on every backend like
:class:`~.testing.RecorderCases`: subclass :class:`GroupCommitCases` and set ``engine``
(a fresh, migrated database) before each test."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

from sqlalchemy import Connection, Engine, func, select

from . import schema
from .errors import ConcurrencyError, DuplicateEventError
from .model import ANY, NO_STREAM, NewEvent
from .store import EventStore
from .testing import FollowResult, Rollback, StoreCases, event, run_followed, run_threads
from .verify import verify


def hold_batch(store: EventStore, others: int, timeout: float = 10.0) -> Callable[[], None]:
    """A unit-of-work step that keeps its batch open until ``others`` more units have
    queued behind it (so they form the NEXT batch together)."""

    def wait() -> None:
        deadline = time.monotonic() + timeout
        while store.group.queued() < others:
            if time.monotonic() > deadline:
                raise AssertionError("the other units never queued")
            time.sleep(0.001)

    return wait


def follow_while_grouped(
    engine: Engine,
    store: EventStore,
    *,
    writers: int = 8,
    events_per_writer: int = 20,
    streams: int = 10,
    max_hold_seconds: float = 0.002,
    fail_every: int = 5,
    seed: int = 7,
) -> FollowResult:
    """:func:`~.testing.follow_while_writing` through group commit: each writer's append
    is a unit of work that holds its batch open for a random delay, and every
    ``fail_every``-th unit raises after appending (rolled back alone)."""
    result = FollowResult()
    lock = threading.Lock()

    def write(worker: int) -> None:
        rng = random.Random(seed * 1000 + worker)
        for n in range(events_per_writer):
            stream = f"gfollow-{rng.randrange(streams)}"
            fail = fail_every and n % fail_every == fail_every - 1
            hold = rng.random() * max_hold_seconds

            def work(
                conn: Connection,
                stream: str = stream,
                n: int = n,
                hold: float = hold,
                fail: bool = bool(fail),
            ) -> list[str]:
                envs = store.append(conn, stream, ANY, [event(f"w{worker}-{n}")])
                time.sleep(hold)
                if fail:
                    raise Rollback
                return [e.event_id for e in envs]

            try:
                ids = store.transact(work)
            except Rollback:
                continue
            with lock:
                result.committed_event_ids.update(ids)

    return run_followed(engine, store, result, write, writers, reader_name="group-follower")


class GroupCommitCases(StoreCases):
    """Backend-independent group-commit cases. Subclasses set ``engine`` before each test."""

    producer = "groupsvc"

    def test_idle_append_runs_alone(self) -> None:
        store = self.make_store()
        for i in range(3):
            store.append_in_new_tx(f"idle-{i}", NO_STREAM, [event("a")])
        assert (store.group.stats.batches, store.group.stats.largest_batch) == (3, 1)

    def test_conflict_in_the_middle_of_a_batch_fails_only_its_own_append(self) -> None:
        store = self.make_store()
        store.append_in_new_tx("mid-conflict", NO_STREAM, [event("created")])
        gate = hold_batch(store, others=5)
        outcomes: dict[str, str] = {}

        running = threading.Event()

        def first(conn: Connection) -> None:
            store.append(conn, "mid-first", NO_STREAM, [event("first")])
            running.set()
            gate()

        def unit(i: int) -> None:
            # Units 0..4: 0, 1, 3, 4 append to fresh streams and write a row of their own
            # (a snapshot); unit 2 writes its row too, then conflicts (version 0 != 1).
            name = f"mid-{i}"
            stream = "mid-conflict" if i == 2 else name

            def work(conn: Connection) -> None:
                store.save_snapshot(conn, name, 1, event(f"own row {i}"))
                store.append(conn, stream, NO_STREAM, [event(name)])

            while store.group.queued() < i:  # queue in order 0..4 behind the holder
                time.sleep(0.001)
            try:
                store.transact(work)
                outcomes[name] = "committed"
            except ConcurrencyError:
                outcomes[name] = "conflict"

        holder = threading.Thread(target=lambda: store.transact(first))
        holder.start()
        assert running.wait(10)  # the holder's batch is running: the units queue behind it
        run_threads(unit, 5)
        holder.join()
        assert outcomes == {
            "mid-0": "committed",
            "mid-1": "committed",
            "mid-2": "conflict",
            "mid-3": "committed",
            "mid-4": "committed",
        }
        assert store.group.stats.largest_batch == 5  # the five units shared one commit
        with self.engine.connect() as conn:
            everything = store.read_all(conn)
            assert [e.global_position for e in everything] == list(range(1, 7))
            assert [e.stream_id for e in everything[2:]] == ["mid-0", "mid-1", "mid-3", "mid-4"]
            assert store.current_version(conn, "mid-conflict") == 1
            snapshots = conn.execute(select(schema.snapshots.c.stream_id)).scalars().all()
            assert sorted(snapshots) == ["mid-0", "mid-1", "mid-3", "mid-4"]
            outbox = conn.execute(select(func.count()).select_from(schema.outbox)).scalar()
            assert outbox == 6
            assert verify(conn).ok

    def test_plain_appends_of_a_batch_conflict_alone(self) -> None:
        # append_in_new_tx units (PostgreSQL: written by ONE insert after a pre-check of
        # every expected version; SQLite: a savepoint each): the stale one fails alone.
        store = self.make_store()
        store.append_in_new_tx("plain-conflict", NO_STREAM, [event("created")])
        gate = hold_batch(store, others=6)
        running = threading.Event()
        outcomes: dict[int, str] = {}

        def first(conn: Connection) -> None:
            store.append(conn, "plain-first", NO_STREAM, [event("first")])
            running.set()
            gate()

        def unit(i: int) -> None:
            while store.group.queued() < i:
                time.sleep(0.001)
            stream, expected = (
                ("plain-conflict", 0)
                if i == 3
                else ("plain-shared", ANY)
                if i in (1, 4)
                else (f"plain-{i}", NO_STREAM)
            )
            try:
                envs = store.append_in_new_tx(stream, expected, [event(f"u{i}"), event(f"u{i}b")])
                outcomes[i] = f"v{envs[-1].stream_version}"
            except ConcurrencyError as exc:
                assert exc.actual == 1
                outcomes[i] = "conflict"

        holder = threading.Thread(target=lambda: store.transact(first))
        holder.start()
        assert running.wait(10)
        run_threads(unit, 6)
        holder.join()
        assert outcomes == {0: "v2", 1: "v2", 2: "v2", 3: "conflict", 4: "v4", 5: "v2"}
        assert store.group.stats.largest_batch == 6
        with self.engine.connect() as conn:
            everything = store.read_all(conn)
            assert [e.global_position for e in everything] == list(range(1, 13))
            assert store.current_version(conn, "plain-conflict") == 1
            shared = store.read_stream(conn, "plain-shared")
            assert [store.decode(e) for e in shared] == [
                event("u1"),
                event("u1b"),
                event("u4"),
                event("u4b"),
            ]
            assert verify(conn).ok

    def test_duplicate_event_id_in_a_batch_fails_alone(self) -> None:
        store = self.make_store()
        store.append_in_new_tx("dup-a", NO_STREAM, [NewEvent(event("a"), event_id="dup-1")])
        gate = hold_batch(store, others=3)
        running = threading.Event()
        outcomes: dict[int, str] = {}

        def first(conn: Connection) -> None:
            store.append(conn, "dup-first", NO_STREAM, [event("first")])
            running.set()
            gate()

        def unit(i: int) -> None:
            while store.group.queued() < i:
                time.sleep(0.001)
            new = NewEvent(event(f"u{i}"), event_id="dup-1" if i == 1 else f"fresh-{i}")
            try:
                store.append_in_new_tx(f"dup-{i}", NO_STREAM, [new])
                outcomes[i] = "ok"
            except DuplicateEventError:
                outcomes[i] = "duplicate"

        holder = threading.Thread(target=lambda: store.transact(first))
        holder.start()
        assert running.wait(10)
        run_threads(unit, 3)
        holder.join()
        assert outcomes == {0: "ok", 1: "duplicate", 2: "ok"}
        with self.engine.connect() as conn:
            positions = [e.global_position for e in store.read_all(conn)]
            assert positions == list(range(1, 5))
            assert verify(conn).ok

    def test_two_writers_race_through_group_commit_exactly_one_wins(self) -> None:
        store = self.make_store()
        for round_no in range(5):
            stream = f"grace-{round_no}"
            store.append_in_new_tx(stream, NO_STREAM, [event("created")])
            outcomes: list[str] = []

            def writer(name: int, stream: str = stream, outcomes: list[str] = outcomes) -> None:
                try:
                    store.append_in_new_tx(stream, 1, [event(str(name))])
                    outcomes.append("won")
                except ConcurrencyError:
                    outcomes.append("conflict")

            run_threads(writer, 2)
            assert sorted(outcomes) == ["conflict", "won"], outcomes
            with self.engine.connect() as conn:
                assert store.current_version(conn, stream) == 2

    def test_reader_following_grouped_writers_misses_nothing(self) -> None:
        store = self.make_store()
        result = follow_while_grouped(self.engine, store)
        assert result.committed_event_ids, "writers committed nothing"
        assert not result.missing, f"reader skipped {len(result.missing)} commits"
        assert result.duplicates == 0
        assert result.order_violations == []
        assert result.seen == list(range(1, len(result.seen) + 1))
        assert store.group.stats.largest_batch > 1, "no batch ever had two units"
        with self.engine.connect() as conn:
            assert verify(conn).ok

    def test_a_failed_batch_runs_its_untouched_units_again(self) -> None:
        # The executor of B's kind breaks the whole batch (as a lost connection would)
        # before A ran: B gets the error, A is queued again and commits in a later batch.
        store = self.make_store()

        class Boom:
            pass

        def explode(conn: Connection, items: list[object], commit: bool) -> list[object]:
            raise RuntimeError("boom")

        store.group.register(Boom, explode, min_units=1)
        gate = hold_batch(store, others=2)
        running = threading.Event()
        outcomes: dict[str, str] = {}

        def first(conn: Connection) -> None:
            running.set()
            gate()

        def unit(i: int) -> None:
            while store.group.queued() < i:
                time.sleep(0.001)
            try:
                if i == 0:
                    store.transact(lambda c: store.append(c, "again-a", NO_STREAM, [event("a")]))
                else:
                    store.transact(lambda c: None, bulk=Boom())
                outcomes[f"u{i}"] = "ok"
            except RuntimeError as exc:
                outcomes[f"u{i}"] = str(exc)

        holder = threading.Thread(target=lambda: store.transact(first))
        holder.start()
        assert running.wait(10)
        run_threads(unit, 2)
        holder.join()
        assert outcomes == {"u0": "ok", "u1": "boom"}
        with self.engine.connect() as conn:
            assert [e.stream_id for e in store.read_all(conn)] == ["again-a"]

    def test_unit_of_work_may_not_nest(self) -> None:
        store = self.make_store()

        def nested(conn: Connection) -> None:
            store.append_in_new_tx("nested", NO_STREAM, [event("x")])

        try:
            store.transact(nested)
        except RuntimeError:
            pass
        else:
            raise AssertionError("a nested transact must be refused")
        assert store.append_in_new_tx("after", NO_STREAM, [event("y")])[0].global_position == 1
