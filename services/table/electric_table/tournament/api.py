"""gRPC servicer of TableService: authentication, protobuf → command, result → protobuf,
nothing more. What happens to a command is decided in `handlers` and the domain, which
also checks it (whose turn, the amount, the hand it answers); `errors` maps what they raise
to statuses (the platform's edge applies it).

Command rules (docs/table-service.md): the caller must hold a seat (PERMISSION_DENIED
otherwise, also when ``seat`` names another seat); ``request_id`` is required and
de-duplicated per (table, player); a command quoting another hand / action sequence than the
current one is FAILED_PRECONDITION with a ``StaleCommand`` detail; bad amounts are
INVALID_ARGUMENT; what the rules forbid is FAILED_PRECONDITION with the engine's reason
(the domain's refusals map to statuses by type, see `errors`). Only what the proto itself
can get wrong (an unknown action, a negative amount, no request id) is refused here.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from electric.common.v1 import errors_pb2
from electric.table.v1 import table_pb2, table_pb2_grpc
from electric_domain.tournament import (
    Act,
    ClearPreAction,
    SelectPreAction,
    SitIn,
    SitOut,
)
from electric_platform import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    Unavailable,
    correlation_id,
    current_principal,
)
from electric_platform.auth import Role

from electric_table.store import repo
from electric_table.tournament.handlers import PlayerCommand, RequestKey, TableHandlers
from electric_table.tournament.mapping import MOVE_FROM_PROTO, PRE_ACTION_FROM_PROTO
from electric_table.tournament.runtime import TableManager, TableRuntime
from electric_table.tournament.story import for_viewer
from electric_table.tournament.tableinfo import CommandKind, RequestContext
from electric_table.tournament.views import build_view, row_view, watch_view

#: How long WatchTable waits for a table that is being started (registration published it,
#: this service has not stored it yet) before answering NOT_FOUND.
DEFAULT_WATCH_START_WAIT_S = 10.0


def _not_found(table_id: str) -> NotFound:
    return NotFound(
        f"table {table_id!r} not found: no tournament with this id was started on this "
        "table service",
        detail=errors_pb2.ResourceInfo(resource_type="table", resource_id=table_id),
    )


class TableApi(table_pb2_grpc.TableServiceServicer):
    """TableService over the live tables of a `TableManager`."""

    def __init__(
        self,
        handlers: TableHandlers,
        stopping: asyncio.Event,
        manager: TableManager,
        *,
        watch_start_wait_s: float = DEFAULT_WATCH_START_WAIT_S,
    ) -> None:
        self._handlers = handlers
        self._stopping = stopping
        self._manager = manager
        self._watch_start_wait_s = watch_start_wait_s

    # ------------------------------------------------------------------ queries

    def _read(self, table_id: str) -> repo.TableRow | None:
        return self._handlers.read_row(table_id)

    async def _find(self, table_id: str) -> TableRuntime | repo.TableRow:
        if not table_id:
            raise InvalidArgument("table_id is required")
        rt = await self._manager.load(table_id)
        if rt is not None:
            return rt
        row = await asyncio.to_thread(self._read, table_id)
        if row is None:
            raise _not_found(table_id)
        return row

    async def _view(self, found: TableRuntime | repo.TableRow, caller: str) -> table_pb2.TableView:
        if isinstance(found, TableRuntime):
            # Under the table's lock: the aggregate may be ahead of the log while a write is
            # in flight; views show only what is stored.
            async with found.lock:
                return build_view(found, caller, self._manager.now_for(found))
        return row_view(found, caller)

    async def GetTable(
        self, request: table_pb2.GetTableRequest, context: Any
    ) -> table_pb2.GetTableResponse:
        """The caller's view (own hole cards only; others' once exposed)."""
        caller = current_principal().subject
        found = await self._find(request.table_id)
        return table_pb2.GetTableResponse(table=await self._view(found, caller))

    async def WatchTable(
        self, request: table_pb2.WatchTableRequest, context: Any
    ) -> AsyncIterator[table_pb2.WatchTableResponse]:
        """The table's story: a snapshot, then every stored event in order as the typed
        `TableEvent` a client animates (per-caller privacy), the snapshot again whenever the
        caller is up to date; resumable from a sequence. Ends after the finished
        tournament's events, or when the server shuts down."""
        caller = current_principal().subject
        table_id = request.table_id
        if not table_id:
            raise InvalidArgument("table_id is required")
        if request.from_sequence < 0:
            raise InvalidArgument("from_sequence must not be negative")
        stop_wait = asyncio.ensure_future(self._stopping.wait())
        try:
            # Subscribe BEFORE looking the table up: a table that exists only as a read-model
            # row (TournamentStarted stored, runtime not loaded yet) is loaded later by the
            # consumer, which notifies this same notifier (the registry is keyed by table id).
            with self._manager.watching(table_id) as notifier:
                found = await self._await_table(table_id, notifier, stop_wait)
                if found is None:
                    return
                while not isinstance(found, TableRuntime):
                    changed = notifier.changed
                    yield table_pb2.WatchTableResponse(
                        table=row_view(found, caller), sequence=found.stream_version
                    )
                    if not await self._next_change(changed, stop_wait):
                        return
                    found = await self._find(table_id)
                async for resp in self._story(found, caller, request.from_sequence, stop_wait):
                    yield resp
        finally:
            stop_wait.cancel()

    async def _await_table(
        self, table_id: str, notifier: Any, stop_wait: asyncio.Future[Any]
    ) -> TableRuntime | repo.TableRow | None:
        """The table, waiting up to ``watch_start_wait_s`` for one that is being started
        (registration published it; the consumer has not stored it yet). NOT_FOUND when it
        does not appear in time; None when the server stops first."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self._watch_start_wait_s
        # The consumer that starts the table wakes ``notifier``; the poll is the fallback and
        # backs off (0.25 s doubling to 2 s): at a fixed 0.25 s, 150 players watching tables
        # being started took the executor threads the consumer needed to start them
        # (Register -> seated 40 s at 50 tables, issue 16, docs/benchmarks.md).
        poll = 0.25
        while True:
            changed = notifier.changed
            try:
                return await self._find(table_id)
            except NotFound:
                left = give_up - loop.time()
                if left <= 0:
                    raise
            change_wait = asyncio.ensure_future(changed.wait())
            await asyncio.wait(
                {change_wait, stop_wait},
                timeout=min(left, poll),
                return_when=asyncio.FIRST_COMPLETED,
            )
            poll = min(poll * 2, 2.0)
            change_wait.cancel()
            if stop_wait.done():
                return None

    async def _story(
        self, rt: TableRuntime, caller: str, from_sequence: int, stop_wait: asyncio.Future[Any]
    ) -> AsyncIterator[table_pb2.WatchTableResponse]:
        """Every event after the cursor, in order (see `WatchTable`)."""
        my = rt.seat_of(caller)
        viewer_seat = rt.info.no(my) if my is not None else 0
        first: table_pb2.WatchTableResponse | None = None
        async with rt.lock:  # only what is stored (see _view)
            story = rt.story
            if from_sequence and story.first_sequence() - 1 <= from_sequence <= story.head:
                cursor = from_sequence
            else:
                cursor = story.head
                view = build_view(rt, caller, self._manager.now_for(rt))
                first = table_pb2.WatchTableResponse(table=view, sequence=cursor)
        if first is not None:
            yield first
            if first.table.status == table_pb2.TABLE_STATUS_FINISHED:
                return
        while True:
            async with rt.lock:
                changed = rt.changed
                items = rt.story.since(cursor)
                view = (
                    watch_view(rt, caller, self._manager.now_for(rt))
                    if items
                    else table_pb2.TableView()
                )
            for i, item in enumerate(items):
                last = i == len(items) - 1
                event = for_viewer(item.event, viewer_seat) if item.event is not None else None
                if event is None and not last:
                    continue
                resp = table_pb2.WatchTableResponse(
                    sequence=item.sequence, event_type=item.event_type
                )
                if event is not None:
                    resp.event.CopyFrom(event)
                if last:
                    resp.table.CopyFrom(view)
                yield resp
            if items:
                cursor = items[-1].sequence
                if view.status == table_pb2.TABLE_STATUS_FINISHED:
                    return
            elif rt.finished:
                return  # resumed at the end of a finished table: nothing more will come
            if self._manager.tables.get(rt.table_id) is not rt:
                # Disowned (its partition moved, or a write was fenced; docs/scaling.md):
                # nothing more comes from here. UNAVAILABLE: the client reconnects (with
                # from_sequence) and reaches the new owner. Checked after sending what the
                # copy still had too: a watcher woken once for its last events and for the
                # move waited on this copy for ever (seen in
                # tests/component/bots/test_bots_table_watch.py).
                raise Unavailable(f"table {rt.table_id} moved to another instance; reconnect")
            if not await self._next_change(changed, stop_wait):
                return

    @staticmethod
    async def _next_change(changed: asyncio.Event, stop_wait: asyncio.Future[Any]) -> bool:
        """Wait for ``changed``; False when the server is stopping first."""
        change_wait = asyncio.ensure_future(changed.wait())
        await asyncio.wait({change_wait, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
        if not change_wait.done():
            change_wait.cancel()
            return False
        return True

    # ------------------------------------------------------------------ commands

    async def _command(
        self,
        *,
        rpc: str,
        table_id: str,
        request_id: str,
        seat_no: int,
        command: Callable[[int], PlayerCommand],
        kind: CommandKind,
    ) -> table_pb2.TableView:
        """Run the caller's ``command(seat)`` at ``table_id``; the caller's view after it."""
        principal = current_principal()
        found = await self._find(table_id)
        if principal.role != Role.PLAYER:
            raise PermissionDenied(
                f"{rpc}: only the seated player may act (caller role {principal.role})"
            )
        if not isinstance(found, TableRuntime):
            if found.status in (repo.TableStatus.STARTING, repo.TableStatus.RUNNING):
                # Live but not loaded here: being started, or its partition moved away from
                # this instance (a stale owner takes nothing back, docs/scaling.md §2).
                raise Unavailable(f"table {table_id} is starting or moving; retry")
            raise FailedPrecondition(f"table {table_id} has no playable tournament")
        rt = found
        seat = rt.seat_of(principal.subject)
        if seat is None:
            raise PermissionDenied(f"{principal.subject} has no seat at table {table_id}")
        if seat_no and seat_no != rt.info.no(seat):
            raise PermissionDenied(
                f"seat {seat_no} is not yours: {principal.subject} sits in seat {rt.info.no(seat)}"
            )
        if not request_id:
            raise InvalidArgument("request_id is required (idempotency key)")
        if len(request_id) > 200:
            raise InvalidArgument("request_id is longer than 200 characters")
        await self._handlers.player_command(
            rt,
            RequestKey(principal.subject, request_id, rpc),
            command(seat),
            ctx=RequestContext(request_id=request_id, seat=seat, kind=kind),
            correlation_id=correlation_id(),
        )
        async with rt.lock:
            return build_view(rt, principal.subject, self._manager.now_for(rt))

    async def Act(self, request: table_pb2.ActRequest, context: Any) -> table_pb2.ActResponse:
        """A betting decision for the caller's seat."""
        move = MOVE_FROM_PROTO.get(request.action)
        if move is None:
            raise InvalidArgument(
                "action must be one of ACTION_TYPE_FOLD, ACTION_TYPE_CHECK, ACTION_TYPE_CALL, "
                "ACTION_TYPE_BET, ACTION_TYPE_RAISE, ACTION_TYPE_ALL_IN"
            )
        if request.amount < 0:
            raise InvalidArgument(f"amount must not be negative, got {request.amount}")
        if move.takes_amount and request.amount <= 0:
            raise InvalidArgument("BET and RAISE need amount: the total street bet after it")

        view = await self._command(
            rpc="Act",
            table_id=request.table_id,
            request_id=request.request_id,
            seat_no=request.seat,
            command=lambda seat: Act(
                seat=seat,
                move=move,
                at=0,  # the table's clock, set when it runs
                amount=request.amount if move.takes_amount else 0,
                hand_no=request.hand_number,
                action_seq=request.action_seq,
            ),
            kind=CommandKind.ACT,
        )
        return table_pb2.ActResponse(table=view)

    async def SetPreAction(
        self, request: table_pb2.SetPreActionRequest, context: Any
    ) -> table_pb2.SetPreActionResponse:
        """Select a pre-turn action for the caller's seat."""
        pre = PRE_ACTION_FROM_PROTO.get(request.pre_action)
        if pre is None:
            raise InvalidArgument("pre_action is required")
        view = await self._command(
            rpc="SetPreAction",
            table_id=request.table_id,
            request_id=request.request_id,
            seat_no=request.seat,
            command=lambda seat: SelectPreAction(
                seat=seat,
                action=pre,
                at=0,
                hand_no=request.hand_number,
                action_seq=request.action_seq,
            ),
            kind=CommandKind.PRE_ACTION,
        )
        return table_pb2.SetPreActionResponse(table=view)

    async def ClearPreAction(
        self, request: table_pb2.ClearPreActionRequest, context: Any
    ) -> table_pb2.ClearPreActionResponse:
        """Unselect the caller's pre-turn action."""
        view = await self._command(
            rpc="ClearPreAction",
            table_id=request.table_id,
            request_id=request.request_id,
            seat_no=request.seat,
            command=lambda seat: ClearPreAction(seat=seat, at=0, hand_no=request.hand_number),
            kind=CommandKind.CLEAR_PRE_ACTION,
        )
        return table_pb2.ClearPreActionResponse(table=view)

    async def SitOut(
        self, request: table_pb2.SitOutRequest, context: Any
    ) -> table_pb2.SitOutResponse:
        """Sit the caller out (they keep posting; auto check/fold)."""
        view = await self._command(
            rpc="SitOut",
            table_id=request.table_id,
            request_id=request.request_id,
            seat_no=request.seat,
            command=lambda seat: SitOut(seat=seat, at=0),
            kind=CommandKind.SIT_OUT,
        )
        return table_pb2.SitOutResponse(table=view)

    async def SitIn(self, request: table_pb2.SitInRequest, context: Any) -> table_pb2.SitInResponse:
        """Bring a sitting-out caller back."""
        view = await self._command(
            rpc="SitIn",
            table_id=request.table_id,
            request_id=request.request_id,
            seat_no=request.seat,
            command=lambda seat: SitIn(seat=seat, at=0),
            kind=CommandKind.SIT_IN,
        )
        return table_pb2.SitInResponse(table=view)
