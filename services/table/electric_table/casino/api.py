"""CasinoTableService servicer: auth, request → command, round → view (no business rules).

Players act for themselves (``require_player``); GetRound and ListUnfinishedRounds also
serve operators and auditors; VoidRound is the operator's.
"""

from __future__ import annotations

import asyncio
from typing import Any

import electric_domain.casino.thb.events as thb
from electric.table.v1 import casino_events_pb2 as cev
from electric.table.v1 import casino_pb2, casino_pb2_grpc
from electric_platform import (
    FailedPrecondition,
    InvalidArgument,
    PermissionDenied,
    current_principal,
)
from electric_platform.auth import Role, require_player, require_role

from electric_table.casino import repo
from electric_table.casino.thb import records
from electric_table.casino.thb.handlers import CasinoHandlers, Loaded
from electric_table.casino.uth.api import READERS, UthApi, is_uth_round
from electric_table.casino.uth.tables import UthTables

_DECISIONS: dict[int, type[thb.Fold | thb.CallFlop | thb.Check | thb.Bet]] = {
    casino_pb2.CASINO_DECISION_FOLD: thb.Fold,
    casino_pb2.CASINO_DECISION_CALL_FLOP: thb.CallFlop,
    casino_pb2.CASINO_DECISION_CHECK: thb.Check,
    casino_pb2.CASINO_DECISION_BET: thb.Bet,
}
_READERS = READERS


def _request_id(request_id: str) -> str:
    if not request_id:
        raise InvalidArgument("request_id is required (idempotency key)")
    if len(request_id) > 200:
        raise InvalidArgument("request_id is longer than 200 characters")
    return request_id


def _player() -> str:
    principal = current_principal()
    if principal.role != Role.PLAYER:
        raise PermissionDenied("only a player may play a casino round")
    return principal.subject


def round_view(loaded: Loaded) -> casino_pb2.CasinoRoundView:
    """The round as its player sees it (the deck seed only once revealed: never here)."""
    s, row = loaded.round.state, loaded.row
    key = loaded.key
    return casino_pb2.CasinoRoundView(
        round_id=row.round_id,
        table_id=row.table_id,
        game=row.game,
        player_id=row.player_id,
        game_number=row.game_number,
        phase=s.phase,
        status=row.status,
        bets=[
            cev.CasinoBetPlaced(
                round_id=row.round_id,
                table_id=row.table_id,
                player_id=row.player_id,
                bet_id=records.bet_id(row.round_id, spot),
                spot=spot,
                amount_cents=amount,
            )
            for spot, amount in s.bets.items()
        ],
        player_cards=list(s.player_cards),
        board=list(s.board),
        dealer_cards=list(s.dealer_cards),
        legal=list(loaded.round.legal()),
        results=records.bet_results(key, s.results),
        acknowledged=row.acknowledged,
        void_reason=_void_reason(loaded),
        version=loaded.version,
        nickname=s.nickname or "",
    )


def _void_reason(loaded: Loaded) -> str:
    for e in loaded.round.history:
        if isinstance(e, thb.RoundVoided):
            return e.reason
    return ""


class CasinoApi(UthApi, casino_pb2_grpc.CasinoTableServiceServicer):
    def __init__(
        self,
        handlers: CasinoHandlers,
        uth: UthTables | None = None,
        stopping: asyncio.Event | None = None,
    ) -> None:
        self._h = handlers
        self._uth = uth
        self._stopping = stopping or asyncio.Event()

    async def _view(self, round_id: str) -> casino_pb2.CasinoRoundView:
        return round_view(await self._h._loaded(round_id))

    async def Deal(self, request: casino_pb2.DealRequest, context: Any) -> casino_pb2.DealResponse:
        """Start a THB round (the caller's)."""
        player = _player()
        rid = _request_id(request.request_id)
        round_id = await self._h.deal(player, request.table_id, request.ante_cents, rid)
        return casino_pb2.DealResponse(round=await self._view(round_id))

    async def Decide(
        self, request: casino_pb2.DecideRequest, context: Any
    ) -> casino_pb2.DecideResponse:
        """Answer the caller's open decision."""
        if is_uth_round(request.round_id):
            return casino_pb2.DecideResponse(round=await self.uth_decide(request))
        player = _player()
        rid = _request_id(request.request_id)
        make = _DECISIONS.get(request.decision)
        if make is None:
            raise InvalidArgument("decision must be FOLD, CALL_FLOP, CHECK or BET")
        await self._h.decide(player, request.round_id, make(at=self._h.now_ms()), rid)
        return casino_pb2.DecideResponse(round=await self._view(request.round_id))

    async def GetRound(
        self, request: casino_pb2.GetRoundRequest, context: Any
    ) -> casino_pb2.GetRoundResponse:
        """The round (its player, or an operator/auditor/service)."""
        if is_uth_round(request.round_id):
            principal = current_principal()
            who = None if principal.role in READERS else principal.subject
            return casino_pb2.GetRoundResponse(round=await self.uth_round(request.round_id, who))
        loaded = await self._h._loaded(request.round_id)
        require_player(loaded.row.player_id, also=_READERS)
        return casino_pb2.GetRoundResponse(round=round_view(loaded))

    async def ListUnfinishedRounds(
        self, request: casino_pb2.ListUnfinishedRoundsRequest, context: Any
    ) -> casino_pb2.ListUnfinishedRoundsResponse:
        """Rounds with unresolved bets or an unseen result."""
        player = request.player_id or current_principal().subject
        require_player(player, also=_READERS)
        rounds = await asyncio.to_thread(self._h.unfinished, player)
        views = [round_view(r) for r in rounds]
        if self._uth is not None:
            views += await self.uth_unfinished(player)
        return casino_pb2.ListUnfinishedRoundsResponse(rounds=views)

    async def AckResult(
        self, request: casino_pb2.AckResultRequest, context: Any
    ) -> casino_pb2.AckResultResponse:
        """The player saw the result."""
        player = _player()
        if is_uth_round(request.round_id):
            await self.uth.ack(player, request.round_id)
            view = await self.uth_round(request.round_id, player)
            return casino_pb2.AckResultResponse(round=view)
        await self._h.ack(player, request.round_id)
        return casino_pb2.AckResultResponse(round=await self._view(request.round_id))

    async def VoidRound(
        self, request: casino_pb2.VoidRoundRequest, context: Any
    ) -> casino_pb2.VoidRoundResponse:
        """Operator: void an open round, refunding every bet once."""
        principal = require_role(Role.OPERATOR)
        rid = _request_id(request.request_id)
        if not request.reason.strip():
            raise InvalidArgument("reason is required")
        if is_uth_round(request.round_id):
            await self.uth.void(principal.subject, request.round_id, request.reason, rid)
            view = await self.uth_round(request.round_id, None)
        else:
            await self._h.void(principal.subject, request.round_id, request.reason, rid)
            view = await self._view(request.round_id)
        if view.status != repo.VOIDED:
            raise FailedPrecondition(f"round {request.round_id} is {view.status}, not voided")
        return casino_pb2.VoidRoundResponse(round=view)
