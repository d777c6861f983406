"""UTH bots: players at one live Ultimate Texas Hold'em table, over gRPC.

A UTH bot takes a seat at ``uth-<n>`` through ``CasinoLobbyService.JoinCasinoTable``, then
follows the table with ``WatchCasinoTable`` (its own view: bets, decisions, results, the
shared cards, the light, the deadlines). In each betting window it places its Ante (the Blind
follows automatically; Trips when configured) with ``PlaceBets``; in each decision window it
answers with ``Decide`` as its strategy says; when the round is settled it acknowledges the
result with ``AckResult``. Request ids are derived from (round, player, step), so a retry
after a lost answer or a restarted service is answered as the first time.

Strategies (:data:`UTH_STRATEGIES`): ``optimal`` (:class:`electric_math.strategy.OptimalUth`),
``simple`` (the published basic strategy, :class:`electric_domain.casino.uth.strategy.
BasicStrategy`) and ``never``: bets, then never decides, so the table's timers auto-check
pre-flop and on the flop and auto-fold at the river.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from electric.registration.v1 import casino_events_pb2 as reg_cev
from electric.table.v1 import casino_pb2
from electric_clients.errors import token_expired
from electric_domain.casino.uth.strategy import BasicStrategy
from electric_platform.retry import Stopped

from electric_bots.casino import TRANSIENT, CasinoBot, CasinoChannels

#: UTH strategy names.
UTH_STRATEGIES: tuple[str, ...] = ("optimal", "simple", "never")

_DECISIONS = {
    "play_4x": casino_pb2.CASINO_DECISION_PLAY_4X,
    "play_3x": casino_pb2.CASINO_DECISION_PLAY_3X,
    "play_2x": casino_pb2.CASINO_DECISION_PLAY_2X,
    "play_1x": casino_pb2.CASINO_DECISION_PLAY_1X,
    "check": casino_pb2.CASINO_DECISION_CHECK,
    "fold": casino_pb2.CASINO_DECISION_FOLD,
}
_DECISION_PHASES = ("preflop", "flop", "river")
_DONE = ("settled", "voided")
#: Refusals of a UTH AckResult a bot tolerates (counted in ``stats.ack_refused``): a table
#: service without per-seat acknowledgements of shared rounds.
_ACK_REFUSALS = (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.NOT_FOUND)
#: A table that has not yet seen the bot's seat (registration's event on its way).
_NOT_SEATED_YET = (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED)


@dataclass
class UthTimings:
    """Client-side timings of a table's rounds (monotonic seconds), shared by the bots: the
    last decision sent (the one that closes the last decision window when every seat
    answers) and the first settled result received, per round."""

    last_decision_sent: dict[str, float] = field(default_factory=dict)
    settled_seen: dict[str, float] = field(default_factory=dict)

    def settlement_ms(self) -> list[float]:
        """Per round that has both: ms from the last decision sent to the settled result."""
        return [
            (self.settled_seen[r] - t) * 1000.0
            for r, t in self.last_decision_sent.items()
            if r in self.settled_seen
        ]


class NeverDecides:
    """A UTH "strategy" that never answers: the table's timers decide for it."""

    def preflop(self, hole: Sequence[int]) -> str | None:
        return None

    def flop(self, hole: Sequence[int], flop: Sequence[int]) -> str | None:
        return None

    def river(self, hole: Sequence[int], board: Sequence[int]) -> str | None:
        return None


def uth_strategy(name: str) -> Any:
    """A UTH strategy by name (``optimal`` loads the exact tables lazily)."""
    if name == "simple":
        return BasicStrategy()
    if name == "never":
        return NeverDecides()
    if name == "optimal":
        from electric_math.strategy import OptimalUth

        return OptimalUth()
    raise ValueError(f"unknown UTH strategy {name!r}; known: {', '.join(UTH_STRATEGIES)}")


def uth_decision(strategy: Any, view: casino_pb2.CasinoTableView) -> str | None:
    """The strategy's answer in the view's decision window (None: let the timer run)."""
    hole, board = list(view.player_cards), list(view.board)
    if view.phase == "preflop":
        answer: str | None = strategy.preflop(hole)
    elif view.phase == "flop":
        answer = strategy.flop(hole, board[:3])
    elif view.phase == "river":
        answer = strategy.river(hole, board[:5])
    else:
        return None
    if answer is not None and answer not in view.legal:
        # e.g. 3x when the table offers only 4x: fall back to the passive choice.
        answer = "check" if "check" in view.legal else "fold"
    return answer


