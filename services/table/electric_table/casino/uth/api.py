"""The UTH part of the CasinoTableService servicer: PlaceBets, GetCasinoTable,
WatchCasinoTable, and UTH rounds in Decide / GetRound / VoidRound (no business rules)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from electric.table.v1 import casino_pb2
from electric_domain.casino.uth.round import UthRound
from electric_platform import InvalidArgument, NotFound, PermissionDenied, current_principal
from electric_platform.auth import Role

from electric_table.casino import repo
from electric_table.casino.uth import views as uth_views
from electric_table.casino.uth.records import UthBook
from electric_table.casino.uth.recovery import UNREPLAYABLE_REASON
from electric_table.casino.uth.tables import LiveTable, UthTables

BET_ACTIONS = {
    casino_pb2.CASINO_BET_ACTION_ANTE: "ante",
    casino_pb2.CASINO_BET_ACTION_TRIPS: "trips",
    casino_pb2.CASINO_BET_ACTION_UNDO: "undo",
    casino_pb2.CASINO_BET_ACTION_DOUBLE: "double",
    casino_pb2.CASINO_BET_ACTION_REPEAT: "repeat",
    casino_pb2.CASINO_BET_ACTION_CLEAR: "clear",
}
UTH_DECISIONS = {
    casino_pb2.CASINO_DECISION_PLAY_4X: "play_4x",
    casino_pb2.CASINO_DECISION_PLAY_3X: "play_3x",
    casino_pb2.CASINO_DECISION_PLAY_2X: "play_2x",
    casino_pb2.CASINO_DECISION_PLAY_1X: "play_1x",
    casino_pb2.CASINO_DECISION_CHECK: "check",
    casino_pb2.CASINO_DECISION_FOLD: "fold",
}
READERS = (Role.OPERATOR, Role.AUDITOR, Role.SERVICE)
#: Longest wait between two views of a watch (the server clock moves on in them).
WATCH_REFRESH_S = 5.0


def is_uth_round(round_id: str) -> bool:
    return round_id.startswith("uth-r-")


def _player() -> str:
    principal = current_principal()
    if principal.role != Role.PLAYER:
        raise PermissionDenied("only a player may play a casino round")
    return principal.subject


class UthApi:
    """Mixed into ``CasinoApi``; needs ``self._uth`` and ``self._stopping``."""

    _uth: UthTables | None
    _stopping: asyncio.Event

    @property
    def uth(self) -> UthTables:
        if self._uth is None:  # pragma: no cover - wired whenever the casino is
            raise NotFound("UTH tables are not hosted here")
        return self._uth

    async def table_view(self, t: LiveTable, player: str) -> casino_pb2.CasinoTableView:
        """``player``'s view, read under the table's lock (only committed state)."""
        async with t.lock:
            return self._table_view(t, player)

    def _table_view(self, t: LiveTable, player: str) -> casino_pb2.CasinoTableView:
        return uth_views.table_view(
            t.table_id,
            t.round,
            t.book,
            t.row,
            t.version,
            player=player,
            now=self.uth.now_ms(),
            seated=t.seated,
        )

    async def PlaceBets(
        self, request: casino_pb2.PlaceBetsRequest, context: Any
    ) -> casino_pb2.PlaceBetsResponse:
        """One betting action of the caller at a UTH table."""
        player = _player()
        if not request.request_id or len(request.request_id) > 200:
            raise InvalidArgument("request_id is required (at most 200 characters)")
        action = BET_ACTIONS.get(request.action)
        if action is None:
            raise InvalidArgument("action must be ANTE, TRIPS, UNDO, DOUBLE, REPEAT or CLEAR")
        if action in ("ante", "trips") and request.amount_cents <= 0:
            raise InvalidArgument(f"{action} needs a positive amount_cents")
        t = await self.uth.place(
            player, request.table_id, action, request.amount_cents, request.request_id
        )
        return casino_pb2.PlaceBetsResponse(view=await self.table_view(t, player))

    async def GetCasinoTable(
        self, request: casino_pb2.GetCasinoTableRequest, context: Any
    ) -> casino_pb2.GetCasinoTableResponse:
        """The caller's view of a UTH table."""
        principal = current_principal()
        t = await self.uth.table(request.table_id)
        return casino_pb2.GetCasinoTableResponse(view=await self.table_view(t, principal.subject))

    async def WatchCasinoTable(
        self, request: casino_pb2.WatchCasinoTableRequest, context: Any
    ) -> AsyncIterator[casino_pb2.WatchCasinoTableResponse]:
        """The caller's view now, then at every change (and at least every few seconds).
        Ends UNAVAILABLE when the table is dropped here (its partition moved): the client
        reconnects and reaches the new owner."""
        principal = current_principal()
        t = await self.uth.table(request.table_id)
        while not self._stopping.is_set():
            if t.disowned:  # dropped here (moved): UNAVAILABLE, reconnect; a table only
                t.check_owned()  # suspended by a rebalance keeps its watchers
            changed = t.changed
            view = await self.table_view(t, principal.subject)
            yield casino_pb2.WatchCasinoTableResponse(view=view)
            waits = [
                asyncio.ensure_future(changed.wait()),
                asyncio.ensure_future(self._stopping.wait()),
            ]
            try:
                await asyncio.wait(waits, timeout=WATCH_REFRESH_S, return_when="FIRST_COMPLETED")
            finally:
                for w in waits:
                    w.cancel()

    # ------------------------------------------------------------- shared RPCs, UTH side

    async def uth_decide(self, request: casino_pb2.DecideRequest) -> casino_pb2.CasinoRoundView:
        player = _player()
        action = UTH_DECISIONS.get(request.decision)
        if action is None:
            raise InvalidArgument("UTH decisions: PLAY_4X, PLAY_3X, PLAY_2X, PLAY_1X, CHECK, FOLD")
        if not request.request_id:
            raise InvalidArgument("request_id is required (idempotency key)")
        await self.uth.decide(player, request.round_id, action, request.request_id)
        return await self.uth_round(request.round_id, player)

    async def uth_round(self, round_id: str, player: str | None) -> casino_pb2.CasinoRoundView:
        """A UTH round: the live one from memory, an earlier one from its stream."""
        uth = self.uth
        with uth.engine.connect() as conn:
            row = repo.get_round(conn, round_id)
        if row is None:
            raise NotFound(f"casino round {round_id!r} not found")
        t = uth.tables.get(row.table_id)
        if t is not None:
            async with t.lock:
                if t.book is not None and t.round is not None and t.book.round_id == round_id:
                    live_row = t.row or row
                    return self._round_view(t.round, t.book, live_row, t.version, player)
        loaded = await asyncio.to_thread(uth.load_round, row)
        rnd, book, version = loaded[1], loaded[2], loaded[3]
        if rnd is None or book is None:  # voided from its rows (uth_recovery)
            return await asyncio.to_thread(self._rows_view, row, version, player)
        return self._round_view(rnd, book, row, version, player)

    def _rows_view(
        self, row: repo.RoundRow, version: int, player: str | None
    ) -> casino_pb2.CasinoRoundView:
        """A round that could not be replayed, from its rows: its reservations, refunded."""
        with self.uth.engine.connect() as conn:
            bets = [b for b in repo.bets(conn, row.round_id) if player in (None, b.player_id)]
            seen = repo.uth_player(conn, row.round_id, player) if player else None
        if player is not None and seen is None:
            raise PermissionDenied(f"{player} has no result in round {row.round_id}")
        view = casino_pb2.CasinoRoundView(
            round_id=row.round_id,
            table_id=row.table_id,
            game=row.game,
            player_id=player or "",
            game_number=row.game_number,
            phase="over",
            status=row.status,
            acknowledged=bool(seen),
            void_reason=UNREPLAYABLE_REASON if row.status == repo.VOIDED else "",
            version=version,
        )
        for b in bets:
            view.bets.add(
                round_id=row.round_id,
                table_id=row.table_id,
                player_id=b.player_id,
                bet_id=b.bet_id,
                spot=b.spot,
                amount_cents=b.amount_cents,
            )
            view.results.add(
                bet_id=b.bet_id,
                spot=b.spot,
                stake_cents=b.amount_cents,
                outcome="refund",
                returned_cents=b.amount_cents,
            )
        return view

    def _round_view(
        self,
        rnd: UthRound,
        book: UthBook,
        row: repo.RoundRow,
        version: int,
        player: str | None,
    ) -> casino_pb2.CasinoRoundView:
        round_id = row.round_id
        if player is not None and all(s.player != player for s in rnd.state.seats):
            raise PermissionDenied(f"{player} has no seat in round {round_id}")
        view = uth_views.round_view(rnd, book, row, version, player=player)
        if player is not None:
            with self.uth.engine.connect() as conn:
                view.acknowledged = bool(repo.uth_player(conn, round_id, player))
        return view

    async def uth_unfinished(self, player: str) -> list[casino_pb2.CasinoRoundView]:
        """The UTH rounds whose result ``player`` has not acknowledged, oldest first."""
        with self.uth.engine.connect() as conn:
            round_ids = repo.uth_unfinished(conn, player)
        return [await self.uth_round(r, player) for r in round_ids]
