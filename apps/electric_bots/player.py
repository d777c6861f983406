"""One bot player: a real gRPC client of the public APIs, driven by a pure strategy.

Life of a bot (:meth:`BotPlayer.run`):

1. its wallet is funded by the operator ``Deposit`` RPC (the runner's cashier token);
2. it registers entries at its tier while the runner allows (at most ``max_active`` open);
3. ``WatchMyTables`` tells it when its tables change; for each entry it watches the table
   (``WatchTable``; resumed from the last sequence it handled when it ends or fails, e.g.
   UNAVAILABLE when the table moved to another instance) and on its turn answers with ``Act``
   quoting the hand and action sequence it saw (or lets the timer run, sits out/in, selects
   a pre-turn action) until the table is over for it (:mod:`electric_bots.table_play`);
4. draining, it stops registering, withdraws waiting entries, plays running tables out.
Nothing here reads a service's database or bus: what a bot knows, a human client could know.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from electric.common.v1 import errors_pb2
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.table.v1 import table_pb2_grpc
from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_clients.errors import error_detail, token_expired
from electric_domain.tournament.bots import Bot
from electric_platform import Role, SigningKey, TokenSource
from electric_platform.context import outgoing_metadata
from electric_platform.log import get_logger
from electric_platform.retry import Stopped, backoff_delay, retry_async

from electric_bots.table_play import TRANSIENT, Outcome, TableSession
from electric_bots.waits import LongestWait

T = TypeVar("T")

_log = get_logger("electric.bots")

#: How a WatchMyTables stream may end without it being an error (it is reopened).
_QUIET = {*TRANSIENT, grpc.StatusCode.CANCELLED}
#: Enough failures in a row for the longest backoff.
_MANY_FAILURES = 16


@dataclass
class BotStats:
    """Counters shared by every bot of a runner (one event loop: no locking needed)."""

    registrations: int = 0
    entries: int = 0
    unregistered: int = 0
    actions: int = 0
    timeouts_let_run: int = 0
    sit_outs: int = 0
    sit_ins: int = 0
    pre_actions: int = 0
    stale_commands: int = 0
    #: WatchTable streams re-opened after a silence (a lost update is recovered this way).
    resubscribes: int = 0
    #: Acts refused as illegal and answered again with the most passive action.
    fallbacks: int = 0
    errors: int = 0
    unimplemented: int = 0
    #: Cents deposited per player (through the operator Deposit RPC).
    deposits: dict[str, int] = field(default_factory=dict)
    #: Tables a bot saw reach TABLE_STATUS_FINISHED.
    tables_finished: set[str] = field(default_factory=set)
    #: Tables a bot played (saw running with its seat).
    tables_played: set[str] = field(default_factory=set)
    #: Tables My Tables showed cancelled while a bot held an entry there.
    tables_cancelled: set[str] = field(default_factory=set)
    #: Tables a bot gave up: nothing new for ``BotPlayer.stall_seconds`` (also an error).
    tables_abandoned: set[str] = field(default_factory=set)
    #: Last error messages (bounded), for diagnostics.
    last_errors: list[str] = field(default_factory=list)
    #: Other diagnostic lines (bounded), e.g. streams resubscribed after a silence.
    notes: list[str] = field(default_factory=list)
    #: Last refusals of stale commands (bounded), for diagnostics.
    last_stale: list[str] = field(default_factory=list)
    #: The longest a bot waited for one call (an Act, a Register...), retries included.
    longest_wait: LongestWait = field(default_factory=LongestWait)
    #: Request ids of the acknowledged Acts, when a test puts a set here (none lost/repeated).
    acked_acts: set[str] | None = None

    def note(self, text: str) -> None:
        """Keep a diagnostic line (bounded)."""
        self.notes.append(text)
        del self.notes[:-20]

    def error(self, text: str) -> None:
        """Count an unexpected error and keep its message."""
        self.errors += 1
        self.last_errors.append(text)
        del self.last_errors[:-20]


@dataclass(frozen=True)
class Channels:
    """One channel per service, shared by all bots (gRPC multiplexes calls on it)."""

    registration: grpc.aio.Channel
    table: grpc.aio.Channel
    wallet: grpc.aio.Channel


@dataclass(frozen=True)
class BotSettings:
    """How one bot behaves."""

    player_id: str
    tier_id: str
    #: Entries per Register call (each at a different table).
    entries: int = 1
    #: At most this many of the bot's entries open (registering or playing) at once.
    max_active: int = 1
    #: First deposit in cents, and the top-up when a Register is refused for lack of funds.
    deposit_cents: int = 100_000
    #: Multiplies the strategy's thinking time (0 = answer at once).
    think_scale: float = 0.0
    #: Upper bound of one thinking pause in seconds.
    max_think_seconds: float = 2.0


def _code(err: grpc.aio.AioRpcError) -> grpc.StatusCode:
    return err.code()


def _short_of_money(err: grpc.aio.AioRpcError) -> bool:
    """True when a refusal says the wallet lacks funds (detail or message)."""
    return (
        error_detail(err, errors_pb2.InsufficientFunds()) or "fund" in (err.details() or "").lower()
    )


class BotPlayer:
    """A bot playing through the public gRPC APIs (see the module docstring)."""

    def __init__(
        self,
        settings: BotSettings,
        strategy: Bot,
        rng: random.Random,
        channels: Channels,
        *,
        key: SigningKey,
        operator: TokenSource,
        stats: BotStats,
        may_register: Callable[[], bool],
        draining: asyncio.Event,
        stop: asyncio.Event,
    ) -> None:
        self.settings = settings
        self.player_id = settings.player_id
        self.strategy = strategy
        self.rng = rng
        self._tokens = TokenSource(key, settings.player_id, Role.PLAYER)
        self._operator = operator
        self._stats = stats
        self._may_register = may_register
        self._draining = draining
        self._stop = stop
        self._registration = registration_pb2_grpc.RegistrationServiceStub(channels.registration)
        self._table = table_pb2_grpc.TableServiceStub(channels.table)
        self._wallet = wallet_pb2_grpc.WalletServiceStub(channels.wallet)
        #: Table id -> entry id of the bot's open entries.
        self._open: dict[str, str] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._changed = asyncio.Event()
        self._my_tables: dict[str, registration_pb2.MyTable] = {}
        self._deposit_no = 0
        #: Seconds without a table view after which the bot resubscribes.
        self.idle_seconds = 15.0
        #: Seconds without anything new from a table (not waiting for players) after which
        #: the bot gives it up: a live table moves every 20 s at most (10 s action timer +
        #: 10 s time bank), an owner moves or fails over in well under a minute.
        self.stall_seconds = 180.0

    # -- plumbing --------------------------------------------------------------------------

    def _md(self) -> tuple[tuple[str, str], ...]:
        return outgoing_metadata(self._tokens.token())

    async def _sleep(self, seconds: float) -> bool:
        """Sleep unless stopped first; True when stopped."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=seconds)
        return self._stop.is_set()

    async def _retry(self, fn: Callable[[], Awaitable[T]], what: str) -> T | None:
        """Call ``fn`` until it succeeds, retrying transient failures (0.2 s doubling to
        1 s: a table moved to another instance answers again seconds later); None if stopped."""

        def retrying(err: Any, attempt: int, delay: float) -> None:  # only AioRpcError
            _log.debug("bot.retry", player=self.player_id, call=what, code=_code(err).name)

        transient = lambda e: isinstance(e, grpc.aio.AioRpcError) and _code(e) in TRANSIENT  # noqa: E731
        with contextlib.suppress(Stopped):
            return await self._stats.longest_wait.timed(what, self.player_id, retry_async(
                fn, retry_on=transient, initial=0.2, maximum=1.0, stop=self._stop,
                before_sleep=retrying,
            ))  # fmt: skip
        return None

    # -- money -----------------------------------------------------------------------------

    async def deposit(self, amount: int) -> None:
        """Fund the bot's wallet through the operator Deposit RPC (idempotent by id)."""
        self._deposit_no += 1
        request = wallet_pb2.DepositRequest(
            transfer_id=f"bot-deposit-{self.player_id}-{self._deposit_no}",
            player_id=self.player_id,
            amount=amount,
            memo="bot bankroll",
        )

        async def call() -> wallet_pb2.DepositResponse:
            response: wallet_pb2.DepositResponse = await self._wallet.Deposit(
                request, metadata=outgoing_metadata(self._operator.token()), timeout=10
            )
            return response

        response = await self._retry(call, "Deposit")
        if response is not None and not response.replayed:
            deposits = self._stats.deposits
            deposits[self.player_id] = deposits.get(self.player_id, 0) + amount

    async def ensure_funds(self) -> None:
        """Deposit ``deposit_cents`` unless the wallet still holds half of it (a restart)."""

        async def call() -> wallet_pb2.GetBalanceResponse:
            response: wallet_pb2.GetBalanceResponse = await self._wallet.GetBalance(
                wallet_pb2.GetBalanceRequest(), metadata=self._md(), timeout=10
            )
            return response

        try:
            balance = await self._retry(call, "GetBalance")
        except grpc.aio.AioRpcError as err:
            if _code(err) is not grpc.StatusCode.NOT_FOUND:
                raise
            balance = None  # a new player: no wallet yet
        if balance is None or balance.balance.balance < self.settings.deposit_cents // 2:
            await self.deposit(self.settings.deposit_cents)

    async def _adopt(self) -> None:
        """Pick up the entries this player already has (e.g. after a restart of the runner)."""

        async def call() -> registration_pb2.ListMyTablesResponse:
            response: registration_pb2.ListMyTablesResponse = await self._registration.ListMyTables(
                registration_pb2.ListMyTablesRequest(), metadata=self._md(), timeout=10
            )
            return response

        try:
            mine = await self._retry(call, "ListMyTables")
        except grpc.aio.AioRpcError as err:
            self._stats.error(f"ListMyTables: {_code(err).name}: {err.details()}")
            return
        for table in mine.tables if mine is not None else ():
            if table.my_entries and table.table_id not in self._open:
                self._track(table.table_id, table.my_entries[0].entry_id)

    def _track(self, table_id: str, entry_id: str) -> None:
        self._open[table_id] = entry_id
        self._tasks[table_id] = asyncio.create_task(
            self._play(table_id), name=f"play-{self.player_id}-{table_id}"
        )

    # -- main loop -------------------------------------------------------------------------

    async def run(self) -> None:
        """Deposit, then register and play until stopped (or drained and done)."""
        try:
            await self.ensure_funds()
            await self._adopt()
            watcher = asyncio.create_task(
                self._watch_my_tables(), name=f"mytables-{self.player_id}"
            )
            try:
                await self._register_loop()
                await self._drain()
            finally:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await watcher
        finally:
            for task in self._tasks.values():
                task.cancel()
            for task in list(self._tasks.values()):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    async def _register_loop(self) -> None:
        failures = 0  # Register attempts in a row that did not seat the bot
        while not self._stop.is_set() and not self._draining.is_set():
            free = self.settings.max_active - len(self._open)
            if free <= 0 or not self._may_register():
                await self._wait_change(1.0)
                continue
            entries = max(1, min(self.settings.entries, free))
            try:
                ok = await self._register(entries)
            except grpc.aio.AioRpcError as err:
                ok = False
                if _code(err) is grpc.StatusCode.UNIMPLEMENTED:
                    self._stats.unimplemented += 1
                    failures = _MANY_FAILURES  # no registration here: wait the longest
                elif _code(err) is grpc.StatusCode.FAILED_PRECONDITION and _short_of_money(err):
                    await self.deposit(self.settings.deposit_cents)
                else:
                    self._stats.error(f"Register: {_code(err).name}: {err.details()}")
            if ok:
                failures = 0
            elif await self._sleep(backoff_delay(failures, initial=0.5, maximum=5.0)):
                return
            else:
                failures += 1

    async def _register(self, entries: int) -> bool:
        request = registration_pb2.RegisterRequest(
            request_id=str(uuid.uuid4()), tier_id=self.settings.tier_id, entries=entries
        )

        async def call() -> registration_pb2.RegisterResponse:
            response: registration_pb2.RegisterResponse = await self._registration.Register(
                request, metadata=self._md(), timeout=15
            )
            return response

        response = await self._retry(call, "Register")
        if response is None:
            return False
        self._stats.registrations += 1
        for entry in response.entries:
            self._stats.entries += 1
            self._track(entry.table_id, entry.entry_id)
        return bool(response.entries)

    async def _wait_change(self, timeout: float) -> None:
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout=timeout)

    async def _watch_my_tables(self) -> None:
        """Follow the Multi-Table Bar; wake the table tasks when a table changes."""
        while not self._stop.is_set():
            try:
                stream = self._registration.WatchMyTables(
                    registration_pb2.WatchMyTablesRequest(), metadata=self._md()
                )
                async for snapshot in stream:
                    self._my_tables = {t.table_id: t for t in snapshot.tables}
                    self._changed.set()
            except grpc.aio.AioRpcError as err:  # a stream ends when its token expires: reopen
                if _code(err) not in _QUIET and not token_expired(err):
                    self._stats.error(f"WatchMyTables: {_code(err).name}: {err.details()}")
            if await self._sleep(1.0):
                return

    async def _drain(self) -> None:
        """Stop registering: withdraw entries still waiting, finish the running tables."""
        if self._stop.is_set():
            return
        for table_id, entry_id in list(self._open.items()):
            mine = self._my_tables.get(table_id)
            if mine is not None and mine.status != registration_pb2.TABLE_STATUS_REGISTERING:
                continue
            try:
                await self._registration.Unregister(
                    registration_pb2.UnregisterRequest(
                        request_id=str(uuid.uuid4()), entry_id=entry_id
                    ),
                    metadata=self._md(),
                    timeout=15,
                )
            except grpc.aio.AioRpcError as err:
                if _code(err) is grpc.StatusCode.FAILED_PRECONDITION:
                    continue  # the table filled meanwhile: play it
                self._stats.error(f"Unregister: {_code(err).name}: {err.details()}")
                continue
            self._stats.unregistered += 1
            self._open.pop(table_id, None)
            task = self._tasks.pop(table_id, None)
            if task is not None:
                task.cancel()
        while self._tasks and not self._stop.is_set():
            await asyncio.wait(list(self._tasks.values()), timeout=1.0)

    # -- one table -------------------------------------------------------------------------

    async def _play(self, table_id: str) -> None:
        try:
            await self.play_table(table_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in a bot must not stop the others
            self._stats.error(f"play {table_id}: {exc!r}")
            _log.exception("bot.play_failed", player=self.player_id, table_id=table_id)
        finally:
            self._open.pop(table_id, None)
            self._tasks.pop(table_id, None)
            self._changed.set()

    async def play_table(self, table_id: str) -> Outcome:
        """Watch and play ``table_id`` until it is over for this bot (``table_play``)."""
        return await TableSession(self, table_id).run()
