"""The outbox relay in isolation, inside a busy service process (``python -m bench relay``).

What issue 16 saw on PostgreSQL + Kafka: TournamentFinished committed within ms, its record on
Kafka 9-34 s later, the relay running in the table process's event loop beside the game.
This bench reproduces that set-up without the rest of the platform: one process, one event
loop, the relay running to Kafka (a fresh database, a unique topic namespace) while

* ``writers`` coroutines append ``events_per_append`` events each through
  ``asyncio.to_thread(store.append_in_new_tx, ...)`` at ``rate`` events/s in total (like the
  table's gRPC handlers),
* the loop is kept busy ``busy`` of the time by a coroutine that holds it in slices of
  ``BUSY_SLICE_MS`` (views, gRPC, protobuf work of the service), and
* ``blocked`` default-executor threads are held by blocking calls (a writer waiting on a row
  lock, a watch waiting for a change: what the table service's threads do under load).

Figures: commit -> record on Kafka lag (the record's producer timestamp minus the wall time
the append returned) p50/p99, and the relay's maximum sustained rate (draining a backlog
under the same load). Where the relay's time goes: wall time per phase of its passes
(fetch, send + acks, mark; each including the wait for an executor thread) and, with
``BENCH_RELAY_PROFILE=1``, a cProfile of the loop thread.

Environment: ``BENCH_RELAY_RATE`` (events/s, default 400), ``BENCH_RELAY_SECONDS`` (8),
``BENCH_RELAY_BUSY`` (0.6), ``BENCH_RELAY_BLOCKED`` (6), ``DATABASE_URL``,
``KAFKA_BOOTSTRAP_SERVERS``.
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from electric_eventlog import ANY, EventStore, OutboxRelay, create_engine, migrate
from google.protobuf import wrappers_pb2

from bench import Row
from bench.bench_eventlog import _fresh_pg_database

AREA = "relay"
BUSY_SLICE_MS = 20.0
BACKLOG = 5_000


@dataclass
class Scenario:
    """One load on the relay's process (module doc)."""

    rate: float = float(os.environ.get("BENCH_RELAY_RATE", "400"))
    seconds: float = float(os.environ.get("BENCH_RELAY_SECONDS", "8"))
    busy: float = float(os.environ.get("BENCH_RELAY_BUSY", "0.6"))
    blocked: int = int(os.environ.get("BENCH_RELAY_BLOCKED", "6"))
    writers: int = 16
    events_per_append: int = 4


@dataclass
class Result:
    """Lag samples (ms) and the relay's phase times."""

    lags: list[float] = field(default_factory=list)
    expected: int = 0
    appended: int = 0
    drain_rate: float = 0.0
    phases: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    profile: str = ""

    def pct(self, q: float) -> float:
        ordered = sorted(self.lags)
        return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def _payload(i: int) -> wrappers_pb2.StringValue:
    return wrappers_pb2.StringValue(value=f"relay-bench-{i:08d}-" + "x" * 120)


def _timed(phases: dict[str, list[float]], name: str, fn: Any) -> Any:
    """``fn`` (sync or async) wrapped to record its wall time under ``phases[name]``."""
    if asyncio.iscoroutinefunction(fn):

        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                phases[name].append(time.perf_counter() - t0)

        return async_wrapper

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            phases[name].append(time.perf_counter() - t0)

    return wrapper


def _instrument(relay: OutboxRelay, phases: dict[str, list[float]]) -> None:
    """Time the relay's passes: the whole publish_once (thread waits included) and its
    database parts as run in the worker thread (so the difference is executor queueing)."""
    for name in ("_fetch", "_mark"):
        if hasattr(relay, name):
            setattr(relay, name, _timed(phases, f"{name[1:]} (in thread)", getattr(relay, name)))
    relay.publish_once = _timed(phases, "publish_once (wall)", relay.publish_once)  # type: ignore[method-assign]
    relay._send = _timed(phases, "send + acks", relay._send)  # type: ignore[method-assign]


async def _load(sc: Scenario, stop: asyncio.Event) -> list[asyncio.Task[None]]:
    """Start the loop hog and the blocked executor threads (module doc)."""

    async def hog() -> None:
        slice_s = BUSY_SLICE_MS / 1000
        idle = slice_s * (1 - sc.busy) / sc.busy if sc.busy > 0 else 0.0
        while not stop.is_set():
            end = time.perf_counter() + slice_s
            while time.perf_counter() < end:  # holds the loop, as CPU-bound service work does
                pass
            await asyncio.sleep(idle)

    async def blocker() -> None:
        while not stop.is_set():
            await asyncio.to_thread(time.sleep, 0.5)

    tasks = [asyncio.create_task(blocker()) for _ in range(sc.blocked)]
    if sc.busy > 0:
        tasks.append(asyncio.create_task(hog()))
    await asyncio.sleep(0.1)  # let the blockers take their threads
    return tasks


