"""Live Ultimate Texas Hold'em tables (``uth-<n>``): one live round per table, in memory.

Each table has one :class:`LiveTable`: its current (or last) round replayed from its stream
``casino-<round_id>`` with its :class:`~electric_table.casino.uth.records.UthBook`, an
``asyncio.Lock`` every change runs under, and a driver task (:mod:`uth.driver`) that feeds
``Tick(now)`` at the round's next wake-up and opens the next round (the seated players, the
previous bets for REPEAT) a pause after one ends.

Command path (PlaceBets, Decide, VoidRound): lock → de-duplicate by request id → catch the
round up to ``now`` (a ``Tick``, committed on its own: the catch-up events stand even if the
command is then refused) → the domain decides on the live round → each new reservation: an
*intent* row, then the wallet reservation (a partially refused action voids the ones it made)
→ ONE transaction: append (expected version) and the round row and UTH player rows the
journal's projector writes from the events, bets placed, wallet calls owed (UNDO/CLEAR:
void at once; settlement: post won/lost spots, void pushed ones and every reservation
without a result), request row → the owed calls run. Any failure after the
domain changed the live round reloads it from its stream.

**Broken, then repaired.** A change neither stored nor reloaded (the database away past the
reload's budget; a change cancelled mid-commit, by its caller's deadline or a revocation,
gets one reload only) may leave the round in memory ahead of its stream: the table is
``broken``, refuses changes (UNAVAILABLE, retry) and its driver re-reads it
(:meth:`UthTables.repair`). Nothing else makes it whole (CI's short chaos run: a round left
open, its bets reserved, its bots stuck).

**Restart.** Every table with an open round (or seated players) is loaded; its driver's
first Tick resolves the windows that expired meanwhile (auto-check, auto-fold, settlement).
An intent of an open UTH round (crash between reservation and append) is voided when the
round ends — the round never placed that bet, so it continues consistently.

**Ownership** (``ELECTRIC_TABLE_OWNERSHIP=partitions``, :mod:`uth.ownership`): a table is
hosted only by the instance owning its partition (``owns``); loading it first takes its
fence (``fencer``, resource ``casino-table-<id>``) and every write checks that epoch in its
transaction. A fenced write (the table moved while this instance was paused) stores
nothing, answers ABORTED and drops the table here (:meth:`UthTables.disown`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import re
import uuid
from collections.abc import Callable
from typing import TypeVar

import electric_domain.casino.uth.events as uth
from electric.table.v1 import casino_events_pb2 as cev
from electric_domain.casino.common.config import CasinoConfig
from electric_domain.casino.common.errors import Rejected
from electric_domain.casino.common.game_number import next_game_number
from electric_domain.casino.uth.round import BETTING, UthRound
from sqlalchemy import Connection
from sqlalchemy.exc import SQLAlchemyError

from electric_table.casino import repo
from electric_table.casino.thb.handlers import CasinoHandlers
from electric_table.casino.uth import records as uth_records
from electric_table.casino.uth import recovery as uth_recovery
from electric_table.casino.uth.batch import (
    DECIDE,
    BetBatches,
    Queued,
    reserve_bets,
    undo_reservations,
)
from electric_table.casino.uth.live import LiveTable
from electric_table.casino.uth.settings import DEFAULT_PAUSE_MS, pause_ms, uth_config
from electric_table.host.tables import LiveTables
from electric_table.journal import append_round, casino_stream, round_appends
from electric_table.refusals import (
    BadRequest,
    NotKnown,
    NotNow,
    NotPermitted,
    TableMoved,
    TryAgain,
)

log = logging.getLogger(__name__)
_T = TypeVar("_T")

UTH_TABLE = re.compile(r"^uth-[0-9]+$")
#: Seconds a failed change retries reloading its round before the table is marked broken.
RESTORE_BUDGET_S = 300.0

Request = tuple[str, str, str]


#: (round row, replayed round, book, stream version, id of the stream's last event).
Loaded = tuple[repo.RoundRow | None, UthRound | None, uth_records.UthBook | None, int, str]


class UthTables(LiveTables[LiveTable]):
    """The live UTH tables of this process (module doc), hosted as every live table is
    (`host.tables.LiveTables`)."""

    def __init__(
        self,
        base: CasinoHandlers,
        config: CasinoConfig,
        *,
        pause_ms: int = DEFAULT_PAUSE_MS,
        stopping: asyncio.Event | None = None,
    ) -> None:
        super().__init__(stopping or asyncio.Event())
        self.base, self.config, self.pause_ms = base, config, pause_ms
        self.engine, self.store = base.engine, base.store
        self.bets = BetBatches(self)
        #: ``partitions`` ownership (set by ``uth.ownership``, as is the host's ``fencer``):
        #: whether a table may be hosted here (its partition is this instance's and no
        #: suspended copy of it waits for the rebalance's settle). None: single mode.
        self.owns: Callable[[str], bool] | None = None
        #: Tables whose write was fenced here: not taken again before their partition is
        #: assigned here again (a resumed stale instance must not take a table back).
        self.lost: set[str] = set()

    def now_ms(self) -> int:
        return self.base.now_ms()

    # ------------------------------------------------------------------------ loading

    def _load(self, table_id: str) -> Loaded:
        with self.engine.connect() as conn:
            row = repo.latest_round(conn, table_id)
        return self.load_round(row)

    def load_round(self, row: repo.RoundRow | None) -> Loaded:
        """The round of ``row`` replayed from its stream, with its book."""
        if row is None:
            return None, None, None, 0, ""
        table_id = row.table_id
        with self.engine.connect() as conn:
            envelopes = self.store.read_stream(conn, casino_stream(row.round_id))
        book = uth_records.UthBook(table_id=table_id)
        events = []
        try:
            for env in envelopes:
                got = uth_records.decode(self.store.decode(env), row.seed_hex)
                if got is not None:
                    book.feed(*got)
                    events.append(got[0])
            last = envelopes[-1].event_id if envelopes else ""
            return row, UthRound.replay(self.config, events), book, len(envelopes), last
        except Exception:
            if row.status == repo.OPEN:
                raise
            return row, None, None, len(envelopes), ""  # an ended round voided from its rows

    async def _reload(self, t: LiveTable) -> None:
        loaded = await asyncio.to_thread(self._load, t.table_id)
        t.row, t.round, t.book, t.version, t.last_event_id = loaded

    async def _restore(self, t: LiveTable, *, patient: bool = True) -> None:
        """The live round changed in memory and the change was not stored: replay it from
        its stream, retrying while the database is away (a restart fails the commit AND
        the first reload). Under the table's lock: nothing may run on the in-memory round
        before this succeeds, or the unstored change would stand — later events and the
        settlement would count a decision or bet that is on no stream (found by the chaos
        run, issue 18). Not ``patient`` (the change was cancelled: its caller gave up, or
        the driver was stopped): one try. When it cannot reload, the table is ``broken``
        until its driver repairs it (module doc)."""
        delay, waited = 0.1, 0.0
        try:
            while True:
                try:
                    return await self._reload(t)
                except Exception:
                    if not patient or waited >= RESTORE_BUDGET_S:
                        raise
                    log.warning("uth.reload_retry", extra={"table_id": t.table_id}, exc_info=True)
                await asyncio.sleep(delay)
                waited += delay
                delay = min(delay * 2, 2.0)
        except asyncio.CancelledError:  # cancelled (again) while reloading or waiting
            self._broke(t, "round not reloaded: cancelled while reloading")
            raise
        except Exception:
            change = "failed" if patient else "cancelled"
            self._broke(t, f"round could not be reloaded after a {change} change")
            raise

    async def restore_after(self, t: LiveTable, exc: BaseException) -> None:
        """:meth:`_restore` after the change failed with ``exc``; a cancel stays a cancel
        (the caller re-raises it) even when its one reload failed: the table is broken."""
        cancelled = isinstance(exc, asyncio.CancelledError)
        try:
            await self._restore(t, patient=not cancelled)
        except Exception:
            if not cancelled:
                raise

    def _broke(self, t: LiveTable, why: str) -> None:
        if not t.broken:  # (its driver's repairs that fail again say nothing more)
            log.error("uth.table_broken", extra={"table_id": t.table_id, "error": why})
            t.kick.set()  # its driver repairs it (module doc)
        t.broken = why

    async def repair(self, t: LiveTable) -> bool:
        """Make the broken ``t`` whole again (``uth.recovery.repair``); True when it is."""
        return await uth_recovery.repair(self, t)

    def mine(self, table_id: str) -> bool:
        """Whether this instance may host ``table_id`` (always, in single mode)."""
        return self.owns is None or (self.owns(table_id) and table_id not in self.lost)

    async def table(self, table_id: str) -> LiveTable:
        """The live table (loaded and driven from its first use, by the host's load). Only
        a table registration seated someone at (or with rounds) is hosted: any other
        answers NOT_FOUND. Under ``partitions`` ownership a table of another instance is
        refused (UNAVAILABLE: the caller's router forwards it, or the client retries while
        it moves)."""
        if not UTH_TABLE.match(table_id):
            raise BadRequest(f"table_id {table_id!r} is not a UTH table (uth-<n>)")
        t = self.tables.get(table_id)
        if t is not None:
            return t
        if not await asyncio.to_thread(self._known, table_id):
            raise NotKnown(f"UTH table {table_id!r} has no seated player yet; join it first")
        if not self.mine(table_id):
            raise TryAgain(f"UTH table {table_id} is another instance's (or moving); retry")
        loaded = await self.load(table_id)
        if loaded is None:  # its partition moved meanwhile (the epoch was refused)
            raise TryAgain(f"UTH table {table_id} is moving; retry")
        return loaded

    # The host's load (`host.tables.LiveTables.load`) asks the game for these.

    def exists(self, table_id: str) -> bool:
        return self._known(table_id)

    def rebuild(self, table_id: str) -> LiveTable:
        t = LiveTable(table_id)
        try:
            t.row, t.round, t.book, t.version, t.last_event_id = self._load(table_id)
        except SQLAlchemyError:
            raise  # the database is away, not the round unreplayable: the load is retried
        except Exception as exc:
            t.unreplayable = str(exc) or type(exc).__name__
        return t

    async def prepare(self, t: LiveTable) -> None:
        if t.unreplayable:
            log.error(
                "uth.round_unreplayable", extra={"table_id": t.table_id, "error": t.unreplayable}
            )
            async with t.lock:
                if await self._auto_void(t):
                    t.unreplayable = ""

    def retire(self, t: LiveTable) -> None:
        self._drop(t)
        self.cancel_driver(t)

    def installed(self, t: LiveTable) -> None:
        if self.start_driver is not None:  # (a broken one too: its driver repairs it)
            t.task = self.start_driver(t)

    async def _auto_void(self, t: LiveTable) -> bool:
        """The open round cannot be replayed: void it from its rows (``uth.recovery``)."""
        return await uth_recovery.auto_void(self, t)

    def _drop(self, t: LiveTable) -> None:
        if self.tables.get(t.table_id) is t:
            del self.tables[t.table_id]
        t.disowned = True
        t.notify()

    async def disown(self, table_id: str) -> bool:
        """Stop hosting ``table_id`` here (its partition moved, or a write was fenced): its
        driver is cancelled, it is dropped, its watchers and queued commands are answered
        UNAVAILABLE. False when not hosted."""
        t = self.tables.get(table_id)
        if t is None:
            return False
        self._drop(t)
        await self.stop_driver(t)
        log.info("uth.disowned", extra={"table_id": table_id, "version": t.version})
        return True

    def moved(self, t: LiveTable) -> None:
        """A write of ``t`` was fenced: the table is another instance's now. Drop it (from
        a task of its own: the caller may be its driver) and do not take it back before
        its partition is assigned here again. A copy no longer hosted here (replaced by a
        reload under a newer epoch) only stops: it must not drop the copy that replaced
        it nor mark the table lost (chaos run, seed 18: uth-1 stopped opening rounds)."""
        if not self.holds(t):
            t.disowned = True
            self.cancel_driver(t)
            return
        self.lost.add(t.table_id)
        self.in_background(self.disown(t.table_id))

    def known_tables(self) -> list[str]:
        """The tables with an open round or a seated player (the ones to host)."""
        with self.engine.connect() as conn:
            names = set(repo.open_tables(conn, "uth")) | set(repo.tables_with_seats(conn, "uth"))
        return sorted(n for n in names if UTH_TABLE.match(n))

    async def recover(self) -> dict[str, int]:
        """Load every table with an open round or seated players (their drivers catch up)."""
        tables = []
        for name in await asyncio.to_thread(self.known_tables):
            try:
                tables.append(await self.table(name))
            except Exception as exc:  # (the database failed it: ``casino-uth-tables`` retries)
                log.warning("uth.host_tables_failed", extra={"table_id": name, "error": str(exc)})
        return {
            "uth_tables": len(tables),
            "uth_open": sum(1 for t in tables if t.live),
            "uth_broken": sum(1 for t in tables if t.broken),
        }

    async def host_seated_tables(self, stop: asyncio.Event, interval_s: float = 2.0) -> None:
        """Background task ``casino-uth-tables``: every table registration seated someone at
        (or with an open round) is hosted (and so driven) even before anyone calls it — by
        its owner only under ``partitions`` ownership (this also retries an assignment
        whose load failed)."""
        while not stop.is_set():
            try:
                for name in await asyncio.to_thread(self.known_tables):
                    if name not in self.tables and self.mine(name):
                        await self.table(name)
            except Exception as exc:
                log.warning("uth.host_tables_failed", extra={"error": str(exc)})
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=interval_s)

    # ---------------------------------------------------------------------- commands

    async def place(
        self, player: str, table_id: str, action: str, amount: int, request_id: str
    ) -> LiveTable:
        """One betting action (ante, trips, undo, double, repeat, clear) of ``player``,
        carried with the table's other queued placements (``uth_batch``)."""
        if not UTH_TABLE.match(table_id):
            raise BadRequest(f"table_id {table_id!r} is not a UTH table (uth-<n>)")
        if not await asyncio.to_thread(self._seated, table_id, player):
            raise NotPermitted(f"{player} has no seat at {table_id}: join the table first")
        t = await self.table(table_id)
        await self.bets.place(t, Queued(player, action, amount, request_id))
        return t

    async def decide(self, player: str, round_id: str, action: str, request_id: str) -> LiveTable:
        """A decision of ``player`` in ``round_id``, carried with the table's other queued
        commands (``uth_batch``: a decision window is a burst too)."""
        t = await self._table_of(round_id)
        item = Queued(player, action, 0, request_id, rpc=DECIDE, round_id=round_id)
        await self.bets.place(t, item)
        return t

    async def void(self, operator: str, round_id: str, reason: str, request_id: str) -> None:
        """Operator VoidRound of a UTH round: idempotent (a voided round answers OK)."""
        t = await self._table_of(round_id)
        async with t.lock:
            t.check_owned()
            if await asyncio.to_thread(self.base._prior, operator, request_id, "VoidRound"):
                return
            if t.book is None or t.book.round_id != round_id or not t.live:
                with self.engine.connect() as conn:
                    row = repo.get_round(conn, round_id)
                if row is not None and row.status == repo.VOIDED:
                    return
                raise NotNow(f"round {round_id} is settled; it cannot be voided")
            now = self.now_ms()
            req: Request = (operator, request_id, "VoidRound")
            await self._run(t, lambda r: r.handle(uth.Void(reason, now)), request=req, by=operator)
        t.kick.set()

    async def ack(self, player: str, round_id: str) -> None:
        """AckResult of a UTH round by a player who had stakes in it (idempotent)."""
        t = await self._table_of(round_id)
        async with t.lock:
            t.check_owned()
            with self.engine.connect() as conn:
                row = repo.get_round(conn, round_id)
                seen = repo.uth_player(conn, round_id, player)
            if row is None or seen is None:
                raise NotPermitted(f"{player} has no result in round {round_id}")
            if row.status == repo.OPEN:
                raise NotNow(f"round {round_id} has no result yet")
            if seen:
                return
            msg = cev.CasinoResultAcknowledged(round_id=round_id, player_id=player)

            def write(conn: Connection) -> None:
                append_round(self.store, conn, round_id, row.stream_version, [msg])

            await self.tx(t, write, round_id)
            if t.book is not None and t.book.round_id == round_id:
                t.version += 1
                t.notify()

    async def _table_of(self, round_id: str) -> LiveTable:
        with self.engine.connect() as conn:
            row = repo.get_round(conn, round_id)
        if row is None or row.game != uth_records.GAME:
            raise NotKnown(f"UTH round {round_id!r} not found")
        return await self.table(row.table_id)

    def _known(self, table_id: str) -> bool:
        with self.engine.connect() as conn:
            return bool(repo.seated_players(conn, table_id)) or (
                repo.latest_round(conn, table_id) is not None
            )

    def _seated(self, table_id: str, player: str) -> bool:
        with self.engine.connect() as conn:
            return repo.seated(conn, table_id, player)

    # ---------------------------------------------------------------- the driver's steps

    async def _tick(self, t: LiveTable, now: int) -> None:
        """Everything due up to ``now`` (lights, window closes, deal, timeouts), committed."""
        if t.round is None or not t.live:
            return
        wake = t.round.next_wakeup_at()
        if wake is not None and wake <= now:
            await self._run(t, lambda r: r.handle(uth.Tick(now)), request=None)

    async def open_next(self, t: LiveTable, players: list[str], now: int) -> None:
        """Open the next round with ``players`` seated (under the table's lock)."""
        previous: dict[str, tuple[uth.Placement, ...]] = {}
        if t.round is not None:
            for i, s in enumerate(t.round.state.seats):
                if bets := t.round.final_bets(i):
                    previous[s.player] = bets
        code = t.table_id.replace("-", "").upper()
        number = next_game_number(now, code, t.row.game_number if t.row else None)
        round_id = "uth-r-" + uuid.uuid4().hex
        rnd = UthRound.open(
            self.config,
            round_id=round_id,
            game_number=number,
            deck_seed=self.base.seed(),
            at=now,
            players=players,
            previous_bets=previous,
        )
        book = uth_records.UthBook(table_id=t.table_id)
        batch = book.translate(rnd.history)
        seed_hex = rnd.state.seed_hex
        row = repo.RoundRow(
            round_id, t.table_id, uth_records.GAME, "", number, repo.OPEN, True, seed_hex, 0
        )
        old = (t.row, t.round, t.book, t.version)
        t.row, t.round, t.book, t.version = row, rnd, book, 0
        try:
            await self._commit(t, batch, None, new_row=row)
        except BaseException:
            t.row, t.round, t.book, t.version = old
            raise
        self.base.metrics.started.labels(uth_records.GAME).inc()

    # ---------------------------------------------------------------------- internals

    async def tx(self, t: LiveTable, write: Callable[[Connection], None], round_id: str) -> None:
        """``write`` in one transaction checking ``t``'s fence (``partitions`` ownership):
        fenced → ABORTED, nothing stored, the table dropped here."""
        try:
            await self.base._tx(write, round_id, t.fence)
        except TableMoved:
            self.moved(t)
            raise

    async def refuse(self, t: LiveTable, store: Callable[[], _T]) -> _T:
        """Run ``store`` (a write under ``t``'s fence) in a worker thread; its answer."""
        try:
            return await asyncio.to_thread(store)
        except TableMoved:
            self.moved(t)
            raise

    async def _run(
        self,
        t: LiveTable,
        step: Callable[[UthRound], object],
        *,
        request: Request | None,
        by: str = "",
    ) -> None:
        if t.broken:
            raise TryAgain(f"UTH table {t.table_id} is being repaired ({t.broken}); retry")
        rnd, book = t.round, t.book
        assert rnd is not None and book is not None
        start = len(rnd.history)
        try:
            step(rnd)
        except Rejected as rej:
            if len(rnd.history) > start:
                await self._restore(t)
            if request is not None:
                who, rid, rpc = request
                store = functools.partial(self.base._refuse, who, rid, rpc, book.round_id, rej)
                await self.refuse(t, functools.partial(store, t.fence))
            raise
        events = rnd.history[start:]
        if not events:
            return
        try:
            batch = book.translate(events, request_id=request[1] if request else "", voided_by=by)
            outcomes = await reserve_bets(self, t, batch.new_bets)
            if errors := [o for o in outcomes if o is not None]:
                await undo_reservations(self, book.round_id, batch.new_bets, outcomes)
                raise next((e for e in errors if isinstance(e, NotNow)), errors[0])
            await self._commit(t, batch, request)
        except BaseException as exc:
            await self.restore_after(t, exc)
            raise

    async def _commit(
        self,
        t: LiveTable,
        batch: uth_records.Batch,
        request: Request | None,
        *,
        new_row: repo.RoundRow | None = None,
    ) -> None:
        await self._commit_parts(t, [(batch, request)], new_row=new_row)

    async def _commit_parts(
        self,
        t: LiveTable,
        parts: list[tuple[uth_records.Batch, Request | None]],
        *,
        new_row: repo.RoundRow | None = None,
    ) -> None:
        """ONE transaction: each part's events appended in order (with its request as the
        causation) and then projected together (the round row, its UTH players:
        ``journal.round_appends``; ``new_row``'s withheld deck seed passed along), the bets
        placed, the wallet calls owed, the requests."""
        assert t.book is not None
        t.check_owned()
        round_id, version = t.book.round_id, t.version
        status = next((b.status for b, _ in reversed(parts) if b.status is not None), None)
        new_version = version + sum(len(b.msgs) for b, _ in parts)

        last = [t.last_event_id]

        def write(conn: Connection) -> None:
            at, last[0] = version, t.last_event_id
            seed = new_row.seed_hex if new_row is not None else None
            with round_appends(self.store, conn, round_id, seed_hex=seed) as journal:
                for batch, request in parts:
                    if request is not None:  # a call's: its request id, the call's correlation
                        cause, chain = request[1], ""
                    else:  # the table's clock: the round's chain, after the event it follows
                        cause, chain = last[0], round_id
                    stored = journal.append(
                        at, batch.msgs, correlation_id=chain, causation_id=cause
                    )
                    if stored:
                        last[0] = stored[-1].event_id
                    at += len(batch.msgs)
            repo.mark_placed(conn, [b.bet_id for batch, _ in parts for b in batch.new_bets])
            owed = {op: how for batch, _ in parts for op, how in batch.ops.items()}
            if status == repo.VOIDED:
                owed = {b.bet_id: repo.VOID for b in repo.bets(conn, round_id)}
            elif status == repo.SETTLED:
                for b in repo.bets(conn, round_id):
                    owed.setdefault(b.bet_id, repo.VOID)  # no result (an orphan): refunded
            repo.owe(conn, owed)
            for _, request in parts:
                if request is not None:
                    who, rid, rpc = request
                    repo.insert_request(conn, who, rid, repo.RequestRow(rpc, round_id, "OK", ""))

        await self.tx(t, write, round_id)
        t.version, t.last_event_id = new_version, last[0]
        if status is not None and t.row is not None:
            t.row = dataclasses.replace(t.row, status=status)
        game = uth_records.GAME
        m = self.base.metrics
        for batch, _ in parts:
            m.handle.labels(game).inc(batch.staked)  # UTH: counted once the stakes are final
            m.returned.labels(game).inc(batch.returned)
        if status == repo.SETTLED and any(b.settled_seats for b, _ in parts):
            m.settled.labels(game).inc()
        elif status == repo.VOIDED:
            m.voided.labels(game).inc()
        t.notify()
        if status is not None:
            t.kick.set()
            # a whole table's settlement: the owed calls run outside the table's lock (they
            # are stored; the background loop retries what fails)
            self.in_background(self.base.run_owed(round_id), name=f"uth-owed-{round_id}")
        elif any(b.ops for b, _ in parts):
            await self.base.run_owed(round_id)  # UNDO / CLEAR: done when the call answers


__all__ = ["BETTING", "LiveTable", "UthTables", "pause_ms", "uth_config"]
