"""CasinoTableService calls of a UTH table reach its owner (``partitions`` ownership).

As for TableService (``electric_table.routing``): the instance that receives a call for a
UTH table it does not host forwards it to the owner named by the table's fence row
(resource ``casino-table-<id>``, taken under the owner's advertised address) and relays the
answer. Forwarded: PlaceBets, GetCasinoTable, WatchCasinoTable (by table id) and, for UTH
rounds, Decide, AckResult and VoidRound (round id → table through the round row). Served
locally: every THB call (THB rounds need no owner), GetRound and ListUnfinishedRounds (they
read the database), and a call for an unknown table or round (NOT_FOUND here as there).
Statuses as for tables: owner unreachable or table moving → UNAVAILABLE, retry; a
forwarded call never hops twice; a forwarded WatchCasinoTable ends UNAVAILABLE when the
owner drops the table, and the client reconnects.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from electric.table.v1 import casino_pb2
from electric_eventlog import fencing
from google.protobuf.message import Message
from sqlalchemy import Engine

from electric_table.casino import repo
from electric_table.casino.api import CasinoApi
from electric_table.casino.uth_api import is_uth_round
from electric_table.casino.uth_ownership import UthOwnership, uth_resource
from electric_table.casino.uth_tables import UTH_TABLE, UthTables
from electric_table.ownership import PartitionOwnership
from electric_table.routing import R, TableRouter


class CasinoRouter(TableRouter):
    """:class:`TableRouter` for the UTH tables of CasinoTableService."""

    service = "/electric.table.v1.CasinoTableService/"

    def __init__(
        self,
        ownership: PartitionOwnership,
        uth_ownership: UthOwnership,
        uth: UthTables,
        engine: Engine,
        advertised: Any,
        *,
        start_wait_s: float = 10.0,
    ) -> None:
        super().__init__(ownership, engine, advertised, start_wait_s=start_wait_s)
        self.uth_ownership = uth_ownership
        self.uth = uth

    def _owns(self, table_id: str) -> bool:
        # Not a UTH table name: served here (the local answer is INVALID_ARGUMENT).
        return not UTH_TABLE.match(table_id) or self.uth_ownership.owns(table_id)

    def _owner_row(self, table_id: str) -> tuple[str | None, bool]:
        with self.engine.connect() as conn:
            held = fencing.current(conn, uth_resource(table_id))
        exists = held is not None or self.uth._known(table_id)
        return (None if held is None else held[1]), exists

    def _settled(self, table_id: str) -> bool:
        return False  # a live UTH table never finishes: only its owner serves it

    def table_of(self, round_id: str) -> str | None:
        """The UTH table of ``round_id`` (None: not a known UTH round, served here)."""
        if not is_uth_round(round_id):
            return None
        with self.engine.connect() as conn:
            row = repo.get_round(conn, round_id)
        return None if row is None else row.table_id


class RoutedCasinoApi(CasinoApi):
    """CasinoTableService serving the UTH tables this instance owns and THB, and
    forwarding the calls of other instances' UTH tables to their owner."""

    def __init__(self, *args: Any, router: CasinoRouter, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._router = router

    async def _at(
        self, table_id: str | None, method: str, request: Message, response: type[R], context: Any
    ) -> R:
        owner = None if table_id is None else await self._router.route(table_id, context, wait=True)
        if owner is None:
            local: R = await getattr(super(), method)(request, context)
            return local
        return await self._router.unary(
            owner, method, request, response, context, table_id=table_id
        )

    async def _by_round(
        self, round_id: str, method: str, request: Message, response: type[R], context: Any
    ) -> R:
        table_id = await asyncio.to_thread(self._router.table_of, round_id)
        return await self._at(table_id, method, request, response, context)

    async def PlaceBets(
        self, request: casino_pb2.PlaceBetsRequest, context: Any
    ) -> casino_pb2.PlaceBetsResponse:
        """A betting action, carried by the table's owner."""
        return await self._at(
            request.table_id, "PlaceBets", request, casino_pb2.PlaceBetsResponse, context
        )

    async def GetCasinoTable(
        self, request: casino_pb2.GetCasinoTableRequest, context: Any
    ) -> casino_pb2.GetCasinoTableResponse:
        """The caller's view, from the table's owner."""
        return await self._at(
            request.table_id, "GetCasinoTable", request, casino_pb2.GetCasinoTableResponse, context
        )

    async def WatchCasinoTable(
        self, request: casino_pb2.WatchCasinoTableRequest, context: Any
    ) -> AsyncIterator[casino_pb2.WatchCasinoTableResponse]:
        """The caller's views, from the table's owner (UNAVAILABLE when it moves:
        reconnect)."""
        owner = await self._router.route(request.table_id, context, wait=True)
        source = (
            super().WatchCasinoTable(request, context)
            if owner is None
            else self._router.stream(
                owner,
                "WatchCasinoTable",
                request,
                casino_pb2.WatchCasinoTableResponse,
                context,
                request.table_id,
            )
        )
        async for item in source:
            yield item

    async def Decide(
        self, request: casino_pb2.DecideRequest, context: Any
    ) -> casino_pb2.DecideResponse:
        """A decision; a UTH round's at its table's owner."""
        return await self._by_round(
            request.round_id, "Decide", request, casino_pb2.DecideResponse, context
        )

    async def AckResult(
        self, request: casino_pb2.AckResultRequest, context: Any
    ) -> casino_pb2.AckResultResponse:
        """The player saw the result; a UTH round's at its table's owner."""
        return await self._by_round(
            request.round_id, "AckResult", request, casino_pb2.AckResultResponse, context
        )

    async def VoidRound(
        self, request: casino_pb2.VoidRoundRequest, context: Any
    ) -> casino_pb2.VoidRoundResponse:
        """Operator void; a UTH round's at its table's owner."""
        return await self._by_round(
            request.round_id, "VoidRound", request, casino_pb2.VoidRoundResponse, context
        )


__all__ = ["CasinoRouter", "RoutedCasinoApi"]
