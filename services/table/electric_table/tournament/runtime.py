"""Live tables: the tournament aggregates in memory, loaded from their event streams.

* One `TableRuntime` per running table, owned by the `TableManager` (by default this instance
  owns every table; with ``ELECTRIC_TABLE_OWNERSHIP=partitions`` only the tables of its
  Kafka partitions, fenced: `ownership`, docs/scaling.md). Every input runs under
  the table's ``asyncio.Lock`` (see `handlers`); the real-time driver is `driver`.
* A runtime is rebuilt by replaying ``table-<id>``: each stored event carries its domain
  event (`records`), withheld deck seeds come from the service's own table.
* Watchers wait on the table's `TableNotifier`, which exists before the table is loaded
  (keyed by table id), so a watcher that subscribed early follows the table once loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import events_pb2 as tev
from electric.table.v1 import table_pb2
from electric_domain.tournament import Progress, Tournament, TournamentConfig, default_config
from electric_domain.tournament import events as dev
from electric_eventlog import EventStore
from electric_eventlog.engine import reading
from electric_eventlog.fencing import Fence
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine

from electric_table.host.clock import Clock
from electric_table.host.tables import LiveTables
from electric_table.journal import table_stream
from electric_table.store import repo
from electric_table.tournament.metrics import TableMetrics
from electric_table.tournament.records import decode_record, domain_of
from electric_table.tournament.story import Story
from electric_table.tournament.tableinfo import SeatInfo, TableInfo

log = logging.getLogger(__name__)
#: Seconds a table re-read after a failed write is retried while the database is away.
RELOAD_BUDGET_S = 300.0

#: Default seconds a finished table stays in memory after its tournament finished.
FINISHED_RETENTION_S = 60.0


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
    info: TableInfo
    config: TournamentConfig
    tournament: Tournament
    version: int
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    notifier: TableNotifier = field(default_factory=TableNotifier)
    kick: asyncio.Event = field(default_factory=asyncio.Event)
    last_event_type: str = ""
    deal_at: int | None = None
    task: asyncio.Task[None] | None = None
    story: Story = field(default_factory=Story)
    #: The tournament's correlation id (that of its first event: the Register that filled
    #: the table); every event of the table's stream keeps it (docs/logging.md).
    correlation_id: str = ""
    #: Id of the stream's latest event: the cause of the driver's next step (a timer expiry
    #: is caused by the event that started the turn; a deal by the end of the last hand).
    last_event_id: str = ""
    #: Id of the first event of the batch that started the running turn (the action, deal or
    #: timeout that put the seat on the clock): the cause of that turn's timer expiry.
    turn_cause: str = ""
    #: The fencing epoch this instance holds on the table (``partitions`` ownership only,
    #: ``electric_table.host.ownership``); every write checks it. None: unfenced (single mode).
    fence: Fence | None = None
    #: A write of this runtime was fenced, or cancelled before its outcome was known: its
    #: aggregate applied events that may be on no stream, so it is never resumed as it is
    #: (only rebuilt from its events). Its fence may have been refused by the partition's
    #: epoch alone, with the table's own epoch unchanged, which the resume's epoch test
    #: cannot see (issue 28); a cancelled write that never ran leaves the stream's version
    #: equal to the runtime's, which the resume's version test cannot see.
    fenced: bool = False
    #: Why the aggregate may be ahead of the stream ("": it is not): a write failed and so
    #: did its reload (the database away past ``RELOAD_BUDGET_S``, or the reload cancelled).
    #: Commands are refused (UNAVAILABLE, retry) and the driver re-reads the table before
    #: anything else (``TableManager.reload``); going on from memory would append after
    #: events that are on no stream.
    stale: str = ""
    #: The outcome of every command stored on this table, by (player id, request id): the
    #: rows of ``table_requests``, read with the table after its events (each row commits
    #: with its events, so every command those events answer is here) and added to after
    #: each commit. A repeated request is answered from here, with no read (issue 26).
    requests: dict[tuple[str, str], repo.RequestRow] = field(default_factory=dict)
    #: The public view at a stream version (``views.watch_view``): built once per change,
    #: shared by every watcher of the table; and how many were built (tests, benchmarks).
    public: tuple[int, table_pb2.TableView] | None = None
    views_built: int = 0
    #: What My Tables shows of the table as of the last append (``Tournament.progress``):
    #: an append that changes it ends with a ``TableProgress`` (issue 26). Set from the
    #: replayed state when the table is rebuilt; None before (the first append has one).
    progress: Progress | None = None

    def seat_of(self, player_id: str) -> int | None:
        """0-based domain seat of ``player_id`` (None when not seated here)."""
        return self.info.seat_of(player_id)

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


class TableManager(LiveTables[TableRuntime]):
    """Owns every live tournament table of this instance: loading, rebuilding, watcher
    notifiers; hosted as every live table is (`host.tables.LiveTables`).

    ``start_driver`` (set by the wiring) starts the real-time driver of a loaded table;
    ``fencer`` (``partitions`` ownership) takes a table's epoch before it is rebuilt."""

    def __init__(
        self,
        engine: Engine,
        store: EventStore,
        *,
        stopping: asyncio.Event,
        clock: Clock | None = None,
        metrics: TableMetrics | None = None,
        finished_retention_s: float = FINISHED_RETENTION_S,
    ) -> None:
        super().__init__(stopping)
        self.engine = engine
        self.store = store
        self.clock = clock or Clock()
        self._notifiers: dict[str, TableNotifier] = {}
        #: Seconds a finished table stays in memory (late GetTable/WatchTable calls find it
        #: there) before :meth:`release` drops it; a later call rebuilds it from its stream.
        self.finished_retention_s = finished_retention_s
        self._releases: dict[str, asyncio.TimerHandle] = {}
        self.released = 0
        self.metrics = metrics or TableMetrics(CollectorRegistry())
        self.metrics.watch(self._live_count, self._overdue_seconds)
        self.metrics.watch_held(lambda: float(len(self.tables)))

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

    def now_for(self, rt: TableRuntime) -> int:
        """Current domain time for ``rt`` (never before the aggregate's last time)."""
        return max(self.clock.now_ms(), rt.tournament.state.now)

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

    def load_soon(self, table_id: str) -> None:
        """Load ``table_id`` in the background (after a consumer committed its stream)."""
        self.in_background(self.load(table_id))

    # The host's load (`host.tables.LiveTables.load`) asks the tournament for these.

    def exists(self, table_id: str) -> bool:
        return self._stream_exists(table_id)

    def retire(self, t: TableRuntime) -> None:
        self._retire(t)

    def installed(self, rt: TableRuntime) -> None:
        # Watchers that subscribed before the table was in memory (they got the read
        # model's STARTING view) wait on this notifier: share it and wake them.
        waiting = self._notifiers.pop(rt.table_id, None)
        if waiting is not None:
            rt.notifier = waiting
        rt.notifier.notify()
        self._drive(rt)
        log.info("table.loaded", extra={"table_id": rt.table_id, "version": rt.version})

    def _drive(self, rt: TableRuntime) -> None:
        """Start ``rt``'s driver unless it finished (and is not stale); a finished table
        leaves memory later."""
        if (rt.stale or not rt.finished) and self.start_driver is not None:
            rt.task = self.start_driver(rt)
            rt.task.add_done_callback(functools.partial(self._driver_ended, rt))
        self.release_later(rt)

    # ------------------------------------------------------------------ releasing

    def release_later(self, rt: TableRuntime) -> None:
        """Drop ``rt`` from memory ``finished_retention_s`` after its tournament finished
        (no-op while it runs; its driver ending calls this again)."""
        if not rt.finished or self.stopping.is_set() or self.tables.get(rt.table_id) is not rt:
            return
        old = self._releases.pop(rt.table_id, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self._releases[rt.table_id] = loop.call_later(
            self.finished_retention_s, self.release, rt.table_id
        )

    def _driver_ended(self, rt: TableRuntime, _task: asyncio.Task[None]) -> None:
        self.release_later(rt)

    def release(self, table_id: str) -> bool:
        """Drop the finished table ``table_id`` from memory now; False when it is not held
        or still running (or busy: then it is tried again later)."""
        self._releases.pop(table_id, None)
        rt = self.tables.get(table_id)
        if rt is None or not rt.finished or rt.stale:
            return False
        if rt.lock.locked():  # a view or command is reading it: try again shortly
            self._releases[table_id] = asyncio.get_running_loop().call_later(
                1.0, self.release, table_id
            )
            return False
        del self.tables[table_id]
        self.released += 1
        # Watchers still streaming hold the runtime and its notifier: nothing more comes for
        # a finished table, and a new watcher gets a fresh notifier (dropped when idle).
        log.info("table.released", extra={"table_id": table_id, "version": rt.version})
        return True

    def _retire(self, rt: TableRuntime) -> None:
        """Stop ``rt`` now, without waiting: out of :attr:`tables`, its driver cancelled,
        its watchers told (they come back to the runtime that replaces it)."""
        if self.holds(rt):
            del self.tables[rt.table_id]
        self.cancel_driver(rt)
        rt.notifier.notify()

    async def disown(self, table_id: str) -> bool:
        """Stop driving ``table_id`` here (its partition moved, or a write was fenced): stop
        its driver (timers, clocks, writes) and drop it from memory. False when not held."""
        rt = await self.suspend(table_id)
        if rt is None:
            return False
        self.end_suspended(rt)
        return True

    async def suspend(self, table_id: str) -> TableRuntime | None:
        """Stop driving ``table_id`` (its driver: timers, clocks, deals) and stop serving it,
        but keep the runtime: an eager rebalance revokes every partition and then often
        assigns the same ones back (:meth:`resume`). Its watchers are not told yet;
        :meth:`end_suspended` tells them when it is not coming back. None when not held."""
        rt = self.tables.pop(table_id, None)
        handle = self._releases.pop(table_id, None)
        if handle is not None:
            handle.cancel()
        if rt is None:
            return None
        await self.stop_driver(rt)
        return rt

    def end_suspended(self, rt: TableRuntime) -> None:
        """``rt`` is not served here any more: its watchers end (UNAVAILABLE: they reconnect
        to the new owner)."""
        rt.notifier.notify()
        log.info("table.disowned", extra={"table_id": rt.table_id, "version": rt.version})

    def resume(self, rt: TableRuntime, fence: Fence | None) -> bool:
        """Serve and drive the suspended ``rt`` again, under ``fence`` (its new epoch).
        False when the table was loaded here meanwhile: that runtime stays (see :meth:`load`)."""
        current = self.tables.get(rt.table_id)
        if current is not None and current is not rt:
            return False
        rt.fence = fence
        self.tables[rt.table_id] = rt
        self._drive(rt)
        log.info("table.resumed", extra={"table_id": rt.table_id, "version": rt.version})
        return True

    def disown_soon(self, rt: TableRuntime) -> None:
        """Stop ``rt`` from a task of its own (callable from its driver): :meth:`disown` when
        it is the runtime held here, else only its driver (a stale copy must never disown
        the runtime that replaced it)."""
        if not self.holds(rt):
            self._retire(rt)
            return
        self.in_background(self.disown(rt.table_id))

    def _stream_exists(self, table_id: str) -> bool:
        with reading(self.engine) as conn:
            return self.store.current_version(conn, table_stream(table_id)) > 0

    def rebuild(self, table_id: str) -> TableRuntime | None:
        """Replay ``table-<id>`` into a fresh aggregate (synchronous)."""
        # Three statements, no common snapshot needed: a seed and a request row are
        # committed with their events, so seeds and requests read after the events include
        # every one those events need.
        with reading(self.engine) as conn:
            envelopes = self.store.read_stream(conn, table_stream(table_id))
            if not envelopes:
                return None  # (watchers of a table being started ask often)
            seeds = repo.deck_seeds(conn, table_id)
            requests = repo.requests_of(conn, table_id)
        first = self.store.decode(envelopes[0])
        if not isinstance(first, tev.TableStarted) or not first.HasField("domain"):
            return None  # created without a playable tournament (see consumers)
        events: list[Any] = []
        story = Story()
        for env in envelopes:
            msg = self.store.decode(env)
            story.feed(int(env.stream_version), msg)
            rec = domain_of(msg)
            if rec is not None:
                events.append(decode_record(rec, seeds))
        started = events[0]
        assert isinstance(started, dev.TournamentStarted)
        cfg = config_for(
            action_timer_ms=first.action_timer.ToMilliseconds(),
            time_bank_ms=started.time_bank_ms,
            level_ms=started.level_duration_ms,
            starting_stack=started.starting_stack,
        )
        rt = TableRuntime(
            table_id=table_id,
            info=info_from(first, cfg.action_timer_ms),
            config=cfg,
            tournament=Tournament.replay(cfg, events),
            version=int(envelopes[-1].stream_version),
            story=story,
            correlation_id=envelopes[0].correlation_id,
            last_event_id=last_event_id(envelopes),
            turn_cause=turn_cause(envelopes),
            requests=requests,
        )
        rt.last_event_type = envelopes[-1].event_type
        rt.progress = rt.tournament.progress()
        return rt

    async def reload(self, rt: TableRuntime, *, patient: bool = True) -> None:
        """Re-read ``rt`` from the store after a failed write (memory ran ahead).

        Retried while the database is away (a restart fails the write AND the first
        re-read): the table must not go on from memory holding a command that is on no
        stream. Found by the chaos run (issue 18): the last Act of a tournament failed in a
        PostgreSQL restart, the re-read failed too, the tournament finished in memory only
        (no TournamentFinished stored, no prize paid) and the table was released. When it
        cannot (past the budget, or not ``patient``: one try, or cancelled meanwhile) the
        runtime is marked :attr:`~TableRuntime.stale` until a reload succeeds (its driver's)."""
        try:
            fresh = await self._reread(rt, patient=patient)
        except asyncio.CancelledError:
            self._went_stale(rt, "its reload was cancelled")
            raise
        except Exception:
            self._went_stale(rt, "it could not be reloaded after a failed write")
            raise
        if fresh is None:  # pragma: no cover - the stream cannot disappear
            return
        rt.tournament, rt.version, rt.story = fresh.tournament, fresh.version, fresh.story
        rt.last_event_id, rt.turn_cause = fresh.last_event_id, fresh.turn_cause
        rt.requests = fresh.requests
        if rt.stale:
            rt.stale = ""
            log.warning("table.reloaded", extra={"table_id": rt.table_id, "version": rt.version})
            rt.notify(fresh.last_event_type)

    async def _reread(self, rt: TableRuntime, *, patient: bool) -> TableRuntime | None:
        delay, waited = 0.1, 0.0
        while True:
            try:
                return await asyncio.to_thread(self.rebuild, rt.table_id)
            except Exception:
                if not patient or waited >= RELOAD_BUDGET_S:
                    raise
                log.warning("table.reload_retry", extra={"table_id": rt.table_id}, exc_info=True)
            await asyncio.sleep(delay)
            waited += delay
            delay = min(delay * 2, 2.0)

    def _went_stale(self, rt: TableRuntime, why: str) -> None:
        if rt.stale:  # (its driver's reloads that fail again say nothing more)
            return
        rt.stale = why
        log.error("table.stale", extra={"table_id": rt.table_id, "error": why})
        rt.kick.set()  # its driver re-reads it
        idle = rt.task is None or rt.task.done()
        if idle and self.holds(rt) and not self.stopping.is_set():
            self._drive(rt)  # (a finished table keeps no driver: it gets one to re-read it)

    async def close(self) -> None:
        """Stop every driver and background load (shutdown)."""
        for handle in self._releases.values():
            handle.cancel()
        self._releases.clear()
        await super().close()


def last_event_id(envelopes: Sequence[Envelope]) -> str:
    """Id of the stream's latest event other than a ``TableProgress`` (a summary causes
    nothing)."""
    summary = tev.TableProgress.DESCRIPTOR.full_name
    return next((e.event_id for e in reversed(envelopes) if e.event_type != summary), "")


def turn_cause(envelopes: Sequence[Envelope]) -> str:
    """The first event of the batch holding the stream's latest TurnStarted (a batch: the
    contiguous events of one append, which share their causation id and their occurred_at);
    "" without a turn."""
    turn = tev.TurnStarted.DESCRIPTOR.full_name
    k = next((i for i in range(len(envelopes) - 1, -1, -1) if envelopes[i].event_type == turn), -1)
    if k < 0:
        return ""
    while k > 0 and (
        envelopes[k - 1].causation_id == envelopes[k].causation_id
        and envelopes[k - 1].occurred_at == envelopes[k].occurred_at
    ):
        k -= 1
    return envelopes[k].event_id


def info_from(started: tev.TableStarted, action_timer_ms: int) -> TableInfo:
    """Table info of a TableStarted (seats in seat order = domain seats 0..n-1)."""
    seats = sorted(started.seats, key=lambda s: s.seat)
    return TableInfo(
        table_id=started.table_id,
        table_name=started.table_name,
        seats=tuple(SeatInfo(s.seat, s.player_id, s.entry_id, s.display_name) for s in seats),
        action_timer_ms=action_timer_ms,
        source_event_id=started.source_event_id,
    )
