"""gRPC servicer of CasinoLobbyService: auth, protobuf in/out and the casino refusals mapped
by type (no SQL, no rules)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from electric.common.v1 import errors_pb2
from electric.registration.v1 import casino_events_pb2 as ev
from electric.registration.v1 import casino_pb2, casino_pb2_grpc
from electric_clients.convert import timestamp, usd
from electric_domain.lobby.casino import (
    CasinoGame,
    NotSeated,
    PrivateTable,
    Session,
    UnknownCasinoTable,
)
from electric_domain.lobby.casino_lobby import GameLine
from electric_platform import Role, current_principal, require_player
from electric_platform.errors import (
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    PermissionDenied,
)

from electric_registration.casino.lobby import CasinoLobby

T = TypeVar("T")
#: Roles that may act for (or read) any player.
_ON_BEHALF = (Role.SERVICE, Role.OPERATOR)
_GAME = {
    ev.CASINO_GAME_CODE_THB: CasinoGame.THB,
    ev.CASINO_GAME_CODE_UTH: CasinoGame.UTH,
}
_CODE = {g: c for c, g in _GAME.items()}


def _player(requested: str) -> str:
    principal = current_principal()
    if not requested:
        if principal.role is not Role.PLAYER:
            raise InvalidArgument(f"player_id is required for role {principal.role.value!r}")
        return principal.subject
    require_player(requested, also=_ON_BEHALF)
    return requested


def session_pb(s: Session) -> casino_pb2.CasinoSession:
    """A session as the API shows it."""
    return casino_pb2.CasinoSession(
        session_id=s.session_id,
        table_id=s.table_id,
        game=_CODE[s.game],
        player_id=s.player_id,
        seat=s.seat,
        last_active_at=timestamp(s.last_active_at),
        expires_at=timestamp(s.expires_at()),
    )


def game_pb(g: GameLine) -> casino_pb2.CasinoGameInfo:
    """A lobby game as the API shows it."""
    return casino_pb2.CasinoGameInfo(
        game=_CODE[g.game],
        config_version=g.config_version,
        limits=[
            casino_pb2.CasinoLimit(spot=x.spot, min=usd(x.min_cents), max=usd(x.max_cents))
            for x in g.limits
        ],
        pay_tables=[
            casino_pb2.CasinoPayTable(
                name=name,
                lines=[
                    casino_pb2.CasinoPayLine(category=p.category, ratio=str(p.ratio)) for p in ps
                ],
            )
            for name, ps in g.pay_tables
        ],
        tables=[
            casino_pb2.CasinoTableInfo(table_id=t.table_id, seated=t.seated, owner_id=t.owner_id)
            for t in g.tables
        ],
        seated=g.seated,
        private_tables=g.private_tables,
    )


async def _refusals(fn: Callable[[], T]) -> T:
    try:
        return await asyncio.to_thread(fn)
    except UnknownCasinoTable as e:
        raise NotFound(
            str(e),
            detail=errors_pb2.ResourceInfo(resource_type="casino_table", resource_id=e.table_id),
        ) from e
    except PrivateTable as e:
        raise PermissionDenied(str(e)) from e
    except NotSeated as e:
        raise FailedPrecondition(str(e)) from e


class CasinoLobbyApi(casino_pb2_grpc.CasinoLobbyServiceServicer):
    """CasinoLobbyService over :class:`CasinoLobby`."""

    def __init__(self, lobby: CasinoLobby) -> None:
        self._lobby = lobby

    async def ListCasinoLobby(
        self, request: casino_pb2.ListCasinoLobbyRequest, context: Any
    ) -> casino_pb2.ListCasinoLobbyResponse:
        """Any authenticated caller; a player also gets their own sessions and tables."""
        principal = current_principal()
        viewer = principal.subject if principal.role is Role.PLAYER else ""
        games, mine = await asyncio.to_thread(self._lobby.lobby, viewer)
        return casino_pb2.ListCasinoLobbyResponse(
            games=[game_pb(g) for g in games], my_sessions=[session_pb(s) for s in mine]
        )

    async def JoinCasinoTable(
        self, request: casino_pb2.JoinCasinoTableRequest, context: Any
    ) -> casino_pb2.JoinCasinoTableResponse:
        """The player for themself; services and operators name the player."""
        player = _player(request.player_id)
        game = _GAME.get(request.game)
        if game is None:
            raise InvalidArgument("game is required (THB or UTH)")
        if game is CasinoGame.UTH and not request.table_id:
            raise InvalidArgument("table_id is required for UTH (see ListCasinoLobby)")
        joined = await _refusals(lambda: self._lobby.join(game, player, request.table_id))
        return casino_pb2.JoinCasinoTableResponse(
            session=session_pb(joined.session), already_seated=joined.already_seated
        )

    async def LeaveCasinoTable(
        self, request: casino_pb2.LeaveCasinoTableRequest, context: Any
    ) -> casino_pb2.LeaveCasinoTableResponse:
        """The player for themself; services and operators name the player."""
        player = _player(request.player_id)
        s = await _refusals(lambda: self._lobby.leave(request.table_id, player))
        return casino_pb2.LeaveCasinoTableResponse(session_id=s.session_id)

    async def TouchSession(
        self, request: casino_pb2.TouchSessionRequest, context: Any
    ) -> casino_pb2.TouchSessionResponse:
        """The player for themself; services (the table service) and operators any player."""
        player = _player(request.player_id)
        s = await _refusals(lambda: self._lobby.touch(request.table_id, player))
        return casino_pb2.TouchSessionResponse(session=session_pb(s))
