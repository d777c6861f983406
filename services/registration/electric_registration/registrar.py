"""Register and Unregister end to end: intent, wallet reservations, seats, owed wallet work.

Register (N entries, all or nothing):

1. ``handlers.begin_attempt`` records the request (``reserving``) with deterministic entry
   ids ``uuid5(sha256(player, request_id), attempt, i)``; a completed request is answered
   from its record (nothing reserved again).
2. For several entries the player's balance is checked first (fast refusal, nothing
   reserved; one entry's reservation is its own check); then each entry reserves its
   buy-in: pending wallet transfer ``buyin-<entry_id>`` from the player's funds to
   ``house:tournament_escrow`` (idempotent by that id).
3. If any reservation fails, every key of the attempt is voided (``voiding`` → ``failed``)
   and the error is returned (FAILED_PRECONDITION with ``InsufficientFunds`` for money).
4. ``handlers.seat_entries`` seats all entries in one transaction (and fills tables).
5. After the commit the filled tables' wallet work runs (post, rake, net), then
   TournamentStarted; a crash anywhere is completed by ``WalletWork`` on the next pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta

import grpc
from electric_clients import accounts
from electric_clients.wallet import WalletClient, insufficient_funds
from electric_domain import lobby
from electric_domain.tournament import TournamentConfig
from electric_eventlog import ConcurrencyError, EventStore
from electric_platform.errors import Aborted, ServiceError, Unavailable
from electric_platform.log import get_logger
from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError

from electric_registration import handlers
from electric_registration.fill import SeedLost
from electric_registration.metrics import RegistrationMetrics
from electric_registration.store import repo
from electric_registration.wallet_work import STALE_ATTEMPT, WalletWork

log = get_logger("electric.registration.registrar")

_SEAT_ATTEMPTS = 5
#: How long a retry waits for an earlier call of the same request to finish.
IN_FLIGHT_WAIT = 30.0


def _wallet_error(err: grpc.aio.AioRpcError, what: str) -> ServiceError:
    if err.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return Unavailable(f"wallet unavailable while {what}: {err.details()}")
    return ServiceError(
        f"wallet refused {what}: {err.details()}", code=err.code() or grpc.StatusCode.UNKNOWN
    )


class Registrar:
    """Application service behind Register/Unregister."""

    def __init__(
        self,
        engine: Engine,
        store: EventStore,
        config: TournamentConfig,
        wallet: WalletClient,
        work: WalletWork,
        *,
        notify: Callable[[set[str]], None] = lambda _players: None,
        stale_after: timedelta = STALE_ATTEMPT,
        metrics: RegistrationMetrics | None = None,
    ) -> None:
        self.metrics = metrics or RegistrationMetrics()
        self.engine = engine
        self.store = store
        self.config = config
        self.wallet = wallet
        self.work = work
        self.notify = notify
        self.stale_after = stale_after
        self._tasks: set[asyncio.Task[bool]] = set()

    async def register(
        self, *, player_id: str, request_id: str, tier_id: str, entries: int, correlation_id: str
    ) -> tuple[list[repo.EntryRow], bool]:
        """Buy ``entries`` seats; returns the entries and whether this was a replay.
        Refusals are the lobby's typed errors (``electric_domain.lobby.errors``)."""
        lobby.check_entry_count(entries)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + IN_FLIGHT_WAIT
        while True:
            try:
                begun: (
                    handlers.Attempt | handlers.InFlight | handlers.Done
                ) = await asyncio.to_thread(
                    handlers.begin_attempt,
                    self.engine,
                    player_id=player_id,
                    request_id=request_id,
                    tier_id=tier_id,
                    entries=entries,
                    stale_after=self.stale_after,
                )
            except IntegrityError:
                # Two first calls of one request inserted its row at once; the other won.
                begun = handlers.InFlight("", 0)
            if isinstance(begun, handlers.Done):
                return await asyncio.to_thread(self._entries, begun.entry_ids), True
            if isinstance(begun, handlers.Attempt):
                break
            # The same request is being carried out by another call (a client retry that
            # overtook its first try): wait for that outcome instead of racing it.
            if loop.time() > deadline:
                raise Aborted(
                    f"request {request_id!r} is still being processed by an earlier call; "
                    "retry with the same request_id"
                )
            await asyncio.sleep(0.05)
        attempt = begun
        if entries > 1:
            # Several entries: refuse at once rather than reserve some and roll them back.
            # One entry: its reservation is the check (the wallet refuses it whole, with
            # the same InsufficientFunds detail), one wallet call fewer per Register.
            await self._check_funds(attempt, player_id, entries)
        await self._reserve(attempt, player_id, entries)
        seated = await self._seat(attempt, player_id, request_id, correlation_id)
        if not seated.current:
            if seated.entry_ids:  # a concurrent twin of this request completed it
                return await asyncio.to_thread(self._entries, seated.entry_ids), True
            # The attempt was rolled back under us (sweeper): give the money back.
            await self._rollback(attempt, entries, "attempt abandoned")
            raise Aborted(f"request {request_id!r} was rolled back while it waited; retry it")
        self.notify(seated.players)
        self.metrics.entries.labels(attempt.tier.tier_id).inc(len(seated.entry_ids))
        for multiplier in seated.multipliers.values():
            self.metrics.filled.labels(attempt.tier.tier_id, str(multiplier)).inc()
        for table_id in seated.filled:
            task = asyncio.create_task(self._post_fill(table_id))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        return await asyncio.to_thread(self._entries, seated.entry_ids), False

    async def _post_fill(self, table_id: str) -> bool:
        """Run a filled table's wallet work now (the background pass retries failures)."""
        try:
            return await self.work.run_table(table_id)
        except Exception:
            log.exception("register.post_fill_failed", table_id=table_id)
            return False

    def _entries(self, entry_ids: list[str]) -> list[repo.EntryRow]:
        with self.engine.connect() as conn:
            return repo.entries_by_id(conn, entry_ids)

    async def _fail(self, attempt: handlers.Attempt, error: str) -> None:
        await asyncio.to_thread(
            handlers.end_attempt,
            self.engine,
            attempt.key,
            attempt.attempt,
            status="failed",
            error=error,
        )

    async def _check_funds(self, attempt: handlers.Attempt, player_id: str, entries: int) -> None:
        required = entries * attempt.tier.buy_in_cents
        try:
            available = (await self.wallet.balance(player_id)).balance
        except grpc.aio.AioRpcError as err:
            if err.code() != grpc.StatusCode.NOT_FOUND:
                await self._fail(attempt, f"balance: {err.code().name}")
                raise _wallet_error(err, "reading the balance") from err
            available = 0  # no wallet yet
        if available < required:
            await self._fail(attempt, "insufficient funds")
            raise self._insufficient(player_id, available, required, entries, attempt)

    def _insufficient(
        self,
        player_id: str,
        available: int,
        required: int,
        entries: int,
        attempt: handlers.Attempt,
    ) -> lobby.InsufficientFunds:
        return lobby.InsufficientFunds(
            player_id,
            available=available,
            required=required,
            entries=entries,
            tier_name=attempt.tier.name,
        )

    async def _reserve(self, attempt: handlers.Attempt, player_id: str, entries: int) -> None:
        tier = attempt.tier
        for i, entry_id in enumerate(attempt.entry_ids):
            try:
                await self.wallet.reserve(
                    handlers.buyin_transfer_id(entry_id),
                    player_id,
                    tier.buy_in_cents,
                    memo=f"{tier.name} buy-in, entry {i + 1}/{entries}",
                )
            except grpc.aio.AioRpcError as err:
                short = insufficient_funds(err)
                # A player the wallet has never seen has no funds (no accounts to debit).
                no_wallet = err.code() == grpc.StatusCode.NOT_FOUND and (
                    accounts.player_account(player_id, "") in (err.details() or "")
                )
                if (short is not None or no_wallet) and i == 0:
                    await self._fail(attempt, "insufficient funds")  # nothing was reserved
                else:
                    await self._rollback(attempt, entries, f"reserve: {err.code().name}")
                if short is not None or no_wallet:
                    # Funds moved since the balance check: report what the whole request
                    # needs against what was available before it.
                    available = (short.available.cents if short else 0) + i * tier.buy_in_cents
                    raise self._insufficient(
                        player_id, available, entries * tier.buy_in_cents, entries, attempt
                    ) from err
                raise _wallet_error(err, "reserving the buy-in") from err

    async def _rollback(self, attempt: handlers.Attempt, entries: int, error: str) -> None:
        """Void every reservation of the attempt (all or nothing) and mark it failed; when
        the wallet is unreachable the attempt stays ``voiding`` for the sweeper."""
        await asyncio.to_thread(
            handlers.end_attempt,
            self.engine,
            attempt.key,
            attempt.attempt,
            status="voiding",
            error=error,
        )
        try:
            await self.work.void_attempt(attempt.key, attempt.attempt, entries)
        except grpc.aio.AioRpcError as err:
            log.warning("register.rollback_deferred", request_key=attempt.key, code=err.code().name)

    async def _seat(
        self, attempt: handlers.Attempt, player_id: str, request_id: str, correlation_id: str
    ) -> handlers.Seated:
        for n in range(1, _SEAT_ATTEMPTS + 1):
            try:
                return await asyncio.to_thread(
                    handlers.seat_entries,
                    self.store,
                    self.config,
                    player_id=player_id,
                    request_id=request_id,
                    attempt=attempt,
                    correlation_id=correlation_id,
                )
            except ConcurrencyError:
                if n == _SEAT_ATTEMPTS:
                    raise Aborted(
                        "registration kept conflicting with concurrent registrations; retry "
                        "with the same request_id"
                    ) from None
                await asyncio.sleep(0.01 * n)
            except SeedLost as lost:
                # The seating transaction stored nothing: give this attempt's reservations
                # back and name the table for the operator, who must cancel it (it stays
                # open, and every Register that would fill it is refused the same way).
                log.error(
                    "register.seed_lost",
                    table_id=lost.table_id,
                    needs_cancel=lost.difference,
                    request_key=attempt.key,
                )
                await self._rollback(attempt, len(attempt.entry_ids), "seed lost")
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def unregister(
        self,
        *,
        entry_id: str,
        table_id: str,
        player_id: str,
        may_act_for: str | None,
        request_id: str,
        correlation_id: str,
    ) -> repo.EntryRow:
        """Withdraw an entry and void its reservation (retried by WalletWork if the wallet
        does not answer now). ``entry_id`` or ``table_id`` names it."""
        for n in range(1, _SEAT_ATTEMPTS + 1):
            try:
                done = await asyncio.to_thread(
                    handlers.unregister,
                    self.store,
                    entry_id=entry_id,
                    table_id=table_id,
                    player_id=player_id,
                    may_act_for=may_act_for,
                    request_id=request_id,
                    correlation_id=correlation_id,
                )
                break
            except ConcurrencyError:
                if n == _SEAT_ATTEMPTS:
                    raise Aborted("unregister kept conflicting; retry") from None
                await asyncio.sleep(0.01 * n)
        if done.changed:
            self.notify(done.players)
            self.metrics.unregistrations.labels(done.entry.tier_id).inc()
        await self.work.run_table(done.entry.table_id)
        return done.entry

    async def drain(self) -> None:
        """Wait for the post-fill tasks started by Register (tests, shutdown)."""
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
