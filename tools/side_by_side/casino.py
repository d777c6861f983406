"""Seeded casino rounds on one tree's table service, in virtual time.

* **THB**: the three players take turns at a private table: ``Deal`` (an ante), the
  decisions the round's view offers (``Decide``), now and then an operator's ``VoidRound``,
  a decision the round does not offer (refused) or a retried request, then ``AckResult``.
* **UTH**: the three players sit at one live table. While the light is green each may
  place an ante, trips, or undo (``PlaceBets``); in each decision window each may decide
  from what its view offers, or let the window run out; the table's own driver step
  (``UthDriver.step``) moves the round at the virtual clock (betting closes, deals, windows
  time out, the round settles, the next opens). Every result is acknowledged.

Every call goes to the ``CasinoTableService`` servicer (``CasinoApi``). After every call
and every driver step each player reads what a player reads (``GetRound`` of their THB
round; ``GetCasinoTable`` at the UTH table) and an auditor reads the round. Deck seeds come
from a seeded source; the wallet is a stand-in that accepts every reservation (the wallet's
calls are owed work, not facts of the table's log).
"""

from __future__ import annotations

import asyncio
import itertools
import random
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from electric.table.v1 import casino_pb2
from electric.wallet.v1 import ledger_pb2
from electric_domain.casino.common.config import load_config
from electric_eventlog import EventStore
from electric_platform.auth import Role
from electric_table.casino import repo as casino_repo
from electric_table.casino.api import CasinoApi
from electric_table.casino.metrics import CasinoMetrics
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine

from tools.side_by_side.determinism import CLOCK, seed_bytes
from tools.side_by_side.recording import Recorder
from tools.side_by_side.tree_modules import load

if TYPE_CHECKING:
    from electric_table.casino.thb.handlers import CasinoHandlers
    from electric_table.casino.uth.driver import UthDriver
    from electric_table.casino.uth.settings import uth_config
    from electric_table.casino.uth.tables import UthTables
else:  # the tree under test's names (`tree_modules`)
    CasinoHandlers = load(
        "electric_table.casino.thb.handlers", "electric_table.casino.handlers"
    ).CasinoHandlers
    _uth_driver = load("electric_table.casino.uth.driver", "electric_table.casino.uth_driver")
    UthDriver = _uth_driver.UthDriver
    uth_config = load(
        "electric_table.casino.uth.settings", "electric_table.casino.uth_settings"
    ).uth_config
    _uth_tables = load("electric_table.casino.uth.tables", "electric_table.casino.uth_tables")
    UthTables = _uth_tables.UthTables

PLAYERS = ("ann", "ben", "cat")
AUDITOR = "auditor"
OPERATOR = "operator"
#: THB buttons → the decision sent (the bets of the turn and river are BET).
THB_DECISIONS = {
    "fold": casino_pb2.CASINO_DECISION_FOLD,
    "call_flop": casino_pb2.CASINO_DECISION_CALL_FLOP,
    "check": casino_pb2.CASINO_DECISION_CHECK,
    "bet_turn": casino_pb2.CASINO_DECISION_BET,
    "bet_river": casino_pb2.CASINO_DECISION_BET,
}
UTH_DECISIONS = {
    "play_4x": casino_pb2.CASINO_DECISION_PLAY_4X,
    "play_3x": casino_pb2.CASINO_DECISION_PLAY_3X,
    "play_2x": casino_pb2.CASINO_DECISION_PLAY_2X,
    "play_1x": casino_pb2.CASINO_DECISION_PLAY_1X,
    "check": casino_pb2.CASINO_DECISION_CHECK,
    "fold": casino_pb2.CASINO_DECISION_FOLD,
}
MAX_STEPS = 5_000


class StandInWallet:
    """Accepts every reservation; posts and voids answer nothing."""

    async def reserve(self, transfer_id: str, *args: Any, **kwargs: Any) -> Any:
        return SimpleNamespace(state=ledger_pb2.TRANSFER_STATE_PENDING)

    async def post(self, transfer_id: str) -> None:
        return None

    async def void(self, transfer_id: str, reason: str = "") -> None:
        return None


