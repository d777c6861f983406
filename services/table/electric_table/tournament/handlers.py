"""The table's application service: load the table, let the domain decide, store the result.

Every input — a player command or the driver's ``Tick`` / ``DealHand`` — runs under the
table's ``asyncio.Lock``: the aggregate handles it, the new domain events are mapped to
table events and appended to ``table-<id>`` with the expected version in ONE transaction
together with the command's de-duplication row and the withheld deck seed (both written
here) and the read model (written from the events by the journal's projector).
Only then are watchers notified. If the transaction fails the runtime is rebuilt from the
store, so memory never runs ahead of the log. A refusal is typed by the domain
(`Rejected` subclasses); it is stored with its status (see `errors`) so a retry of the same
request gets the same answer, and re-raised for the edge to map. The handlers' own
failures are typed too (`refusals`); nothing here builds a transport status.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.table.v1 import events_pb2 as tev
from electric_domain.tournament import Rejected, ShowSettings, Tick
from electric_domain.tournament import events as dev
from electric_domain.tournament.events import (
    Act,
    ClearPreAction,
    Command,
    SelectPreAction,
    SitIn,
    SitOut,
)
from electric_eventlog import ConcurrencyError
from electric_eventlog.engine import reading
from electric_eventlog.fencing import FencedError, break_stale_writers, is_lock_timeout
from sqlalchemy import Connection

from electric_table.errors import stored_answer
from electric_table.journal import append_table
from electric_table.refusals import (
    ConcurrentChange,
    NotStored,
    RepeatedRefusal,
    RequestIdReused,
    TableMoved,
)
from electric_table.store import repo
from electric_table.tournament import mapping
from electric_table.tournament.runtime import TableManager, TableRuntime
from electric_table.tournament.tableinfo import RequestContext

log = logging.getLogger(__name__)

#: Default pause between the end of a hand and the next deal (ms); small so bots play fast.
DEFAULT_HAND_PAUSE_MS = 500
HAND_PAUSE_ENV = "ELECTRIC_TABLE_HAND_PAUSE_MS"

#: What a seated player may send (the API maps each RPC to one of these).
PlayerCommand = Act | SelectPreAction | ClearPreAction | SitOut | SitIn


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


class TableHandlers:
    """Commands on live tables (player commands and the driver's time inputs)."""

    def __init__(self, manager: TableManager, *, hand_pause_ms: int = DEFAULT_HAND_PAUSE_MS):
        self.manager = manager
        self.hand_pause_ms = hand_pause_ms

    # ------------------------------------------------------------------ player commands

    async def player_command(
        self,
        rt: TableRuntime,
        key: RequestKey,
        command: PlayerCommand,
        *,
        ctx: RequestContext,
        correlation_id: str = "",
    ) -> None:
        """Run a player's command once per request id (caller: the seated player).

        ``command``'s time is the table's clock when it runs (under the lock); the domain
        checks it (whose turn, the amount, the hand and action it answers). A repeated
        request id answers as the first time (`RepeatedRefusal`: the stored refusal)."""
        async with rt.lock:
            prior = rt.requests.get((key.player_id, key.request_id))
            if prior is not None:
                if prior.rpc != key.rpc:
                    raise RequestIdReused(key.request_id, prior.rpc)
                if prior.code != "OK":
                    raise RepeatedRefusal(prior.code, prior.message)
                return
            await self.catch_up(rt)
            cmd = dataclasses.replace(command, at=self.manager.now_for(rt))
            # Ties the call's access line (its request id) to the command id its events
            # record as their causation id (docs/logging.md).
            log.info(
                "table.command",
                extra={"table_id": rt.table_id, "command_id": key.request_id, "command": key.rpc},
            )
            await self.apply(rt, cmd, ctx=ctx, request=key, correlation_id=correlation_id)

    def show_settings(self, rt: TableRuntime) -> tuple[ShowSettings, ...]:
        """Each seat's latest showdown settings (registration's PlayerSettingsChanged; the
        defaults for a player never heard of), for the next DealHand."""
        players = [s.player_id for s in rt.info.seats]
        with reading(self.manager.engine) as conn:
            known = repo.player_settings(conn, players)
        out = []
        for p in players:
            st = known.get(p, repo.PlayerSettings())
            out.append(ShowSettings(st.muck_winning_hands, st.muck_losing_hands))
        return tuple(out)

    def read_row(self, table_id: str) -> repo.TableRow | None:
        """The read model of ``table_id`` (tables without a playable tournament)."""
        with reading(self.manager.engine) as conn:
            return repo.get_table(conn, table_id)

    # ------------------------------------------------------------------ any command

    async def apply(
        self,
        rt: TableRuntime,
        cmd: Command,
        *,
        ctx: RequestContext | None = None,
        request: RequestKey | None = None,
        correlation_id: str = "",
    ) -> CommandOutcome:
        """Run ``cmd`` (caller holds ``rt.lock``); persist its events; raise on refusal.

        A refusal still persists the catch-up events that preceded it, and the refusal
        itself when ``request`` is given (so a retry gets the same answer)."""
        if rt.stale:  # memory may be ahead of the stream: its driver re-reads it first
            raise NotStored(f"table {rt.table_id} is being reloaded ({rt.stale}); retry")
        refusal: Rejected | None = None
        try:
            events = rt.tournament.handle(cmd)
        except Rejected as rej:
            events, refusal = rej.events, rej
        await self.persist(rt, events, ctx=ctx, request=request, error=refusal, cid=correlation_id)
        if refusal is not None:
            raise refusal
        return CommandOutcome(len(events), rt.version)

    async def catch_up(self, rt: TableRuntime) -> None:
        """Apply everything due by now (levels, 0:00, expired timers); caller holds the lock."""
        t = rt.tournament
        if t.state.finished:
            return
        wake = t.next_wakeup_at()
        now = self.manager.now_for(rt)
        if wake is not None and wake <= now:
            await self.apply(rt, Tick(now))

    async def persist(
        self,
        rt: TableRuntime,
        events: list[Any],
        *,
        ctx: RequestContext | None = None,
        request: RequestKey | None = None,
        error: BaseException | None = None,
        cid: str = "",
    ) -> None:
        """Append ``events`` (already applied to the aggregate) in one transaction."""
        if not events and request is None:
            return
        t = rt.tournament
        mapped = mapping.to_protos(
            events,
            rt.info,
            t.hand_facts(events),
            ctx,
            level_ms=t.state.level_ms,
            multiplier=t.state.multiplier,
            prize_pool_cents=t.state.prize_pool_cents,
            buy_in_cents=t.state.buy_in_cents,
        )
        # Registration's My Tables follows this summary, not the per-action events. It is
        # the append's last event, but for a TournamentFinished: that stays the stream's last.
        progress = t.progress() if mapped else rt.progress
        summary_at: int | None = None
        if progress is not None and progress != rt.progress:
            finishes = isinstance(mapped[-1].message, tev.TournamentFinished)
            summary_at = len(mapped) - 1 if finishes else len(mapped)
            mapped.insert(summary_at, mapping.progress_proto(progress, rt.info))
        expected = rt.version
        new_version = expected + len(mapped)
        manager = self.manager
        # Every event of the table keeps the tournament's correlation id; the cause is the
        # player's command (its request id) or, for the driver's steps (timer expiries,
        # level changes, deals), the stream's latest event (docs/logging.md).
        correlation = rt.correlation_id or cid
        causation = request.request_id if request else rt.last_event_id
        if request is None and rt.turn_cause and any(isinstance(e, dev.TimedOut) for e in events):
            causation = rt.turn_cause  # a timer expiry: caused by what started the turn
        stored: list[Envelope] = []
        code, message = stored_answer(error)

        def write(conn: Connection) -> None:
            if rt.fence is not None:  # partitions ownership: still the owner? (same tx)
                rt.fence.check(conn)
            # The table's own rows first, the append last: the append takes the store's
            # position lock, held until the commit, and every table of the process queues
            # for it. Writing the rows after it held the lock over three more round trips
            # (issue 16: most executor threads were found waiting for that lock). The rows
            # locked here (this table's) are written by this runtime only, under rt.lock;
            # the read model (table_tables, table_seats) is written by append_table's
            # projector from the events, just before it appends them.
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
                    code=code,
                    message=message,
                    stream_version=new_version,
                    at=datetime.now(UTC),
                )
            if mapped:
                stored[:] = append_table(
                    manager.store,
                    conn,
                    rt.table_id,
                    expected,
                    [m.message for m in mapped],
                    correlation_id=correlation,
                    causation_id=causation,
                )

        def tx() -> None:
            with manager.engine.begin() as conn:
                write(conn)

        try:
            await asyncio.to_thread(tx)
        except asyncio.CancelledError:
            # Cancelled mid-write: the driver suspended by a revocation (an eager rebalance,
            # e.g. after another instance's kill -9), or a player's call whose client gave
            # up. The aggregate applied ``events`` but the write's outcome is unknown here:
            # still queued for a worker thread (cancelled with us: never runs), fenced (the
            # partition taken again meanwhile, by this instance too), or committing. A
            # runtime resumed or served as it is would build on events that may be on no
            # stream: its next append passes the expected-version check and the stream skips
            # them (failover e2e: a lost DealHand, then "hand numbers not consecutive").
            rt.fenced = True  # never resumed as it is: rebuilt from its events
            if manager.holds(rt) and not manager.stopping.is_set():
                await manager.reload(rt)  # still served here: re-read before the lock goes
            else:  # suspended or dropped: a command already waiting for the lock must not
                rt.stale = "a write cancelled while the table was not served here"  # go on
            raise
        except FencedError as exc:
            # Ownership moved (this instance was paused or partitioned): nothing was written;
            # stop driving the table here, the new owner carries on (docs/scaling.md).
            log.warning("table.fenced", extra={"table_id": rt.table_id, "error": str(exc)})
            rt.fenced = True  # memory ran ahead of the log: never resumed as it is
            manager.disown_soon(rt)
            raise TableMoved(f"table {rt.table_id} moved to another instance; retry") from exc
        except Exception as exc:
            log.error(
                "table.write_failed",
                extra={"table_id": rt.table_id, "error": f"{type(exc).__name__}: {exc}"},
            )
            if is_lock_timeout(exc):  # a paused writer holds a lock: end its session
                with contextlib.suppress(Exception):  # (the reload below must run)
                    stale = await asyncio.to_thread(break_stale_writers, manager.engine)
                    log.warning("table.stale_writers_ended", extra={"pids": stale})
            await manager.reload(rt)
            if isinstance(exc, ConcurrencyError):
                raise ConcurrentChange(f"table {rt.table_id} changed concurrently; retry") from exc
            raise NotStored(f"table {rt.table_id}: could not store the command; retry") from exc
        for k, m in enumerate(mapped, start=expected + 1):
            rt.story.feed(k, m.message)
        rt.version = new_version
        rt.progress = progress
        if request is not None:
            done = repo.RequestRow(request.rpc, code, message, new_version)
            rt.requests[(request.player_id, request.request_id)] = done
        if stored:
            # The cause of what follows is the table's own latest event, not the summary.
            last = len(stored) - (2 if summary_at == len(stored) - 1 else 1)
            rt.last_event_id = stored[last].event_id
            if any(isinstance(e, dev.TurnStarted) for e in events):
                rt.turn_cause = stored[0].event_id
        manager.metrics.observe(events, t.state.started_at)
        if mapped:
            rt.notify(type(mapped[-1].message).DESCRIPTOR.full_name)
        if t.awaiting_deal() and rt.deal_at is None:
            rt.deal_at = manager.now_for(rt) + self.hand_pause_ms
        rt.kick.set()
