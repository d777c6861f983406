"""gRPC servicer of CasinoPayoutService: protobuf in/out, auth and error mapping only."""

from __future__ import annotations

import asyncio
from typing import Any

from electric.common.v1 import pagination_pb2
from electric.payout.v1 import casino_pb2, casino_pb2_grpc
from electric_clients.convert import timestamp_or_none, usd
from electric_platform import Role
from electric_platform.auth import player_to_read
from electric_platform.paging import next_page_token, page_window
from sqlalchemy import Engine

from electric_payout.casino import repo

_STATUS = {
    "owed": casino_pb2.CASINO_WIN_STATUS_OWED,
    "credited": casino_pb2.CASINO_WIN_STATUS_CREDITED,
}
#: Roles that may read any player's casino wins.
_ON_BEHALF = (Role.SERVICE, Role.OPERATOR, Role.AUDITOR)


class CasinoPayoutApi(casino_pb2_grpc.CasinoPayoutServiceServicer):
    """CasinoPayoutService over payout's own database."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def _wins(self, player: str, offset: int, limit: int) -> tuple[list[repo.WinRow], int]:
        with self._engine.connect() as conn:
            return repo.player_wins(conn, player, offset=offset, limit=limit)

    async def ListCasinoWinnings(
        self, request: casino_pb2.ListCasinoWinningsRequest, context: Any
    ) -> casino_pb2.ListCasinoWinningsResponse:
        """A player reads their own wins; services, operators and auditors any player's."""
        player = player_to_read(request.player_id, also=_ON_BEHALF)
        scope = f"payout.ListCasinoWinnings:{player}"
        offset, size = page_window(request.page.page_size, request.page.page_token, scope=scope)
        rows, total = await asyncio.to_thread(self._wins, player, offset, size + 1)
        return casino_pb2.ListCasinoWinningsResponse(
            wins=[
                casino_pb2.CasinoWin(
                    round_id=r.round_id,
                    table_id=r.table_id,
                    game=r.game,
                    bet_kind=r.bet_kind,
                    stake=usd(r.stake_cents),
                    win=usd(r.win_cents),
                    status=_STATUS.get(r.status, casino_pb2.CASINO_WIN_STATUS_UNSPECIFIED),
                    wallet_transfer_id=r.wallet_transfer_id,
                    owed_at=timestamp_or_none(r.owed_at),
                    credited_at=timestamp_or_none(r.credited_at),
                )
                for r in rows[:size]
            ],
            total=usd(total),
            page=pagination_pb2.PageResponse(
                next_page_token=next_page_token(offset, size, len(rows), scope=scope)
            ),
        )
