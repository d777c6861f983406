"""gRPC servicer of RegistrationService: protobuf in/out, auth and error mapping only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from electric.common.v1 import pagination_pb2, tournament_pb2
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric_clients.convert import timestamp, usd
from electric_domain import lobby
from electric_domain.tournament import TournamentConfig
from electric_platform import Role, correlation_id, current_principal, require_player
from electric_platform.errors import InvalidArgument, PermissionDenied
from electric_platform.paging import next_page_token, page_window
from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy import Engine

from electric_registration.errors import service_error
from electric_registration.notify import Notifier
from electric_registration.registrar import Registrar
from electric_registration.store import repo

_STATUS = {
    "registering": registration_pb2.TABLE_STATUS_REGISTERING,
    "filled": registration_pb2.TABLE_STATUS_RUNNING,
    "running": registration_pb2.TABLE_STATUS_RUNNING,
    "finished": registration_pb2.TABLE_STATUS_FINISHED,
    "cancelled": registration_pb2.TABLE_STATUS_CANCELLED,
}
_SPEED = {"hyper_turbo": registration_pb2.GAME_SPEED_HYPER_TURBO}
#: Roles that may act for a named player (besides the player themself).
_ON_BEHALF = (Role.SERVICE, Role.OPERATOR, Role.AUDITOR)
#: Roles that may register or unregister for a named player.
_ACT_FOR = (Role.SERVICE, Role.OPERATOR)
#: WatchMyTables wakes on every change notified in this process, and re-reads at least this
#: often (changes made by another instance, missed notifications).
WATCH_POLL_SECONDS = 2.0
_ENTRY_STATUS = {
    "reserved": registration_pb2.ENTRY_STATUS_RESERVED,
    "confirmed": registration_pb2.ENTRY_STATUS_CONFIRMED,
    "unregistered": registration_pb2.ENTRY_STATUS_UNREGISTERED,
}


def _player_for(requested: str) -> str:
    """The player a read is about: ``requested``, or the calling player when empty."""
    principal = current_principal()
    if not requested:
        if principal.role is not Role.PLAYER:
            raise InvalidArgument(f"player_id is required for role {principal.role.value!r}")
        return principal.subject
    require_player(requested, also=_ON_BEHALF)
    return requested


def _entry(e: repo.EntryRow) -> registration_pb2.Entry:
    return registration_pb2.Entry(
        entry_id=e.entry_id,
        player_id=e.player_id,
        table_id=e.table_id,
        tier_id=e.tier_id,
        seat=e.seat,
        buy_in=usd(e.buy_in_cents),
        status=_ENTRY_STATUS.get(e.status, registration_pb2.ENTRY_STATUS_UNSPECIFIED),
        wallet_transfer_id=e.wallet_transfer_id,
        registered_at=timestamp(e.registered_at),
    )


def _status_text(row: repo.MyTableRow) -> str:
    if row.status == "registering":
        return f"Waiting {row.players_registered}/{row.seats}"
    if row.status == "filled":
        return "Starting"
    if row.status == "running":
        return f"Hand {row.current_hand_number}" if row.current_hand_number else "Starting"
    return row.status.capitalize()


def _my_table(row: repo.MyTableRow, multipliers: tuple[int, ...]) -> registration_pb2.MyTable:
    status = _STATUS.get(row.status, registration_pb2.TABLE_STATUS_UNSPECIFIED)
    drawn = row.multiplier > 0
    low = row.prize_pool_cents if drawn else min(multipliers) * row.buy_in_cents
    high = row.prize_pool_cents if drawn else max(multipliers) * row.buy_in_cents
    return registration_pb2.MyTable(
        table_id=row.table_id,
        table_name=row.table_name,
        tier_id=row.tier_id,
        buy_in=usd(row.buy_in_cents),
        players_registered=row.players_registered,
        seats=row.seats,
        game_speed=registration_pb2.GAME_SPEED_HYPER_TURBO,
        prize_pool=usd(row.prize_pool_cents),
        multiplier=row.multiplier,
        positions_paid=row.positions_paid,
        payouts=[
            tournament_pb2.PrizeShare(place=i + 1, amount=usd(c))
            for i, c in enumerate(row.payouts_cents)
        ],
        status=status,
        my_entries=[_entry(e) for e in row.entries],
        current_hand_number=row.current_hand_number,
        status_text=_status_text(row),
        min_prize_pool=usd(low),
        max_prize_pool=usd(high),
        multiplier_seed_commitment=row.commitment,
        multiplier_seed=row.seed_hex,
        paytable_version=row.paytable_version,
    )


class RegistrationApi(registration_pb2_grpc.RegistrationServiceServicer):
    """RegistrationService over registration's own database."""

    def __init__(
        self,
        engine: Engine,
        stopping: asyncio.Event,
        *,
        config: TournamentConfig,
        registrar: Registrar,
        notifier: Notifier,
    ) -> None:
        self._engine = engine
        self._stopping = stopping
        self._registrar = registrar
        self._notifier = notifier
        self._multipliers = tuple(e.multiplier for e in config.pay_table.entries)
        self._config = config

    def _read_tiers(self) -> list[repo.TierRow]:
        with self._engine.connect() as conn:
            return repo.list_tiers(conn)

    async def ListLobby(
        self, request: registration_pb2.ListLobbyRequest, context: Any
    ) -> registration_pb2.ListLobbyResponse:
        """Any authenticated caller may read the lobby."""
        current_principal()
        rows = await asyncio.to_thread(self._read_tiers)
        low, high = min(self._multipliers), max(self._multipliers)
        return registration_pb2.ListLobbyResponse(
            tiers=[
                registration_pb2.LobbyTier(
                    tier_id=r.tier_id,
                    name=r.name,
                    buy_in=usd(r.buy_in_cents),
                    rake=usd(r.rake_cents),
                    seats=r.seats,
                    tables_filling=r.tables_filling,
                    players_waiting=r.players_waiting,
                    open_tables=r.open_tables,
                    game_speed=_SPEED.get(r.game_speed, registration_pb2.GAME_SPEED_UNSPECIFIED),
                    starting_stack=r.starting_stack,
                    min_prize_pool=usd(low * r.buy_in_cents),
                    max_prize_pool=usd(high * r.buy_in_cents),
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
            tables=[_my_table(r, self._multipliers) for r in rows[:size]],
            page=pagination_pb2.PageResponse(
                next_page_token=next_page_token(offset, size, len(rows))
            ),
        )

    async def WatchMyTables(
        self, request: registration_pb2.WatchMyTablesRequest, context: Any
    ) -> AsyncIterator[registration_pb2.WatchMyTablesResponse]:
        """Snapshot now, then on every change; ends cleanly when the server shuts down."""
        player = _player_for(request.player_id)
        wake = self._notifier.subscribe(player)
        try:
            last: list[registration_pb2.MyTable] | None = None
            while not self._stopping.is_set():
                wake.clear()
                rows = await asyncio.to_thread(self._read_my_tables, player, False, 0, 1000)
                tables = [_my_table(r, self._multipliers) for r in rows]
                if last is None or tables != last:
                    last = tables
                    as_of = Timestamp()
                    as_of.GetCurrentTime()
                    yield registration_pb2.WatchMyTablesResponse(tables=tables, as_of=as_of)
                waiters = [
                    asyncio.ensure_future(wake.wait()),
                    asyncio.ensure_future(self._stopping.wait()),
                ]
                try:
                    await asyncio.wait(
                        waiters, timeout=WATCH_POLL_SECONDS, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    for w in waiters:
                        w.cancel()
        finally:
            self._notifier.unsubscribe(player, wake)

    async def Register(
        self, request: registration_pb2.RegisterRequest, context: Any
    ) -> registration_pb2.RegisterResponse:
        """A player registers themself; services and operators name the player."""
        principal = current_principal()
        if request.player_id:
            require_player(request.player_id, also=_ACT_FOR)
            player = request.player_id
        elif principal.role is Role.PLAYER:
            player = principal.subject
        else:
            raise InvalidArgument(f"player_id is required for role {principal.role.value!r}")
        if not request.tier_id:
            raise InvalidArgument("tier_id is required (see ListLobby)")
        if not request.request_id:
            raise InvalidArgument("request_id is required (a client-chosen idempotency key)")
        if len(request.request_id) > 200:
            raise InvalidArgument("request_id is longer than 200 characters")
        try:
            entries, replayed = await self._registrar.register(
                player_id=player,
                request_id=request.request_id,
                tier_id=request.tier_id,
                entries=request.entries,
                correlation_id=correlation_id(),
            )
        except lobby.LobbyError as err:
            raise service_error(err) from err
        return registration_pb2.RegisterResponse(
            entries=[_entry(e) for e in entries], replayed=replayed
        )

    async def Unregister(
        self, request: registration_pb2.UnregisterRequest, context: Any
    ) -> registration_pb2.UnregisterResponse:
        """A player withdraws their own entry; services and operators any entry."""
        principal = current_principal()
        if principal.role is Role.PLAYER:
            if request.player_id and request.player_id != principal.subject:
                raise PermissionDenied(
                    f"player {principal.subject!r} may not act for player {request.player_id!r}"
                )
            may_act_for: str | None = principal.subject
            player = principal.subject
        elif principal.role in _ACT_FOR:
            may_act_for = None
            player = request.player_id
            if not request.entry_id and not player:
                raise InvalidArgument("player_id is required with table_id for this role")
        else:
            raise PermissionDenied(f"role {principal.role.value!r} may not unregister entries")
        if not request.entry_id and not request.table_id:
            raise InvalidArgument("entry_id or table_id is required")
        try:
            entry = await self._registrar.unregister(
                entry_id=request.entry_id,
                table_id=request.table_id,
                player_id=player,
                may_act_for=may_act_for,
                request_id=request.request_id,
                correlation_id=correlation_id(),
            )
        except lobby.LobbyError as err:
            raise service_error(err) from err
        return registration_pb2.UnregisterResponse(entry=_entry(entry))
