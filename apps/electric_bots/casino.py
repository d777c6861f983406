"""Casino bots: THB players as real gRPC clients of the public casino APIs.

A casino bot is funded through the wallet's operator ``Deposit`` (like a cashier), takes a
seat through registration's ``CasinoLobbyService.JoinCasinoTable``, then plays through the
table service's ``CasinoTableService`` and acknowledges every displayed result with
``AckResult``. On start it first resumes its unfinished rounds (``ListUnfinishedRounds``).
Every command carries a request id that stays the same across retries, so a retry after a
lost answer (e.g. the table service was killed and restarted) is answered as the first time.

Strategies (:data:`THB_STRATEGIES`): ``optimal`` (:class:`electric_math.strategy.OptimalThb`,
the exact enumeration's argmax) and ``simple`` (:class:`electric_domain.casino.thb.strategy.
SimpleThb`). THB has no timers, so there is no THB bot that never decides; the UTH bots
(:mod:`electric_bots.casino_uth`) have one.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from electric.common.v1 import errors_pb2
from electric.registration.v1 import casino_events_pb2 as reg_cev
from electric.registration.v1 import casino_pb2 as lobby_pb2
from electric.registration.v1 import casino_pb2_grpc as lobby_grpc
from electric.table.v1 import casino_pb2, casino_pb2_grpc
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_clients.errors import error_detail
from electric_domain.casino.thb.strategy import SimpleThb, ThbStrategy
from electric_platform import Role, SigningKey, TokenSource
from electric_platform.context import outgoing_metadata
from electric_platform.log import get_logger
from electric_platform.retry import Stopped, retry_async

from electric_bots.waits import LongestWait

T = TypeVar("T")

_log = get_logger("electric.bots.casino")

#: Status codes a casino bot waits out and retries with the SAME request id.
TRANSIENT = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.UNKNOWN,
}


#: Attempts of one call before its last error is raised (~3 minutes at the longest backoff).
MAX_ATTEMPTS = 200


def thb_strategy(name: str) -> ThbStrategy:
    """A THB strategy by name (``optimal`` loads the exact tables lazily)."""
    if name == "simple":
        return SimpleThb()
    if name == "optimal":
        from electric_math.strategy import OptimalThb

        return OptimalThb()
    raise ValueError(f"unknown THB strategy {name!r}; known: {', '.join(THB_STRATEGIES)}")


#: THB strategy names.
THB_STRATEGIES: tuple[str, ...] = ("optimal", "simple")


@dataclass
class GameTally:
    """What one game's bots saw settle (their own results)."""

    rounds: int = 0
    voided: int = 0
    staked_cents: int = 0
    returned_cents: int = 0
    decisions: int = 0
    #: Decisions the table took for a bot (auto-check / auto-fold), by street.
    timeouts: dict[str, int] = field(default_factory=dict)


@dataclass
class CasinoStats:
    """Counters shared by every casino bot of a runner (one event loop: no locking)."""

    games: dict[str, GameTally] = field(
        default_factory=lambda: {"thb": GameTally(), "uth": GameTally()}
    )
    #: Cents deposited per player (through the operator Deposit RPC).
    deposits: dict[str, int] = field(default_factory=dict)
    #: Rounds each bot claimed (started or joined), per game: the runner's budget.
    claimed: dict[str, int] = field(default_factory=lambda: {"thb": 0, "uth": 0})
    acks: int = 0
    #: AckResult refusals tolerated (UTH: a table without per-seat acknowledgements).
    ack_refused: int = 0
    resumed: int = 0
    retries: int = 0
    #: Watch streams reopened after their token expired (not errors: docs/security.md).
    reopened: int = 0
    errors: int = 0
    last_errors: list[str] = field(default_factory=list)
    #: The longest a bot waited for one call, retries included, per game.
    longest_wait: dict[str, LongestWait] = field(
        default_factory=lambda: {"thb": LongestWait(), "uth": LongestWait()}
    )

    def error(self, text: str) -> None:
        """Count an unexpected error and keep its message (bounded)."""
        self.errors += 1
        self.last_errors.append(text)
        del self.last_errors[:-20]

    def settled(self, game: str, view: casino_pb2.CasinoRoundView) -> None:
        """Fold a finished round the bot saw (its own bets' results)."""
        tally = self.games[game]
        if view.status == "voided":
            tally.voided += 1
            return
        tally.rounds += 1
        for r in view.results:
            tally.staked_cents += r.stake_cents
            tally.returned_cents += r.returned_cents


