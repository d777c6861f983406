"""Live tables: the tournament aggregate in memory, its event stream, its real-time driver.

* One `TableRuntime` per running table, owned by the `TableManager` (single instance owns
  every table; DESIGN §9 partition ownership is not implemented yet).
* Every input — player commands and the driver's ``Tick`` / ``DealHand`` — runs under the
  table's ``asyncio.Lock``: the aggregate handles it, the new domain events are mapped to
  table events and appended to ``table-<id>`` with the expected version in ONE transaction
  together with the command's de-duplication row, the withheld deck seed and the read model.
  Only then are watchers notified. If the transaction fails the runtime is rebuilt from the
  store, so memory never runs ahead of the log.
* Time: the domain sees integer milliseconds only. `Clock` gives epoch milliseconds advanced
  by the monotonic clock (so a wall-clock jump does not move the game), never earlier than
  the aggregate's last time. Persisted deadlines are epoch milliseconds, so after a restart
  a timer that expired while the service was down fires at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from electric.table.v1 import events_pb2 as tev
from electric_domain.tournament import (
    DealHand,
    Rejected,
    Tick,
    Tournament,
    TournamentConfig,
    default_config,
)
from electric_domain.tournament import events as dev
from electric_domain.tournament.events import Command
from electric_eventlog import ConcurrencyError, EventStore
from electric_platform import (
    Aborted,
    FailedPrecondition,
    InvalidArgument,
    ServiceError,
    Unavailable,
)
from prometheus_client import CollectorRegistry
from sqlalchemy import Connection, Engine

from electric_table import mapping
from electric_table.metrics import TableMetrics
from electric_table.store import repo

log = logging.getLogger(__name__)

#: Default pause between the end of a hand and the next deal (ms); small so bots play fast.
DEFAULT_HAND_PAUSE_MS = 500
HAND_PAUSE_ENV = "ELECTRIC_TABLE_HAND_PAUSE_MS"


def table_stream(table_id: str) -> str:
    """Event stream of a live table."""
    return f"table-{table_id}"


class Clock:
    """Epoch milliseconds advanced by the monotonic clock."""

    def __init__(self, now_ms: Callable[[], int] | None = None) -> None:
        self._epoch = time.time_ns() // 1_000_000
        self._mono = time.monotonic_ns()
        self._override = now_ms

    def now_ms(self) -> int:
        if self._override is not None:
            return self._override()
        return self._epoch + (time.monotonic_ns() - self._mono) // 1_000_000


def config_for(
    *, action_timer_ms: int, time_bank_ms: int, level_ms: int, starting_stack: int
) -> TournamentConfig:
    """The packaged rules with the timings and stack a TournamentStarted carries."""
    base = default_config()
    return dataclasses.replace(
        base,
        action_timer_ms=action_timer_ms or base.action_timer_ms,
        time_bank_ms=time_bank_ms,
        level_duration_ms=level_ms or base.level_duration_ms,
        starting_stack=starting_stack or base.starting_stack,
    )


@dataclass
class CommandOutcome:
    """What a command did (events appended; the new version)."""

    appended: int
    version: int


@dataclass
class RequestKey:
    """De-duplication key and the RPC name of a player command."""

    player_id: str
    request_id: str
    rpc: str


class TableNotifier:
    """Wakes the watchers of one table id.

    Owned by the `TableManager`'s registry (keyed by table id, created on first use), so a
    watcher can subscribe before the table is loaded into memory: the runtime loaded later
    uses the same notifier, and loading it notifies too."""

    def __init__(self) -> None:
        self.changed = asyncio.Event()
        self.watchers = 0

    def notify(self) -> None:
        """Wake everyone waiting on the current ``changed`` event; later waits get a new one."""
        old, self.changed = self.changed, asyncio.Event()
        old.set()


@dataclass
class TableRuntime:
    """One running table."""

    table_id: str
    info: mapping.TableInfo
    config: TournamentConfig
    tournament: Tournament
    projector: mapping.Projector
    version: int
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    notifier: TableNotifier = field(default_factory=TableNotifier)
    kick: asyncio.Event = field(default_factory=asyncio.Event)
    last_event_type: str = ""
    deal_at: int | None = None
    task: asyncio.Task[None] | None = None

    def seat_of(self, player_id: str) -> int | None:
        """0-based domain seat of ``player_id`` (None when not seated here)."""
        for i, s in enumerate(self.info.seats):
            if s.player_id == player_id:
                return i
        return None

    @property
    def finished(self) -> bool:
        return self.tournament.state.finished

    @property
    def changed(self) -> asyncio.Event:
        """Set at the next change (a new event after each change)."""
        return self.notifier.changed

    def notify(self, event_type: str) -> None:
        """Wake every watcher (and the driver)."""
        self.last_event_type = event_type
        self.notifier.notify()
        self.kick.set()


class TableManager:
    """Owns every live table of this instance: rebuild, commands, drivers."""

    def __init__(
        self,
        engine: Engine,
        store: EventStore,
        *,
        stopping: asyncio.Event,
        clock: Clock | None = None,
        hand_pause_ms: int = DEFAULT_HAND_PAUSE_MS,
        seed_source: Callable[[], bytes] = lambda: os.urandom(32),
        metrics: TableMetrics | None = None,
    ) -> None:
        self.engine = engine
        self.store = store
        self.stopping = stopping
        self.clock = clock or Clock()
        self.hand_pause_ms = hand_pause_ms
        self.seed_source = seed_source
        self.tables: dict[str, TableRuntime] = {}
        self._loading: dict[str, asyncio.Lock] = {}
        self._notifiers: dict[str, TableNotifier] = {}
        self.metrics = metrics or TableMetrics(CollectorRegistry())
        self.metrics.watch(self._live_count, self._overdue_seconds)

    def _live_count(self) -> float:
        return float(sum(1 for rt in list(self.tables.values()) if not rt.finished))

    def _overdue_seconds(self) -> float:
        now = self.clock.now_ms()
        worst = 0
        for rt in list(self.tables.values()):
            if rt.finished:
                continue
            due = [rt.tournament.next_wakeup_at()]
            if rt.tournament.awaiting_deal():
                due.append(rt.deal_at)
            for at in due:
                if at is not None:
                    worst = max(worst, now - at)
        return worst / 1000

    # ------------------------------------------------------------------ watchers

    def notifier(self, table_id: str) -> TableNotifier:
        """The notifier of ``table_id`` (created on first use, also before the table is
        loaded; the runtime loaded later notifies the same object)."""
        rt = self.tables.get(table_id)
        if rt is not None:
            return rt.notifier
        return self._notifiers.setdefault(table_id, TableNotifier())

    @contextlib.contextmanager
    def watching(self, table_id: str) -> Iterator[TableNotifier]:
        """Hold the notifier of ``table_id`` for one watcher; an entry for a table that was
        never loaded is dropped when its last watcher leaves."""
        n = self.notifier(table_id)
        n.watchers += 1
        try:
            yield n
        finally:
            n.watchers -= 1
            idle = n.watchers == 0 and table_id not in self.tables
            if idle and self._notifiers.get(table_id) is n:
                del self._notifiers[table_id]

    # ------------------------------------------------------------------ loading

    async def recover(self) -> int:
        """Rebuild every unfinished table from its events and resume its driver."""
        ids = await asyncio.to_thread(self._live_ids)
        for table_id in ids:
            await self.load(table_id)
        return len(ids)

    def _live_ids(self) -> list[str]:
        with self.engine.connect() as conn:
            return repo.live_table_ids(conn)

    async def load(self, table_id: str) -> TableRuntime | None:
        """The runtime of ``table_id``, rebuilt from its stream on first use (None when the
        table does not exist or cannot be played)."""
        rt = self.tables.get(table_id)
        if rt is not None:
            return rt
        guard = self._loading.setdefault(table_id, asyncio.Lock())
        async with guard:
            rt = self.tables.get(table_id)
            if rt is not None:
                return rt
            try:
                rt = await asyncio.to_thread(self.rebuild, table_id)
            finally:
                self._loading.pop(table_id, None)
            if rt is None:
                return None
            # Watchers that subscribed before the table was in memory (they got the read
            # model's STARTING view) wait on this notifier: share it and wake them.
            waiting = self._notifiers.pop(table_id, None)
            if waiting is not None:
                rt.notifier = waiting
            self.tables[table_id] = rt
            rt.notifier.notify()
            if not rt.finished:
                rt.task = asyncio.create_task(self._drive(rt), name=f"table-driver-{table_id}")
            log.info("table %s loaded at version %s", table_id, rt.version)
            return rt

    def rebuild(self, table_id: str) -> TableRuntime | None:
        """Replay ``table-<id>`` into a fresh aggregate (synchronous)."""
        with self.engine.connect() as conn:
            envelopes = self.store.read_stream(conn, table_stream(table_id))
            seeds = repo.deck_seeds(conn, table_id)
        if not envelopes:
            return None
        first = self.store.decode(envelopes[0])
        if not isinstance(first, tev.TableStarted) or not first.HasField("domain"):
            return None  # created without a playable tournament (see consumers)
        events: list[Any] = []
        for env in envelopes:
            record = mapping.domain_of(self.store.decode(env))
            if record is not None:
                events.append(mapping.decode_record(record, seeds))
        started = events[0]
        assert isinstance(started, dev.TournamentStarted)
        cfg = config_for(
            action_timer_ms=first.action_timer.ToMilliseconds(),
            time_bank_ms=started.time_bank_ms,
            level_ms=started.level_duration_ms,
            starting_stack=started.starting_stack,
        )
        info = info_from(first, cfg.action_timer_ms)
        t = Tournament.replay(cfg, events)
        proj = mapping.Projector(info)
        for e in events:
            proj.observe(e)
        rt = TableRuntime(
            table_id=table_id,
            info=info,
            config=cfg,
            tournament=t,
            projector=proj,
            version=int(envelopes[-1].stream_version),
        )
        rt.last_event_type = envelopes[-1].event_type
        return rt

    async def _reload(self, rt: TableRuntime) -> None:
        """Re-read ``rt`` from the store after a failed write (memory ran ahead)."""
        fresh = await asyncio.to_thread(self.rebuild, rt.table_id)
        if fresh is None:  # pragma: no cover - the stream cannot disappear
            return
        rt.tournament, rt.projector, rt.version = fresh.tournament, fresh.projector, fresh.version

    # ------------------------------------------------------------------ commands

    def now_for(self, rt: TableRuntime) -> int:
        """Current domain time for ``rt`` (never before the aggregate's last time)."""
        return max(self.clock.now_ms(), rt.tournament.state.now)

    async def apply(
        self,
        rt: TableRuntime,
        cmd: Command,
        *,
        ctx: mapping.RequestContext | None = None,
        request: RequestKey | None = None,
        correlation_id: str = "",
    ) -> CommandOutcome:
        """Run ``cmd`` (caller holds ``rt.lock``); persist its events; raise on refusal.

        A refusal still persists the catch-up events that preceded it, and the refusal
        itself when ``request`` is given (so a retry gets the same answer)."""
        error: ServiceError | None = None
        try:
            events = rt.tournament.handle(cmd)
        except Rejected as rej:
            events = rej.events
            error = (
                InvalidArgument(str(rej))
                if rej.code == "INVALID_ARGUMENT"
                else FailedPrecondition(str(rej))
            )
        await self.persist(rt, events, ctx=ctx, request=request, error=error, cid=correlation_id)
        if error is not None:
            raise error
        return CommandOutcome(len(events), rt.version)

    async def persist(
        self,
        rt: TableRuntime,
        events: list[Any],
        *,
        ctx: mapping.RequestContext | None = None,
        request: RequestKey | None = None,
        error: ServiceError | None = None,
        cid: str = "",
    ) -> None:
        """Append ``events`` (already applied to the aggregate) in one transaction."""
        if not events and request is None:
            return
        t = rt.tournament
        mapped = mapping.to_protos(
            events,
            rt.projector,
            ctx,
            level_ms=t.state.level_ms,
            multiplier=t.state.multiplier,
            prize_pool_cents=t.state.prize_pool_cents,
            buy_in_cents=t.state.buy_in_cents,
        )
        status: str | None = None
        stacks: dict[int, int] | None = None
        for e in events:
            if isinstance(e, dev.HandStarted):
                status = "running"
            elif isinstance(e, dev.HandEnded):
                stacks = {rt.info.no(i): x for i, x in enumerate(e.stacks)}
        if t.state.finished:
            status = "finished"
        expected = rt.version
        new_version = expected + len(mapped)

        def write(conn: Connection) -> None:
            if mapped:
                self.store.append(
                    conn,
                    table_stream(rt.table_id),
                    expected,
                    [m.message for m in mapped],
                    correlation_id=cid,
                    causation_id=request.request_id if request else "",
                )
            for m in mapped:
                if m.secret_seed is not None:
                    repo.insert_deck_seed(conn, rt.table_id, *m.secret_seed)
            if request is not None:
                repo.insert_request(
                    conn,
                    table_id=rt.table_id,
                    player_id=request.player_id,
                    request_id=request.request_id,
                    rpc=request.rpc,
                    code="OK" if error is None else error.code.name,
                    message="" if error is None else error.message,
                    stream_version=new_version,
                    at=datetime.now(UTC),
                )
            if mapped:
                repo.update_table(
                    conn, rt.table_id, stream_version=new_version, status=status, stacks=stacks
                )

        def tx() -> None:
            with self.engine.begin() as conn:
                write(conn)

        try:
            await asyncio.to_thread(tx)
        except Exception as exc:
            log.error("table %s: write failed, rebuilding from the log: %s", rt.table_id, exc)
            await self._reload(rt)
            if isinstance(exc, ConcurrencyError):
                raise Aborted(f"table {rt.table_id} changed concurrently; retry") from exc
            raise Unavailable(f"table {rt.table_id}: could not store the command; retry") from exc
        rt.version = new_version
        for e in events:
            if isinstance(e, dev.HandStarted):
                self.metrics.hands.inc()
            elif isinstance(e, dev.TimedOut):
                self.metrics.timeouts.inc()
            elif isinstance(e, dev.TournamentFinished):
                self.metrics.finished.inc()
        if mapped:
            rt.notify(type(mapped[-1].message).DESCRIPTOR.full_name)
        if t.awaiting_deal() and rt.deal_at is None:
            rt.deal_at = self.now_for(rt) + self.hand_pause_ms
        rt.kick.set()

    async def catch_up(self, rt: TableRuntime) -> None:
        """Apply everything due by now (levels, 0:00, expired timers); caller holds the lock."""
        t = rt.tournament
        if t.state.finished:
            return
        wake = t.next_wakeup_at()
        now = self.now_for(rt)
        if wake is not None and wake <= now:
            await self.apply(rt, Tick(now))

    # ------------------------------------------------------------------ driver

    async def _drive(self, rt: TableRuntime) -> None:
        """Feed time to one table until its tournament finishes or the service stops."""
        while not rt.finished and not self.stopping.is_set():
            rt.kick.clear()
            delay = 1.0
            try:
                async with rt.lock:
                    delay = await self._step(rt)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("table %s driver step failed; retrying", rt.table_id)
                self.metrics.driver_errors.inc()
                delay = 1.0
            if delay <= 0:
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(rt.kick.wait(), timeout=delay)

    async def _step(self, rt: TableRuntime) -> float:
        """One driver step under the lock; returns seconds to sleep (0 = run again)."""
        t = rt.tournament
        if t.state.finished:
            return 0
        now = self.now_for(rt)
        wake = t.next_wakeup_at()
        if wake is not None and wake <= now:
            await self.apply(rt, Tick(now))
            return 0
        if t.awaiting_deal():
            if rt.deal_at is None:
                rt.deal_at = now + self.hand_pause_ms
            if rt.deal_at <= now:
                rt.deal_at = None
                await self.apply(rt, DealHand(now, self.seed_source()))
                return 0
        targets = [x for x in (wake, rt.deal_at if t.awaiting_deal() else None) if x is not None]
        if not targets:
            return 1.0
        return max(0.001, (min(targets) - now) / 1000)

    async def close(self) -> None:
        """Stop every driver (shutdown)."""
        tasks = [rt.task for rt in self.tables.values() if rt.task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def info_from(started: tev.TableStarted, action_timer_ms: int) -> mapping.TableInfo:
    """Table info of a TableStarted (seats in seat order = domain seats 0..n-1)."""
    seats = sorted(started.seats, key=lambda s: s.seat)
    return mapping.TableInfo(
        table_id=started.table_id,
        table_name=started.table_name,
        seats=tuple(
            mapping.SeatInfo(s.seat, s.player_id, s.entry_id, s.display_name) for s in seats
        ),
        action_timer_ms=action_timer_ms,
        source_event_id=started.source_event_id,
    )
