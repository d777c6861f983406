"""gRPC servicer of RegistrationService: protobuf in/out, auth and error mapping only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from electric.common.v1 import money_pb2, pagination_pb2
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric_platform import FailedPrecondition, Role, current_principal, require_player
from electric_platform.errors import InvalidArgument, ServiceError
from electric_platform.paging import next_page_token, page_window
from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy import Engine

from electric_registration.handlers import DEFAULT_MULTIPLIERS
from electric_registration.store import repo

_STATUS = {
    "registering": registration_pb2.TABLE_STATUS_REGISTERING,
    "running": registration_pb2.TABLE_STATUS_RUNNING,
    "finished": registration_pb2.TABLE_STATUS_FINISHED,
    "cancelled": registration_pb2.TABLE_STATUS_CANCELLED,
}
_SPEED = {"hyper_turbo": registration_pb2.GAME_SPEED_HYPER_TURBO}
#: Roles that may act for a named player (besides the player themself).
_ON_BEHALF = (Role.SERVICE, Role.OPERATOR, Role.AUDITOR)
#: How often WatchMyTables re-reads the player's tables.
WATCH_POLL_SECONDS = 0.5


def _usd(cents: int) -> money_pb2.Money:
    return money_pb2.Money(cents=cents, currency="USD")


def _player_for(requested: str) -> str:
    """The player a read is about: ``requested``, or the calling player when empty."""
    principal = current_principal()
    if not requested:
        if principal.role is not Role.PLAYER:
            raise InvalidArgument(f"player_id is required for role {principal.role.value!r}")
        return principal.subject
    require_player(requested, also=_ON_BEHALF)
    return requested


def _my_table(row: repo.MyTableRow) -> registration_pb2.MyTable:
    status = _STATUS.get(row.status, registration_pb2.TABLE_STATUS_UNSPECIFIED)
    text = (
        f"Waiting {row.players_registered}/{row.seats}"
        if row.status == "registering"
        else row.status.capitalize()
    )
    return registration_pb2.MyTable(
        table_id=row.table_id,
        table_name=row.table_name,
        tier_id=row.tier_id,
        buy_in=_usd(row.buy_in_cents),
        players_registered=row.players_registered,
        seats=row.seats,
        game_speed=registration_pb2.GAME_SPEED_HYPER_TURBO,
        prize_pool=_usd(row.prize_pool_cents),
        multiplier=row.multiplier,
        status=status,
        my_entries=[registration_pb2.Entry(entry_id=e) for e in row.entry_ids],
        status_text=text,
    )


class RegistrationApi(registration_pb2_grpc.RegistrationServiceServicer):
    """RegistrationService over registration's own database."""

    def __init__(self, engine: Engine, stopping: asyncio.Event) -> None:
        self._engine = engine
        self._stopping = stopping

    def _read_tiers(self) -> list[repo.TierRow]:
        with self._engine.connect() as conn:
            return repo.list_tiers(conn)

    async def ListLobby(
        self, request: registration_pb2.ListLobbyRequest, context: Any
    ) -> registration_pb2.ListLobbyResponse:
        """Any authenticated caller may read the lobby."""
        current_principal()
        rows = await asyncio.to_thread(self._read_tiers)
        low, high = min(DEFAULT_MULTIPLIERS), max(DEFAULT_MULTIPLIERS)
        return registration_pb2.ListLobbyResponse(
            tiers=[
                registration_pb2.LobbyTier(
                    tier_id=r.tier_id,
                    name=r.name,
                    buy_in=_usd(r.buy_in_cents),
                    rake=_usd(r.rake_cents),
                    seats=r.seats,
                    tables_filling=r.tables_filling,
                    players_waiting=r.players_waiting,
                    open_tables=r.open_tables,
                    game_speed=_SPEED.get(r.game_speed, registration_pb2.GAME_SPEED_UNSPECIFIED),
                    starting_stack=r.starting_stack,
                    min_prize_pool=_usd(low * r.buy_in_cents),
                    max_prize_pool=_usd(high * r.buy_in_cents),
                )
                for r in rows
            ]
        )

    def _read_my_tables(
        self, player: str, include_finished: bool, offset: int, limit: int
    ) -> list[repo.MyTableRow]:
        with self._engine.connect() as conn:
            return repo.my_tables(
                conn, player, include_finished=include_finished, offset=offset, limit=limit
            )

    async def ListMyTables(
        self, request: registration_pb2.ListMyTablesRequest, context: Any
    ) -> registration_pb2.ListMyTablesResponse:
        """A player lists their own tables; services, operators and auditors name one."""
        player = _player_for(request.player_id)
        offset, size = page_window(request.page.page_size, request.page.page_token)
        rows = await asyncio.to_thread(
            self._read_my_tables, player, request.include_finished, offset, size + 1
        )
        return registration_pb2.ListMyTablesResponse(
            tables=[_my_table(r) for r in rows[:size]],
            page=pagination_pb2.PageResponse(
                next_page_token=next_page_token(offset, size, len(rows))
            ),
        )

    async def WatchMyTables(
        self, request: registration_pb2.WatchMyTablesRequest, context: Any
    ) -> AsyncIterator[registration_pb2.WatchMyTablesResponse]:
        """Snapshot now, then on every change; ends cleanly when the server shuts down."""
        player = _player_for(request.player_id)
        last: registration_pb2.WatchMyTablesResponse | None = None
        while True:
            rows = await asyncio.to_thread(self._read_my_tables, player, False, 0, 1000)
            snapshot = registration_pb2.WatchMyTablesResponse(tables=[_my_table(r) for r in rows])
            if last is None or list(snapshot.tables) != list(last.tables):
                last = snapshot
                out = registration_pb2.WatchMyTablesResponse()
                out.CopyFrom(snapshot)
                as_of = Timestamp()
                as_of.GetCurrentTime()
                out.as_of.CopyFrom(as_of)
                yield out
            try:
                await asyncio.wait_for(self._stopping.wait(), timeout=WATCH_POLL_SECONDS)
                return  # server shutting down: end the stream with OK
            except TimeoutError:
                continue

    async def Register(
        self, request: registration_pb2.RegisterRequest, context: Any
    ) -> registration_pb2.RegisterResponse:
        """Not available in the walking skeleton (issue 7)."""
        raise _not_yet("Register")

    async def Unregister(
        self, request: registration_pb2.UnregisterRequest, context: Any
    ) -> registration_pb2.UnregisterResponse:
        """Not available in the walking skeleton (issue 7)."""
        raise _not_yet("Unregister")


def _not_yet(rpc: str) -> ServiceError:
    import grpc

    return FailedPrecondition(
        f"{rpc} is not implemented yet in this build (walking skeleton)",
        code=grpc.StatusCode.UNIMPLEMENTED,
    )