async def _scenario(url: str, bootstrap: str, sc: Scenario, relay_factory: RelayFactory) -> Result:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from electric_eventlog.kafka import KafkaBus, ensure_topics, topic_partitions

    namespace = f"benchrelay{uuid.uuid4().hex[:8]}"
    service = "relaybench"
    engine = create_engine(url)
    await asyncio.to_thread(migrate, engine)
    store = EventStore(engine, producer=service)
    await ensure_topics(bootstrap, [store.topic], with_dlq=False, namespace=namespace)
    bus = KafkaBus(bootstrap, client_id="bench-relay", namespace=namespace)
    await bus.start()
    result = Result()
    committed: dict[str, float] = {}
    stop = asyncio.Event()
    load: list[asyncio.Task[None]] = []
    physical = bus.kafka_name(store.topic)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None)
    await consumer.start()
    try:
        tps = [TopicPartition(physical, p) for p in await topic_partitions(bootstrap, physical)]
        consumer.assign(tps)
        await consumer.seek_to_end(*tps)
        for tp in tps:
            await consumer.position(tp)
        load = await _load(sc, stop)
        relay = relay_factory(engine, bus, store)
        _instrument(relay, result.phases)
        profiler = cProfile.Profile() if os.environ.get("BENCH_RELAY_PROFILE") else None
        if profiler is not None:
            profiler.enable()
        relay_stop = asyncio.Event()
        relay_task = asyncio.create_task(relay.run(relay_stop))
        per_writer = sc.rate / sc.writers / sc.events_per_append  # appends/s per writer
        rounds = max(1, int(sc.seconds * per_writer))
        result.expected = rounds * sc.writers * sc.events_per_append

        async def writer(w: int) -> None:
            start = time.perf_counter()
            for i in range(rounds):
                delay = start + i / per_writer - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                envs = await asyncio.to_thread(
                    store.append_in_new_tx,
                    f"table-{w}",
                    ANY,
                    [_payload(i * 10 + k) for k in range(sc.events_per_append)],
                )
                now = time.time()
                for env in envs:
                    committed[env.event_id] = now
                result.appended += len(envs)

        writers = asyncio.gather(*(writer(w) for w in range(sc.writers)))
        seen: dict[str, float] = {}
        deadline = time.monotonic() + sc.seconds + 60
        from electric.eventlog.v1.envelope_pb2 import Envelope

        while len(seen) < result.expected and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200)
            for records in batches.values():
                for record in records:
                    env = Envelope.FromString(record.value or b"")
                    seen.setdefault(env.event_id, record.timestamp / 1000)
        await writers
        relay_stop.set()
        await relay_task
        if profiler is not None:
            profiler.disable()
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(30)
            result.profile = out.getvalue()
        result.lags = [(t - committed[e]) * 1000 for e, t in seen.items() if e in committed]
        # Maximum sustained rate: a backlog drained under the same load.
        for b in range(BACKLOG // 100):
            await asyncio.to_thread(
                store.append_in_new_tx, f"backlog-{b % 20}", ANY, [_payload(i) for i in range(100)]
            )
        drainer = relay_factory(engine, bus, store)
        t0 = time.perf_counter()
        drained = await drainer.drain()
        result.drain_rate = drained / (time.perf_counter() - t0)
    finally:
        stop.set()
        for task in load:
            task.cancel()
        await asyncio.gather(*load, return_exceptions=True)
        await consumer.stop()
        await bus.stop()
        engine.dispose()
        from tests.support.kafka_topics import delete_topics

        await delete_topics(bootstrap, namespace)
    return result


RelayFactory = Callable[[Any, Any, EventStore], OutboxRelay]


def default_relay(engine: Any, bus: Any, store: EventStore) -> OutboxRelay:
    """The relay as a service opens it (``eventpath.open_event_path``): woken by the
    store's commits, its database work on its own thread."""
    relay = OutboxRelay(engine, bus, topic=store.topic)
    store.on_commit(relay.notify)
    return relay


class SharedExecutorRelay(OutboxRelay):
    """The relay before issue 16's fix, for the same-run comparison: its database work in
    the loop's shared default executor, and no wake-up on commit (poll only)."""

    async def _in_thread(self, fn: Callable[..., Any], *args: object) -> Any:
        return await asyncio.to_thread(fn, *args)


def shared_executor_relay(engine: Any, bus: Any, store: EventStore) -> OutboxRelay:
    """:class:`SharedExecutorRelay` as a service opened it before."""
    return SharedExecutorRelay(engine, bus, topic=store.topic)


def _rows(label: str, sc: Scenario, res: Result) -> list[Row]:
    note = (
        f"{label}: {len(res.lags)}/{res.expected} events at {sc.rate:.0f}/s for "
        f"{sc.seconds:.0f}s, loop busy {sc.busy:.0%}, {sc.blocked} blocked threads"
    )
    return [
        Row(AREA, "commit -> on Kafka p50", statistics.median(res.lags or [0.0]), "ms", note=note),
        Row(AREA, "commit -> on Kafka p99", res.pct(0.99), "ms", note=note),
        Row(AREA, "relay drain under that load", res.drain_rate, "events/s", note=label),
    ]


def _print_phases(label: str, res: Result) -> None:
    print(f"# relay phases ({label}):", file=sys.stderr)
    for name, times in sorted(res.phases.items()):
        if times:
            ms = sorted(t * 1000 for t in times)
            print(
                f"#   {name:24} n={len(ms):5}  total={sum(ms) / 1000:7.2f}s  "
                f"p50={statistics.median(ms):8.1f}ms  p99={ms[int(len(ms) * 0.99)]:8.1f}ms",
                file=sys.stderr,
            )
    if res.profile:
        print(res.profile, file=sys.stderr)


def measure(label: str, relay_factory: RelayFactory, sc: Scenario | None = None) -> list[Row]:
    """One scenario on a fresh database; rows, phases on stderr."""
    sc = sc or Scenario()
    bootstrap = os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or "127.0.0.1:9092"
    with _fresh_pg_database() as url:
        if url is None:
            return [Row(AREA, "relay", 0.0, "ms", note="PostgreSQL unreachable")]
        res = asyncio.run(_scenario(url, bootstrap, sc, relay_factory))
    _print_phases(label, res)
    return _rows(label, sc, res)


def run() -> list[Row]:
    """Before (shared executor, poll only) and after, same load, same run."""
    return [
        *measure("before: shared executor, poll", shared_executor_relay),
        *measure("after: own thread, woken by commit", default_relay),
    ]
