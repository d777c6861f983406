"""gRPC servicer of TableService: protobuf in/out, auth and error mapping only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc
from electric.common.v1 import errors_pb2, money_pb2
from electric.table.v1 import table_pb2, table_pb2_grpc
from electric_platform import InvalidArgument, NotFound, ServiceError, current_principal
from sqlalchemy import Engine

from electric_table.store import repo

_STATUS = {
    "starting": table_pb2.TABLE_STATUS_STARTING,
    "running": table_pb2.TABLE_STATUS_RUNNING,
    "finished": table_pb2.TABLE_STATUS_FINISHED,
}
#: How often WatchTable re-reads the table (skeleton; issue 7 pushes on events instead).
WATCH_POLL_SECONDS = 0.5


def _usd(cents: int) -> money_pb2.Money:
    return money_pb2.Money(cents=cents, currency="USD")


def _view(row: repo.TableRow, caller: str) -> table_pb2.TableView:
    your_seat = next((s.seat for s in row.seats if s.player_id == caller), 0)
    return table_pb2.TableView(
        table_id=row.table_id,
        table_name=row.table_name,
        status=_STATUS.get(row.status, table_pb2.TABLE_STATUS_UNSPECIFIED),
        version=row.stream_version,
        seats=[
            table_pb2.SeatView(
                seat=s.seat,
                player_id=s.player_id,
                display_name=s.display_name,
                stack=s.stack,
            )
            for s in row.seats
        ],
        your_seat=your_seat,
        multiplier=row.multiplier,
        prize_pool=_usd(row.prize_pool_cents),
        buy_in=_usd(row.buy_in_cents),
    )


def _not_found(table_id: str) -> NotFound:
    return NotFound(
        f"table {table_id!r} not found: no tournament with this id was started on this "
        "table service",
        detail=errors_pb2.ResourceInfo(resource_type="table", resource_id=table_id),
    )


class TableApi(table_pb2_grpc.TableServiceServicer):
    """TableService over the table service's read model."""

    def __init__(self, engine: Engine, stopping: asyncio.Event) -> None:
        self._engine = engine
        self._stopping = stopping

    def _read(self, table_id: str) -> repo.TableRow | None:
        with self._engine.connect() as conn:
            return repo.get_table(conn, table_id)

    async def _load(self, table_id: str) -> repo.TableRow:
        if not table_id:
            raise InvalidArgument("table_id is required")
        row = await asyncio.to_thread(self._read, table_id)
        if row is None:
            raise _not_found(table_id)
        return row

    async def GetTable(
        self, request: table_pb2.GetTableRequest, context: Any
    ) -> table_pb2.GetTableResponse:
        """Any authenticated caller; the view is the caller's own (hole cards: issue 7)."""
        caller = current_principal().subject
        row = await self._load(request.table_id)
        return table_pb2.GetTableResponse(table=_view(row, caller))

    async def WatchTable(
        self, request: table_pb2.WatchTableRequest, context: Any
    ) -> AsyncIterator[table_pb2.WatchTableResponse]:
        """Current view, then one per change; ends when the server shuts down."""
        caller = current_principal().subject
        row = await self._load(request.table_id)
        version = -1
        while True:
            if row.stream_version != version:
                version = row.stream_version
                yield table_pb2.WatchTableResponse(table=_view(row, caller))
            try:
                await asyncio.wait_for(self._stopping.wait(), timeout=WATCH_POLL_SECONDS)
                return
            except TimeoutError:
                row = await self._load(request.table_id)

    async def Act(self, request: table_pb2.ActRequest, context: Any) -> table_pb2.ActResponse:
        """Not available in the walking skeleton (issue 7)."""
        raise await self._unimplemented("Act", request.table_id)

    async def SetPreAction(
        self, request: table_pb2.SetPreActionRequest, context: Any
    ) -> table_pb2.SetPreActionResponse:
        """Not available in the walking skeleton (issue 7)."""
        raise await self._unimplemented("SetPreAction", request.table_id)

    async def ClearPreAction(
        self, request: table_pb2.ClearPreActionRequest, context: Any
    ) -> table_pb2.ClearPreActionResponse:
        """Not available in the walking skeleton (issue 7)."""
        raise await self._unimplemented("ClearPreAction", request.table_id)

    async def SitOut(
        self, request: table_pb2.SitOutRequest, context: Any
    ) -> table_pb2.SitOutResponse:
        """Not available in the walking skeleton (issue 7)."""
        raise await self._unimplemented("SitOut", request.table_id)

    async def SitIn(self, request: table_pb2.SitInRequest, context: Any) -> table_pb2.SitInResponse:
        """Not available in the walking skeleton (issue 7)."""
        raise await self._unimplemented("SitIn", request.table_id)

    async def _unimplemented(self, rpc: str, table_id: str) -> ServiceError:
        await self._load(table_id)  # unknown tables are still NOT_FOUND
        return ServiceError(
            f"{rpc} is not implemented yet in this build (walking skeleton)",
            code=grpc.StatusCode.UNIMPLEMENTED,
        )