class CasinoRun:
    """The casino part of one tree's table service (module doc)."""

    def __init__(self, engine: Engine, seed: int, index: int, *, perturb: bool) -> None:
        self.engine, self.seed, self.index = engine, seed, index
        self.rng = random.Random(seed_bytes("casino-bots", seed, index))
        store = EventStore(engine, producer="table")
        config = uth_config(load_config(), {})
        decks = itertools.count()

        def deck_seed() -> bytes:
            n = next(decks)
            salt = "perturbed" if perturb and n == 1 else ""  # the injected difference
            return seed_bytes("casino-deck", seed, index, n, salt)

        self.handlers = CasinoHandlers(
            engine,
            store,
            StandInWallet(),
            config,
            CasinoMetrics(CollectorRegistry()),
            now_ms=CLOCK.now_ms,
            seed=deck_seed,
        )
        self.stopping = asyncio.Event()
        self.uth = UthTables(self.handlers, config, pause_ms=2_000, stopping=self.stopping)
        self.driver = UthDriver(self.uth)
        self.uth.start_driver = None  # the scenario steps the table at its virtual clock
        self.api = CasinoApi(self.handlers, self.uth, self.stopping)
        self.requests = itertools.count(1)
        self.rounds: list[str] = []

    def rid(self, who: str) -> str:
        return f"{who}-{next(self.requests)}"

    def seat(self, table_id: str, game: str) -> None:
        """Registration's casino seats (the rows its events feed)."""
        with self.engine.begin() as conn:
            for no, p in enumerate(PLAYERS, start=1):
                casino_repo.take_seat(conn, table_id, p, game, no, f"session-{table_id}-{p}")

    def think(self, most_ms: int = 1_500) -> None:
        CLOCK.advance_to(CLOCK.now + self.rng.randint(50, most_ms))

    async def close(self) -> None:
        self.stopping.set()
        await self.uth.close()

    # ------------------------------------------------------------------------------ THB

    async def play_thb(self, rec: Recorder, rounds: int) -> None:
        table_id = f"thb-{self.seed * 100 + self.index}"
        self.seat(table_id, "thb")
        for n in range(rounds):
            rec.step += 1
            player = PLAYERS[n % len(PLAYERS)]
            self.think()
            deal = casino_pb2.DealRequest(
                table_id=table_id,
                ante_cents=self.rng.choice([100, 500, 1_000]),
                request_id=self.rid(player),
            )
            dealt = await rec.call(player, "Deal", self.api.Deal, deal)
            if dealt is None:
                continue
            round_id = dealt.round.round_id
            self.rounds.append(round_id)
            await self._thb_decisions(rec, player, round_id)
            await self._round_views(rec, round_id, player)
            ack = casino_pb2.AckResultRequest(round_id=round_id)
            await rec.call(player, "AckResult", self.api.AckResult, ack)
            listing = casino_pb2.ListUnfinishedRoundsRequest()
            await rec.call(player, "ListUnfinishedRounds", self.api.ListUnfinishedRounds, listing)

    async def _thb_decisions(self, rec: Recorder, player: str, round_id: str) -> None:
        for _ in range(10):
            rec.step += 1
            view = await self._round_views(rec, round_id, player)
            offered = [b for b in (view.legal if view else ()) if b in THB_DECISIONS]
            if view is None or view.status != "open" or not offered:
                return
            self.think()
            r = self.rng.random()
            if r < 0.04:
                void = casino_pb2.VoidRoundRequest(
                    round_id=round_id, reason="side by side", request_id=self.rid(OPERATOR)
                )
                await rec.call(
                    OPERATOR,
                    "VoidRound",
                    self.api.VoidRound,
                    void,
                    role=Role.OPERATOR,
                )
                continue
            button = self.rng.choice(offered)
            decision = THB_DECISIONS[button]
            if r > 0.96:  # a decision the round does not offer now: refused, nothing stored
                others = set(THB_DECISIONS.values()) - {THB_DECISIONS[b] for b in offered}
                decision = min(others, default=decision)
            request = casino_pb2.DecideRequest(
                round_id=round_id,
                decision=decision,
                request_id=self.rid(player),
            )
            await rec.call(player, "Decide", self.api.Decide, request)
            if self.rng.random() < 0.05:  # retried: the first answer, not applied twice
                await rec.call(player, "Decide", self.api.Decide, request)

    async def _round_views(self, rec: Recorder, round_id: str, player: str) -> Any:
        request = casino_pb2.GetRoundRequest(round_id=round_id)
        await rec.call(AUDITOR, "GetRound", self.api.GetRound, request, role=Role.AUDITOR)
        answer = await rec.call(player, "GetRound", self.api.GetRound, request)
        return None if answer is None else answer.round

    # ------------------------------------------------------------------------------ UTH

    async def play_uth(self, rec: Recorder, rounds: int) -> None:
        table_id = f"uth-{self.seed * 100 + self.index}"
        self.seat(table_id, "uth")
        t = await self.uth.table(table_id)
        for _ in range(MAX_STEPS):
            rec.step += 1
            await self._uth_time(t)
            if t.book is not None and t.book.round_id not in self.rounds:
                self.rounds.append(t.book.round_id)
            if len(self.rounds) > rounds:
                break
            await self._uth_players(rec, table_id)
        else:
            raise RuntimeError(f"{table_id}: {rounds} rounds not played in {MAX_STEPS} steps")
        for round_id in self.rounds:
            for player in PLAYERS:
                request = casino_pb2.GetRoundRequest(round_id=round_id)
                got = await rec.call(player, "GetRound", self.api.GetRound, request)
                if got is not None and got.round.results:
                    ack = casino_pb2.AckResultRequest(round_id=round_id)
                    await rec.call(player, "AckResult", self.api.AckResult, ack)
            await self._round_views(rec, round_id, AUDITOR)

    async def _uth_time(self, t: Any) -> None:
        """To the table's next wake-up, then its driver's steps until it waits again."""
        wake = t.round.next_wakeup_at() if t.live and t.round is not None else None
        if wake is None and t.next_open_at is not None:
            wake = t.next_open_at
        CLOCK.advance_to(wake or CLOCK.now)
        async with t.lock:
            for _ in range(20):
                if await self.driver.step(t) > 0:
                    break

    async def _uth_players(self, rec: Recorder, table_id: str) -> None:
        get = casino_pb2.GetCasinoTableRequest(table_id=table_id)
        for player in PLAYERS:
            got = await rec.call(player, "GetCasinoTable", self.api.GetCasinoTable, get)
            if got is None:
                continue
            view = got.view
            legal = set(view.legal)
            self.think(400)
            if "ante" in legal and not view.ante_cents and self.rng.random() < 0.85:
                await self._bet(rec, player, table_id, casino_pb2.CASINO_BET_ACTION_ANTE)
                if self.rng.random() < 0.3:
                    await self._bet(rec, player, table_id, casino_pb2.CASINO_BET_ACTION_TRIPS)
                if self.rng.random() < 0.08:
                    await self._bet(rec, player, table_id, casino_pb2.CASINO_BET_ACTION_UNDO)
            decisions = [d for d in view.legal if d in UTH_DECISIONS]
            if decisions and self.rng.random() < 0.9:
                request = casino_pb2.DecideRequest(
                    round_id=view.round_id,
                    decision=UTH_DECISIONS[self.rng.choice(decisions)],
                    request_id=self.rid(player),
                )
                await rec.call(player, "Decide", self.api.Decide, request)

    async def _bet(self, rec: Recorder, player: str, table_id: str, action: int) -> None:
        request = casino_pb2.PlaceBetsRequest(
            table_id=table_id,
            action=action,  # type: ignore[arg-type]
            amount_cents=self.rng.choice([100, 200, 500]),
            request_id=self.rid(player),
        )
        await rec.call(player, "PlaceBets", self.api.PlaceBets, request)
