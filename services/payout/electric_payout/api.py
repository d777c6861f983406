"""gRPC servicer of PayoutService: protobuf in/out, auth and error mapping only."""

from __future__ import annotations

import asyncio
from typing import Any

from electric.common.v1 import errors_pb2, pagination_pb2
from electric.payout.v1 import payout_pb2, payout_pb2_grpc
from electric_clients.convert import timestamp_or_none, usd
from electric_platform import (
    InvalidArgument,
    NotFound,
    Role,
    current_principal,
)
from electric_platform.auth import player_to_read
from electric_platform.paging import next_page_token, page_window
from sqlalchemy import Engine

from electric_payout.store import repo

_STATUS = {
    "awarded": payout_pb2.PRIZE_STATUS_AWARDED,
    "credited": payout_pb2.PRIZE_STATUS_CREDITED,
}
#: Roles that may read any player's winnings.
_ON_BEHALF = (Role.SERVICE, Role.OPERATOR, Role.AUDITOR)


class PayoutApi(payout_pb2_grpc.PayoutServiceServicer):
    """PayoutService over payout's own database."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def _prizes(self, tournament_id: str) -> list[repo.PrizeRow]:
        with self._engine.connect() as conn:
            return repo.tournament_prizes(conn, tournament_id)

    async def GetPayouts(
        self, request: payout_pb2.GetPayoutsRequest, context: Any
    ) -> payout_pb2.GetPayoutsResponse:
        """Any authenticated caller: places, players and amounts are public to its audience.
        Entry ids and wallet transfer ids are private: a player sees them on their own prizes
        only; services, operators and auditors see all of them."""
        principal = current_principal()
        sees_all = principal.role in _ON_BEHALF
        if not request.tournament_id:
            raise InvalidArgument("tournament_id is required")
        rows = await asyncio.to_thread(self._prizes, request.tournament_id)
        if not rows:
            raise NotFound(
                f"no payouts for tournament {request.tournament_id!r}: unknown tournament or "
                "its result is not in yet",
                detail=errors_pb2.ResourceInfo(
                    resource_type="tournament", resource_id=request.tournament_id
                ),
            )
        first = rows[0]
        return payout_pb2.GetPayoutsResponse(
            payout=payout_pb2.TournamentPayout(
                tournament_id=first.tournament_id,
                table_id=first.table_id,
                multiplier=first.multiplier,
                buy_in=usd(first.buy_in_cents),
                prize_pool=usd(first.prize_pool_cents),
                paytable_version=first.paytable_version,
                prizes=[
                    payout_pb2.Prize(
                        place=r.place,
                        player_id=r.player_id,
                        entry_id=r.entry_id if sees_all or principal.is_player(r.player_id) else "",
                        amount=usd(r.amount_cents),
                        status=_STATUS.get(r.status, payout_pb2.PRIZE_STATUS_UNSPECIFIED),
                        wallet_transfer_id=(
                            r.wallet_transfer_id
                            if sees_all or principal.is_player(r.player_id)
                            else ""
                        ),
                        credited_at=timestamp_or_none(r.credited_at),
                    )
                    for r in rows
                ],
            )
        )

    def _winnings(self, player: str, offset: int, limit: int) -> tuple[list[repo.PrizeRow], int]:
        with self._engine.connect() as conn:
            return repo.player_winnings(conn, player, offset=offset, limit=limit)

    async def ListWinnings(
        self, request: payout_pb2.ListWinningsRequest, context: Any
    ) -> payout_pb2.ListWinningsResponse:
        """A player reads their own winnings; services, operators and auditors any player's."""
        player = player_to_read(request.player_id, also=_ON_BEHALF)
        scope = f"payout.ListWinnings:{player}"
        offset, size = page_window(request.page.page_size, request.page.page_token, scope=scope)
        rows, total = await asyncio.to_thread(self._winnings, player, offset, size + 1)
        return payout_pb2.ListWinningsResponse(
            winnings=[
                payout_pb2.Winning(
                    tournament_id=r.tournament_id,
                    table_id=r.table_id,
                    place=r.place,
                    amount=usd(r.amount_cents),
                    buy_in=usd(r.buy_in_cents),
                    multiplier=r.multiplier,
                    status=_STATUS.get(r.status, payout_pb2.PRIZE_STATUS_UNSPECIFIED),
                    awarded_at=timestamp_or_none(r.awarded_at),
                )
                for r in rows[:size]
            ],
            total=usd(total),
            page=pagination_pb2.PageResponse(
                next_page_token=next_page_token(offset, size, len(rows), scope=scope)
            ),
        )