@dataclass(frozen=True)
class CasinoChannels:
    """One channel per service, shared by all casino bots."""

    registration: grpc.aio.Channel
    table: grpc.aio.Channel
    wallet: grpc.aio.Channel


class CasinoBot:
    """What every casino bot does: tokens, money, seat, retries (subclasses play)."""

    game = ""

    def __init__(
        self,
        player_id: str,
        channels: CasinoChannels,
        *,
        key: SigningKey,
        operator: TokenSource,
        stats: CasinoStats,
        may_play: Callable[[], bool],
        stop: asyncio.Event,
        deposit_cents: int = 1_000_000,
        ante_cents: int = 100,
    ) -> None:
        self.player_id = player_id
        self.tokens = TokenSource(key, player_id, Role.PLAYER)
        self._operator = operator
        self.stats = stats
        self.may_play = may_play
        self.stop = stop
        self.deposit_cents = deposit_cents
        self.ante_cents = ante_cents
        self.lobby = lobby_grpc.CasinoLobbyServiceStub(channels.registration)
        self.table = casino_pb2_grpc.CasinoTableServiceStub(channels.table)
        self._wallet = wallet_pb2_grpc.WalletServiceStub(channels.wallet)
        self._deposit_no = 0
        self.table_id = ""

    def md(self) -> tuple[tuple[str, str], ...]:
        return outgoing_metadata(self.tokens.token())

    async def sleep(self, seconds: float) -> bool:
        """Sleep unless stopped first; True when stopped."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.stop.wait(), timeout=seconds)
        return self.stop.is_set()

    async def call(self, fn: Callable[[], Awaitable[T]], what: str) -> T:
        """``fn()`` until it answers, retrying transient failures (same request: the server
        de-duplicates); raises :class:`Stopped` when stopped."""

        def counted(err: BaseException, attempt: int, delay: float) -> None:
            self.stats.retries += 1
            code = err.code().name if isinstance(err, grpc.aio.AioRpcError) else "?"
            _log.debug("casino_bot.retry", player=self.player_id, call=what, code=code)

        def transient(e: BaseException) -> bool:
            return isinstance(e, grpc.aio.AioRpcError) and e.code() in TRANSIENT

        waits = self.stats.longest_wait.setdefault(self.game, LongestWait())
        return await waits.timed(what, self.player_id, retry_async(
            fn, retry_on=transient, initial=0.05, maximum=1.0, stop=self.stop,
            before_sleep=counted, attempts=MAX_ATTEMPTS,
        ))  # fmt: skip

    # -- money -----------------------------------------------------------------------------

    async def deposit(self) -> None:
        """Fund the bot through the operator Deposit RPC (idempotent by transfer id)."""
        self._deposit_no += 1
        request = wallet_pb2.DepositRequest(
            transfer_id=f"casino-bot-deposit-{self.player_id}-{self._deposit_no}",
            player_id=self.player_id,
            amount=self.deposit_cents,
            memo="casino bot bankroll",
        )

        async def call() -> wallet_pb2.DepositResponse:
            response: wallet_pb2.DepositResponse = await self._wallet.Deposit(
                request, metadata=outgoing_metadata(self._operator.token()), timeout=10
            )
            return response

        response = await self.call(call, "Deposit")
        if not response.replayed:
            deposits = self.stats.deposits
            deposits[self.player_id] = deposits.get(self.player_id, 0) + self.deposit_cents

    @staticmethod
    def short_of_money(err: grpc.aio.AioRpcError) -> bool:
        """True when a refusal says the wallet lacks funds."""
        return bool(error_detail(err, errors_pb2.InsufficientFunds())) or (
            "insufficient" in (err.details() or "").lower()
        )

    # -- seat ------------------------------------------------------------------------------

    async def join(self, game: int, table_id: str = "") -> str:
        """Take a seat through the lobby; returns the table id."""

        async def call() -> lobby_pb2.JoinCasinoTableResponse:
            response: lobby_pb2.JoinCasinoTableResponse = await self.lobby.JoinCasinoTable(
                lobby_pb2.JoinCasinoTableRequest(game=game, table_id=table_id),  # type: ignore[arg-type]
                metadata=self.md(),
                timeout=10,
            )
            return response

        joined = await self.call(call, "JoinCasinoTable")
        self.table_id = joined.session.table_id
        return self.table_id

    async def leave(self) -> None:
        """Give the seat back (best effort)."""
        with contextlib.suppress(grpc.aio.AioRpcError, Stopped):
            await self.lobby.LeaveCasinoTable(
                lobby_pb2.LeaveCasinoTableRequest(table_id=self.table_id),
                metadata=self.md(),
                timeout=10,
            )

    # -- results ---------------------------------------------------------------------------

    async def ack(self, view: casino_pb2.CasinoRoundView) -> None:
        """Acknowledge a displayed result (idempotent), and count it once."""
        if view.acknowledged or view.status == "open":
            return

        async def call() -> casino_pb2.AckResultResponse:
            response: casino_pb2.AckResultResponse = await self.table.AckResult(
                casino_pb2.AckResultRequest(round_id=view.round_id), metadata=self.md(), timeout=10
            )
            return response

        await self.call(call, "AckResult")
        self.stats.settled(self.game, view)
        self.stats.acks += 1

    async def unfinished(self) -> list[casino_pb2.CasinoRoundView]:
        """The bot's unfinished rounds (open, or a result not yet acknowledged)."""

        async def call() -> casino_pb2.ListUnfinishedRoundsResponse:
            response: casino_pb2.ListUnfinishedRoundsResponse = (
                await self.table.ListUnfinishedRounds(
                    casino_pb2.ListUnfinishedRoundsRequest(), metadata=self.md(), timeout=10
                )
            )
            return response

        return [r for r in (await self.call(call, "ListUnfinishedRounds")).rounds]

    async def run(self) -> None:
        """Play until the budget is used or stopped; errors are counted, never raised."""
        try:
            await self.play()
        except Stopped:
            pass
        except grpc.aio.AioRpcError as err:
            if not self.stop.is_set():
                self.stats.error(f"{self.player_id}: {err.code().name}: {err.details()}")
        except Exception as exc:  # a bot must not take the runner down
            self.stats.error(f"{self.player_id}: {type(exc).__name__}: {exc}")
            _log.exception("casino_bot.failed", player=self.player_id)

    async def play(self) -> None:
        raise NotImplementedError


