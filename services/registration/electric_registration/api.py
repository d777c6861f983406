"""gRPC servicer of RegistrationService: protobuf in/out, auth and error mapping only."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

from electric.common.v1 import pagination_pb2
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric_domain import lobby
from electric_domain.tournament import TournamentConfig
from electric_eventlog import EventStore, utc_now
from electric_eventlog.engine import reading
from electric_platform import Role, correlation_id, current_principal, require_player
from electric_platform.auth import require_role
from electric_platform.errors import InvalidArgument, PermissionDenied
from electric_platform.paging import next_page_token, page_window
from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy import Engine

from electric_registration import cancellation, profiles, views
from electric_registration.bars import Bars
from electric_registration.errors import service_error
from electric_registration.notify import Notifier, Notify
from electric_registration.registrar import Registrar
from electric_registration.store import repo
from electric_registration.wallet_work import WalletWork

#: Roles that may act for a named player (besides the player themself).
_ON_BEHALF = (Role.SERVICE, Role.OPERATOR, Role.AUDITOR)
#: Roles that may register or unregister for a named player.
_ACT_FOR = (Role.SERVICE, Role.OPERATOR)
#: WatchMyTables wakes on every change notified in this process, and re-reads at least this
#: often (changes made by another instance, missed notifications).
WATCH_POLL_SECONDS = 2.0
#: WatchMyTables re-reads at most this often: a change coming sooner is folded into the
#: next read. Every action at a player's table wakes the stream (whose turn, stacks); without
#: this floor a player at a busy table cost a query per action, the registration service's
#: largest item under the issue 16 load (docs/registration.md).
WATCH_MIN_INTERVAL_SECONDS = 0.25
#: WatchMyTables' default view keeps a table this long after it finished or was cancelled.
RECENTLY_ENDED = timedelta(minutes=15)
#: Most tables one WatchMyTables snapshot carries.
WATCH_LIMIT = 500
_FILTER_STATUSES: dict[int, tuple[str, ...]] = {
    registration_pb2.MY_TABLES_FILTER_ACTIVE: repo.ACTIVE_STATUSES,
    registration_pb2.MY_TABLES_FILTER_FINISHED: repo.ENDED_STATUSES,
    registration_pb2.MY_TABLES_FILTER_ALL: repo.ACTIVE_STATUSES + repo.ENDED_STATUSES,
}


def _player_for(requested: str) -> str:
    """The player a read is about: ``requested``, or the calling player when empty."""
    principal = current_principal()
    if not requested:
        if principal.role is not Role.PLAYER:
            raise InvalidArgument(f"player_id is required for role {principal.role.value!r}")
        return principal.subject
    require_player(requested, also=_ON_BEHALF)
    _check_player_id(requested)
    return requested


def _check_player_id(player_id: str) -> None:
    """A named player id must be well formed (INVALID_ARGUMENT, not echoed)."""
    if not lobby.valid_player_id(player_id):
        raise InvalidArgument("player_id must be 1..100 characters of [A-Za-z0-9._@+=-]")


def _filter(value: int) -> int:
    if value not in registration_pb2.MyTablesFilter.values():
        raise InvalidArgument("status_filter is not a MyTablesFilter value")
    return value


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
        store: EventStore | None = None,
        work: WalletWork | None = None,
        notify: Notify | None = None,
        watch_min_interval: float = WATCH_MIN_INTERVAL_SECONDS,
    ) -> None:
        """``notify``: wakes the streams of players after a change (default the notifier's
        own; with several instances also the peers', :mod:`.peer_wakeups`).
        ``watch_min_interval``: the least time between two reads of one WatchMyTables."""
        self._watch_min_interval = watch_min_interval
        self._engine = engine
        self._stopping = stopping
        self._registrar = registrar
        self._notifier = notifier
        #: The watched players' bars: shared by a player's watchers, moved on by the tables'
        #: progress with no read (issue 26, :mod:`.bars`).
        self.bars = Bars(notifier, config, poll_seconds=WATCH_POLL_SECONDS)
        self._notify = notify or notifier.notify
        self._config = config
        self._store = store or registrar.store
        self._work = work or registrar.work

    def _read_tiers(self) -> tuple[list[repo.TierRow], dict[str, list[repo.RunningTableRow]]]:
        with self._engine.connect() as conn:
            return repo.list_tiers(conn), repo.running_tables(conn)

    async def ListLobby(
        self, request: registration_pb2.ListLobbyRequest, context: Any
    ) -> registration_pb2.ListLobbyResponse:
        """Any authenticated caller may read the lobby."""
        current_principal()
        rows, running = await asyncio.to_thread(self._read_tiers)
        return registration_pb2.ListLobbyResponse(
            tiers=[views.lobby_tier(r, self._config, running.get(r.tier_id, ())) for r in rows]
        )

    def _read_my_tables(
        self,
        player: str,
        offset: int,
        limit: int,
        *,
        statuses: tuple[str, ...],
        ended_since: datetime | None = None,
    ) -> list[repo.MyTableRow]:
        # One statement (tables, entries and progress joined): no transaction needed.
        with reading(self._engine) as conn:
            return repo.my_tables(
                conn,
                player,
                offset=offset,
                limit=limit,
                statuses=statuses,
                ended_since=ended_since,
            )

    async def ListMyTables(
        self, request: registration_pb2.ListMyTablesRequest, context: Any
    ) -> registration_pb2.ListMyTablesResponse:
        """A player lists their own tables; services, operators and auditors name one."""
        player = _player_for(request.player_id)
        chosen = _filter(request.status_filter)
        if chosen == registration_pb2.MY_TABLES_FILTER_UNSPECIFIED:
            chosen = (
                registration_pb2.MY_TABLES_FILTER_ALL
                if request.include_finished
                else registration_pb2.MY_TABLES_FILTER_ACTIVE
            )
        scope = f"registration.ListMyTables:{player}:{chosen}"
        offset, size = page_window(request.page.page_size, request.page.page_token, scope=scope)
        rows = await asyncio.to_thread(
            self._read_my_tables, player, offset, size + 1, statuses=_FILTER_STATUSES[chosen]
        )
        return registration_pb2.ListMyTablesResponse(
            tables=[views.my_table(r, self._config) for r in rows[:size]],
            page=pagination_pb2.PageResponse(
                next_page_token=next_page_token(offset, size, len(rows), scope=scope)
            ),
        )

    async def WatchMyTables(
        self, request: registration_pb2.WatchMyTablesRequest, context: Any
    ) -> AsyncIterator[registration_pb2.WatchMyTablesResponse]:
        """Snapshot now, then on every change; ends cleanly when the server shuts down."""
        player = _player_for(request.player_id)
        chosen = _filter(request.status_filter)
        recent = chosen == registration_pb2.MY_TABLES_FILTER_UNSPECIFIED
        statuses = repo.ACTIVE_STATUSES if recent else _FILTER_STATUSES[chosen]
        wake = self._notifier.subscribe(player)
        loop = asyncio.get_running_loop()
        try:
            last: list[registration_pb2.MyTable] | None = None
            read_at: float | None = None
            while not self._stopping.is_set():
                if (
                    read_at is not None
                    and (rest := read_at + self._watch_min_interval - loop.time()) > 0
                ):
                    # Changes in the meantime set ``wake`` again and are read below.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stopping.wait(), timeout=rest)
                    if self._stopping.is_set():
                        return
                read_at = loop.time()
                wake.clear()
                # One bar per player and filter, shared by its watchers: moved on by the
                # tables' progress, read again on any other change (bars.py).
                since = utc_now() - RECENTLY_ENDED if recent else None
                tables = await self.bars.tables(
                    (player, statuses, recent),
                    functools.partial(
                        asyncio.to_thread,
                        self._read_my_tables,
                        player,
                        0,
                        WATCH_LIMIT,
                        statuses=statuses,
                        ended_since=since,
                    ),
                )
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
            if self._notifier.unsubscribe(player, wake):
                self.bars.drop(player)

    async def GetPlayerSettings(
        self, request: registration_pb2.GetPlayerSettingsRequest, context: Any
    ) -> registration_pb2.GetPlayerSettingsResponse:
        """Players read their own; services, operators and auditors any player's."""
        player = _player_for(request.player_id)
        got = await asyncio.to_thread(profiles.get_settings, self._engine, player)
        return registration_pb2.GetPlayerSettingsResponse(
            settings=views.settings(got.settings, got.updated_at)
        )

    async def UpdatePlayerSettings(
        self, request: registration_pb2.UpdatePlayerSettingsRequest, context: Any
    ) -> registration_pb2.UpdatePlayerSettingsResponse:
        """Players update their own; operators any player's."""
        principal = current_principal()
        if request.player_id:
            require_player(request.player_id, also=(Role.OPERATOR,))
            _check_player_id(request.player_id)
            player = request.player_id
        elif principal.role is Role.PLAYER:
            player = principal.subject
        else:
            raise InvalidArgument(f"player_id is required for role {principal.role.value!r}")
        if request.expected_version < 0:
            raise InvalidArgument("expected_version must not be negative")
        update = lobby.SettingsUpdate(
            expected_version=request.expected_version,
            **{
                name: getattr(request, name)
                for name in ("display_name", *lobby.SWITCHES)
                if request.HasField(name)  # type: ignore[arg-type]
            },
        )
        try:
            got, changed = await asyncio.to_thread(
                profiles.update_settings,
                self._engine,
                self._store,
                player,
                update,
                correlation_id=correlation_id(),
            )
        except lobby.LobbyError as err:
            raise service_error(err) from err
        return registration_pb2.UpdatePlayerSettingsResponse(
            settings=views.settings(got.settings, got.updated_at), changed=changed
        )

    async def CancelTable(
        self, request: registration_pb2.CancelTableRequest, context: Any
    ) -> registration_pb2.CancelTableResponse:
        """Operators cancel a table that has not started (idempotent)."""
        principal = require_role(Role.OPERATOR)
        if not request.table_id:
            raise InvalidArgument("table_id is required")
        if len(request.table_id) > 64:
            raise InvalidArgument("table_id is longer than 64 characters")
        try:
            done = await asyncio.to_thread(
                cancellation.cancel_table,
                self._store,
                self._config,
                table_id=request.table_id,
                reason=cancellation.OPERATOR,
                detail=request.reason[:200],
                cancelled_by=principal.subject,
                correlation_id=correlation_id(),
            )
        except lobby.LobbyError as err:
            raise service_error(err) from err
        if done.cancelled_now:
            self._notify(done.players)
            await self._work.run_table(request.table_id)
        return registration_pb2.CancelTableResponse(
            table_id=request.table_id,
            status=registration_pb2.TABLE_STATUS_CANCELLED,
            cancelled_now=done.cancelled_now,
            reason=done.reason,
        )

    async def Register(
        self, request: registration_pb2.RegisterRequest, context: Any
    ) -> registration_pb2.RegisterResponse:
        """A player registers themself; services and operators name the player."""
        principal = current_principal()
        if request.player_id:
            require_player(request.player_id, also=_ACT_FOR)
            _check_player_id(request.player_id)
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
            entries=[views.entry(e) for e in entries], replayed=replayed
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
            if player:
                _check_player_id(player)
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
        return registration_pb2.UnregisterResponse(entry=views.entry(entry))