class UthBot(CasinoBot):
    """Plays every round of one live UTH table while its budget allows."""

    game = "uth"

    def __init__(self, player_id: str, channels: CasinoChannels, **kw: Any) -> None:
        self.strategy = kw.pop("strategy", None) or BasicStrategy()
        self.uth_table: str = kw.pop("table_id", "uth-1")
        self.trips_cents = int(kw.pop("trips_cents", 0))
        #: Shared by the runner's bots: ids of the table rounds they played.
        self.rounds_seen: set[str] = kw.pop("rounds_seen", set())
        self.seat_wait = float(kw.pop("seat_wait", 60.0))
        self.timings: UthTimings | None = kw.pop("timings", None)
        #: Bet in one betting window out of this many (a never-deciding bot holds every
        #: window of its rounds open until the deadline; fewer such rounds keep tests short).
        self.bet_every = max(1, int(kw.pop("bet_every", 1)))
        self._windows = 0
        #: A round counts towards the runner's budget with at least this many players.
        self.min_players = int(kw.pop("min_players", 1))
        super().__init__(player_id, channels, **kw)
        self._bet_in: set[str] = set()
        self._decided: set[tuple[str, str]] = set()
        self._done: set[str] = set()
        self._skipped: set[str] = set()
        self._waited = 0.0
        self._current = ""

    async def play(self) -> None:
        await self.deposit()
        await self.join(reg_cev.CASINO_GAME_CODE_UTH, self.uth_table)
        try:
            while not self.stop.is_set():
                if not self.may_play() and self._bet_in <= self._done:
                    break
                await self._watch()
            await self._ack_leftovers()
        finally:
            await self.leave()

    async def _watch(self) -> None:
        """Follow the table until the budget is used (and the last round is over), or the
        stream breaks (then the caller opens it again)."""
        stream = self.table.WatchCasinoTable(
            casino_pb2.WatchCasinoTableRequest(table_id=self.uth_table), metadata=self.md()
        )
        self._current = ""  # a new stream: look at the pending rounds again
        try:
            async for message in stream:
                await self._on_view(message.view)
                if not self.may_play() and self._bet_in <= self._done:
                    return
                if self.stop.is_set():
                    return
        except grpc.aio.AioRpcError as err:
            code = err.code()
            if code in _NOT_SEATED_YET and self._waited < self.seat_wait:
                self._waited += 0.2  # the seat has not reached the table yet
            elif token_expired(err):  # the platform ends every stream at its token's expiry
                self.stats.reopened += 1  # docs/security.md: reopen with a fresh one, no error
                return
            elif code not in TRANSIENT and code is not grpc.StatusCode.CANCELLED:
                raise
            self.stats.retries += 1
            await self.sleep(0.2)
        finally:
            stream.cancel()

    async def _on_view(self, view: casino_pb2.CasinoTableView) -> None:
        rid = view.round_id
        if not rid:
            return
        if rid != self._current:
            self._current = rid
            await self._resolve_pending(rid)
        if view.status in _DONE or view.phase == "over":
            if self.timings is not None and view.status in _DONE:
                self.timings.settled_seen.setdefault(rid, time.monotonic())
            if rid in self._bet_in and rid not in self._done and view.status in _DONE:
                await self._finish(view)
            return
        if view.phase == "betting" and rid not in self._bet_in and view.seat >= 0:
            if view.ante_cents > 0:  # e.g. REPEAT from an earlier life of this bot
                self._bet_in.add(rid)
            elif (
                "ante" in view.legal
                and view.seated >= self.min_players  # everyone arrived (no thin rounds)
                and self.may_play()
                and self._my_turn_to_bet(rid)
            ):
                await self._bet(view)
            return
        if view.phase in _DECISION_PHASES and rid in self._bet_in:
            key = (rid, view.phase)
            if key in self._decided or not any(a in _DECISIONS for a in view.legal):
                return
            answer = uth_decision(self.strategy, view)
            self._decided.add(key)
            if answer is not None:
                await self._decide(view, answer)

    def _my_turn_to_bet(self, round_id: str) -> bool:
        if round_id in self._skipped:
            return False
        self._windows += 1
        if self._windows % self.bet_every == 0:
            return True
        self._skipped.add(round_id)
        return False

    async def _bet(self, view: casino_pb2.CasinoTableView) -> None:
        actions = [(casino_pb2.CASINO_BET_ACTION_ANTE, self.ante_cents, "ante")]
        if self.trips_cents:
            actions.append((casino_pb2.CASINO_BET_ACTION_TRIPS, self.trips_cents, "trips"))
        for action, amount, step in actions:
            request = casino_pb2.PlaceBetsRequest(
                request_id=f"{view.round_id}:{self.player_id}:{step}",
                table_id=self.uth_table,
                action=action,
                amount_cents=amount,
            )

            async def call(request: casino_pb2.PlaceBetsRequest = request) -> Any:
                return await self.table.PlaceBets(request, metadata=self.md(), timeout=10)

            try:
                await self.call(call, "PlaceBets")
            except grpc.aio.AioRpcError as err:
                if err.code() is grpc.StatusCode.FAILED_PRECONDITION and self.short_of_money(err):
                    await self.deposit()
                    return
                if err.code() in (
                    grpc.StatusCode.FAILED_PRECONDITION,  # the window closed meanwhile
                    grpc.StatusCode.PERMISSION_DENIED,  # the seat is not at the table yet
                ):
                    return
                raise
            if step == "ante":
                self._bet_in.add(view.round_id)

    async def _decide(self, view: casino_pb2.CasinoTableView, answer: str) -> None:
        request = casino_pb2.DecideRequest(
            request_id=f"{view.round_id}:{self.player_id}:{view.phase}",
            round_id=view.round_id,
            decision=_DECISIONS[answer],
        )

        async def call() -> Any:
            return await self.table.Decide(request, metadata=self.md(), timeout=10)

        if self.timings is not None:
            self.timings.last_decision_sent[view.round_id] = time.monotonic()

        try:
            await self.call(call, "Decide")
        except grpc.aio.AioRpcError as err:
            if err.code() is not grpc.StatusCode.FAILED_PRECONDITION:
                raise
            return  # the window closed first (the timer decided)
        self.stats.games[self.game].decisions += 1

    async def _resolve_pending(self, current: str) -> None:
        """Rounds the bot bet in that ended while it was not watching (e.g. the table
        service restarted): read them with GetRound and finish those that are over."""
        for rid in sorted(self._bet_in - self._done - {current}):

            async def call(rid: str = rid) -> casino_pb2.GetRoundResponse:
                response: casino_pb2.GetRoundResponse = await self.table.GetRound(
                    casino_pb2.GetRoundRequest(round_id=rid), metadata=self.md(), timeout=10
                )
                return response

            got = (await self.call(call, "GetRound")).round
            if got.status in _DONE:
                self.stats.resumed += 1
                await self._finish(got)

    async def _finish(self, view: casino_pb2.CasinoTableView | casino_pb2.CasinoRoundView) -> None:
        """Count the result the bot saw and acknowledge it."""
        self._done.add(view.round_id)
        if self.timings is not None and view.status in _DONE:
            self.timings.settled_seen.setdefault(view.round_id, time.monotonic())
        players = view.seats_in_play if isinstance(view, casino_pb2.CasinoTableView) else 1
        if players >= self.min_players:
            self.rounds_seen.add(view.round_id)
        tally = self.stats.games[self.game]
        if view.status == "voided":
            tally.voided += 1
        else:
            tally.rounds += 1
            for r in view.results:
                tally.staked_cents += r.stake_cents
                tally.returned_cents += r.returned_cents
        decisions = view.decisions if isinstance(view, casino_pb2.CasinoTableView) else []
        for d in decisions:
            if d.timed_out:
                key = f"{d.street}:{d.action}"
                tally.timeouts[key] = tally.timeouts.get(key, 0) + 1
        await self._ack(view.round_id)

    async def _ack(self, round_id: str) -> None:
        async def call() -> casino_pb2.AckResultResponse:
            response: casino_pb2.AckResultResponse = await self.table.AckResult(
                casino_pb2.AckResultRequest(round_id=round_id), metadata=self.md(), timeout=10
            )
            return response

        with contextlib.suppress(Stopped):
            try:
                await self.call(call, "AckResult")
            except grpc.aio.AioRpcError as err:
                if err.code() not in _ACK_REFUSALS:
                    raise
                self.stats.ack_refused += 1
                return
            self.stats.acks += 1

    async def _ack_leftovers(self) -> None:
        """Acknowledge results this bot has not seen on the stream (e.g. after a restart)."""
        with contextlib.suppress(Stopped):
            for view in await self.unfinished():
                if view.status in _DONE and not view.acknowledged:
                    self.stats.resumed += 1
                    await self._ack(view.round_id)