_THB_DECISIONS = {
    "fold": casino_pb2.CASINO_DECISION_FOLD,
    "call_flop": casino_pb2.CASINO_DECISION_CALL_FLOP,
    "check": casino_pb2.CASINO_DECISION_CHECK,
    "bet": casino_pb2.CASINO_DECISION_BET,
}


def thb_decision(strategy: ThbStrategy, view: casino_pb2.CasinoRoundView) -> str:
    """The strategy's answer to the round's open decision (``legal`` names it)."""
    hole, board = list(view.player_cards), list(view.board)
    legal = set(view.legal)
    if "call_flop" in legal:
        return strategy.preflop(hole)
    if "bet_turn" in legal:
        return strategy.turn(hole, board[:3])
    if "bet_river" in legal:
        return strategy.river(hole, board[:4])
    raise ValueError(f"no decision open in round {view.round_id} (legal {sorted(legal)})")


class ThbBot(CasinoBot):
    """Plays THB rounds at its private table: Deal, decide per strategy, AckResult."""

    game = "thb"

    def __init__(self, player_id: str, channels: CasinoChannels, **kw: Any) -> None:
        self.strategy: ThbStrategy = kw.pop("strategy", None) or SimpleThb()
        #: Seconds a Deal waits for the table service to learn the seat (registration event).
        self.seat_wait = float(kw.pop("seat_wait", 60.0))
        super().__init__(player_id, channels, **kw)
        self._deal_no = 0

    async def play(self) -> None:
        await self.deposit()
        await self.join(reg_cev.CASINO_GAME_CODE_THB)
        for view in await self.unfinished():
            self.stats.resumed += 1
            await self.finish(view)
        while not self.stop.is_set() and self.may_play():
            dealt = await self.deal()
            if dealt is None:
                return
            await self.finish(dealt)

    async def deal(self) -> casino_pb2.CasinoRoundView | None:
        """Start a round (waiting for the seat to reach the table, topping up when short)."""

        def new_request() -> casino_pb2.DealRequest:
            self._deal_no += 1
            return casino_pb2.DealRequest(
                request_id=f"{self.player_id}-deal-{self._deal_no}-{uuid.uuid4().hex[:6]}",
                table_id=self.table_id,
                ante_cents=self.ante_cents,
            )

        request = new_request()

        async def call() -> casino_pb2.DealResponse:
            response: casino_pb2.DealResponse = await self.table.Deal(
                request, metadata=self.md(), timeout=10
            )
            return response

        waited = 0.0
        while True:
            try:
                return (await self.call(call, "Deal")).round
            except grpc.aio.AioRpcError as err:
                code = err.code()
                if code is grpc.StatusCode.PERMISSION_DENIED and waited < self.seat_wait:
                    waited += 0.1  # the seat is not at the table yet (registration's event)
                    if await self.sleep(0.1):
                        return None
                elif code is grpc.StatusCode.FAILED_PRECONDITION and self.short_of_money(err):
                    await self.deposit()
                elif code is grpc.StatusCode.FAILED_PRECONDITION:
                    # An open round already (e.g. a lost answer): resume it instead.
                    for view in await self.unfinished():
                        await self.finish(view)
                    request = new_request()  # that refusal is stored under the old id
                else:
                    raise

    async def finish(self, view: casino_pb2.CasinoRoundView) -> None:
        """Decide until the round is over, then acknowledge the result."""
        n = 0
        while view.status == "open":
            n += 1
            answer = thb_decision(self.strategy, view)
            request = casino_pb2.DecideRequest(
                request_id=f"{view.round_id}-{view.version}-{n}",
                round_id=view.round_id,
                decision=_THB_DECISIONS[answer],
            )

            async def call(request: casino_pb2.DecideRequest = request) -> Any:
                return await self.table.Decide(request, metadata=self.md(), timeout=10)

            try:
                view = (await self.call(call, "Decide")).round
            except grpc.aio.AioRpcError as err:
                if err.code() is grpc.StatusCode.FAILED_PRECONDITION and self.short_of_money(err):
                    await self.deposit()
                    continue
                if err.code() is not grpc.StatusCode.FAILED_PRECONDITION:
                    raise
                before = view.version
                view = await self.get(view.round_id)  # moved on meanwhile (e.g. voided)?
                if view.status == "open" and view.version == before:
                    raise  # refused with nothing changed: a bug, not a race
            self.stats.games[self.game].decisions += 1
        await self.ack(view)

    async def get(self, round_id: str) -> casino_pb2.CasinoRoundView:
        async def call() -> casino_pb2.GetRoundResponse:
            response: casino_pb2.GetRoundResponse = await self.table.GetRound(
                casino_pb2.GetRoundRequest(round_id=round_id), metadata=self.md(), timeout=10
            )
            return response

        return (await self.call(call, "GetRound")).round
