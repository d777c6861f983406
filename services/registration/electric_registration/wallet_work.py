"""Wallet work owed by committed decisions, carried out as owed work (one shared runner,
``electric_platform.owed_work``), and the sweep of abandoned Register attempts.

``registration_wallet_ops`` rows are written in the same transaction as the decision that
owes them (a filled table owes, per entry, ``post buyin-<entry>``, ``move rake-<entry>``
escrow → house rake and ``move net-<entry>`` escrow → prize reserve; an unregistered entry
owes ``void buyin-<entry>``: ``electric_domain.lobby.settlement``). Every call carries its
transfer id as idempotency key, so doing an op twice is one transfer. The ops of a table run
in ``seq`` order (a failed post or move stops the table's later ops; a failed void does
not); once all of a filled table's ops are done, TournamentStarted is appended
(``handlers.start_if_paid``).

A post the wallet refuses for good (FAILED_PRECONDITION: the reservation was voided, e.g. by
an operator; NOT_FOUND: it does not exist) can never succeed: the table is cancelled at once
(:func:`.cancellation.cancel_table`, exactly once), its pending ops are cancelled and one
``unwind`` op per entry gives the buy-in back. An op that is no longer pending when its turn
comes (the table was cancelled meanwhile) is skipped. An unwind reads what the wallet holds
(``electric_domain.lobby.cancel.unwind_steps``): a pending reservation is voided; a posted
buy-in is refunded whole from the escrow after its rake and net moves are moved back.

Each pass also sweeps Register attempts that never reached their seating transaction (a
crash between the reservations and the seats, or an abandoned insufficient-funds rollback):
it voids every reservation key of such an attempt, then marks it failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta

import grpc
from electric.wallet.v1 import ledger_pb2, wallet_pb2
from electric_clients.wallet import WalletClient
from electric_domain import lobby
from electric_domain.tournament import TournamentConfig, default_config
from electric_eventlog import EventStore, utc_now
from electric_platform.log import get_logger
from electric_platform.owed_work import OwedWork, describe_error
from sqlalchemy import Engine

from electric_registration import cancellation, fill, handlers
from electric_registration.store import seating, wallet_ops

log = get_logger("electric.registration.wallet_work")

#: A Register attempt still ``reserving`` after this long is considered abandoned.
STALE_ATTEMPT = timedelta(seconds=120)
#: Wallet calls in flight at once, across tables (a table's own ops still run one after
#: the other, in order). One at a time made a burst of fills queue: at 50 tables filled
#: together, 450 posts and moves ran end to end and Register -> seated took 18-22 s
#: (issue 16, docs/benchmarks.md). The wallet's group commit batches concurrent calls.
#: 32 in flight settled a burst of 50 fills no sooner than 8 (issue 26 item 5: 5.0-5.7 s
#: against 5.0-5.3 s from TableFilled to TournamentStarted, p50): the burst is CPU-bound.
WALLET_PARALLELISM = 8
#: Wallet answers to a post that no retry can change.
PERMANENT = (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.NOT_FOUND)
_STATES = {
    ledger_pb2.TRANSFER_STATE_PENDING: lobby.TransferState.PENDING,
    ledger_pb2.TRANSFER_STATE_POSTED: lobby.TransferState.POSTED,
    ledger_pb2.TRANSFER_STATE_VOIDED: lobby.TransferState.VOIDED,
}


@dataclass(frozen=True)
class WalletCall:
    """One owed wallet op (an ``OwedCall``: grouped by table)."""

    op: wallet_ops.OwedOp
    #: Whether a table's posts run together, then its moves (:attr:`stage`).
    staged: bool = True

    @property
    def op_id(self) -> str:
        return self.op.op_id

    @property
    def group(self) -> str:
        return self.op.table_id

    @property
    def correlation_id(self) -> str:
        """Correlation id of the decision that owes the op (bound while it runs)."""
        return self.op.correlation_id

    @property
    def causation_id(self) -> str:
        """Id of the event that owes the op: the wallet records it as the transfer's cause."""
        return self.op.causation_id

    @property
    def stage(self) -> str | None:
        """A table's posts run together, then its moves (``OwedWork`` stages; the settlement
        owes every post before any move: ``electric_domain.lobby.buy_in_settlement``);
        unstaged, one op after the other."""
        return self.op.kind if self.staged else None

    @property
    def blocking(self) -> bool:
        # Nothing may leave the escrow before the buy-in is posted; a void or an unwind is
        # independent of the table's other entries.
        return self.op.kind not in ("void", "unwind")


class WalletWork:
    """Runs owed wallet ops (as an ``OwedWorkSource``) and sweeps abandoned attempts."""

    def __init__(
        self,
        engine: Engine,
        store: EventStore,
        wallet: WalletClient,
        *,
        notify: Callable[[set[str]], None] = lambda _players: None,
        stale_after: timedelta = STALE_ATTEMPT,
        interval: float = 1.0,
        config: TournamentConfig | None = None,
        parallelism: int = WALLET_PARALLELISM,
        staged: bool | None = None,
    ) -> None:
        self.config = config or default_config()
        self.engine = engine
        self.store = store
        self.wallet = wallet
        self.notify = notify
        self.stale_after = stale_after
        #: Stages on PostgreSQL only (unless told). On SQLite every bookkeeping write takes
        #: the one database lock: a table's three posts marked done at once made writers
        #: wait on each other, and a burst of 50 fills on the embedded runner settled in
        #: 14.1 s (p50) against 8.9 s one op after the other (issue 26 item 5).
        self.staged = engine.dialect.name == "postgresql" if staged is None else staged
        self.work: OwedWork[WalletCall, wallet_pb2.Transfer | None] = OwedWork(
            "wallet_op", self, interval=interval, parallelism=parallelism
        )

    async def run_table(self, table_id: str) -> bool:
        """Do the pending ops of one table in order; start its tournament when paid.
        True when nothing failed."""
        return (await self.work.run_group(table_id)).ok

    async def run_pending(self) -> None:
        """One pass: every table with pending ops or waiting to start, then the sweep."""
        await self.work.run_pass()

    async def run(self, stop: asyncio.Event) -> None:
        """Background loop until ``stop``."""
        await self.work.run(stop)

    # ------------------------------------------------------------------ OwedWorkSource

    def pending(self, group: str | None) -> list[WalletCall]:
        with self.engine.connect() as conn:
            return [WalletCall(op, self.staged) for op in wallet_ops.pending(conn, group)]

    def groups_waiting(self) -> Iterable[str]:
        with self.engine.connect() as conn:
            return seating.filled_not_started(conn)

    async def perform(self, call: WalletCall) -> wallet_pb2.Transfer | None:
        op = call.op
        if not await asyncio.to_thread(self._still_owed, op.op_id):
            return None  # cancelled meanwhile (record_done then changes nothing)
        if op.kind == "post":
            try:
                return await self.wallet.post(op.transfer_id)
            except grpc.aio.AioRpcError as err:
                if err.code() in PERMANENT:
                    await self._cancel_unpostable(op, describe_error(err))
                raise
        if op.kind == "unwind":
            await self._unwind(op)
            return None
        if op.kind == "move":
            return await self.wallet.move(
                op.transfer_id, op.from_account, op.to_account, op.amount_cents, code=op.code
            )
        if op.kind == "void":
            return await self._void(op.transfer_id, op.code)
        raise ValueError(f"unknown wallet op kind {op.kind!r}")  # pragma: no cover

    async def _void(self, transfer_id: str, reason: str) -> wallet_pb2.Transfer | None:
        try:
            return await self.wallet.void(transfer_id, reason=reason)
        except grpc.aio.AioRpcError as err:
            if err.code() != grpc.StatusCode.NOT_FOUND:  # never reserved: nothing to void
                raise
            return None

    def _still_owed(self, op_id: str) -> bool:
        with self.engine.connect() as conn:
            return wallet_ops.is_pending(conn, op_id)

    async def _cancel_unpostable(self, op: wallet_ops.OwedOp, error: str) -> None:
        """The buy-in of a filled table cannot be posted: cancel the table (once). A failed
        cancel (e.g. a concurrent append) is retried with the post on the next pass."""
        try:
            done = await asyncio.to_thread(
                cancellation.cancel_table,
                self.store,
                self.config,
                table_id=op.table_id,
                reason=cancellation.BUY_IN_FAILED,
                detail=f"buy-in {op.transfer_id} could not be posted ({error})",
                cancelled_by="registration",
                correlation_id=op.correlation_id or op.table_id,
            )
        except Exception:
            log.exception("table.cancel_failed", table_id=op.table_id)
            return
        if done.cancelled_now:
            log.warning("table.cancelled", table_id=op.table_id, reason=done.reason)
            self.notify(done.players)
            self.work.wake.set()  # give the buy-ins back now

    async def _transfer(self, transfer_id: str) -> wallet_pb2.Transfer | None:
        try:
            return await self.wallet.get_transfer(transfer_id)
        except grpc.aio.AioRpcError as err:
            if err.code() != grpc.StatusCode.NOT_FOUND:
                raise
            return None

    async def _posted_cents(self, transfer_id: str) -> int:
        t = await self._transfer(transfer_id)
        posted = t is not None and t.state == ledger_pb2.TRANSFER_STATE_POSTED
        return int(t.posted_amount) if t is not None and posted else 0

    async def _unwind(self, op: wallet_ops.OwedOp) -> None:
        """Give one entry's buy-in of a cancelled table back (module doc)."""
        reservation = await self._transfer(op.transfer_id)
        state = (
            lobby.TransferState.MISSING
            if reservation is None
            else _STATES.get(reservation.state, lobby.TransferState.MISSING)
        )
        steps = lobby.unwind_steps(
            op.entry_id,
            op.transfer_id,
            buy_in=state,
            buy_in_cents=op.amount_cents,
            rake_posted_cents=await self._posted_cents(f"rake-{op.entry_id}"),
            net_posted_cents=await self._posted_cents(f"net-{op.entry_id}"),
        )
        for step in steps:
            if step.kind is lobby.StepKind.VOID:
                await self._void(step.transfer_id, "table cancelled")
            elif step.kind is lobby.StepKind.MOVE:
                await self.wallet.move(
                    step.transfer_id,
                    fill.ACCOUNT_IDS[step.source],
                    fill.ACCOUNT_IDS[step.target],
                    step.amount_cents,
                    code="refund",
                    memo="table cancelled",
                )
            else:
                await self.wallet.credit_prize(
                    step.transfer_id,
                    op.to_account,  # the player (see fill.owed_op)
                    step.amount_cents,
                    from_account=fill.ACCOUNT_IDS[step.source],
                    stake_transfer_id=step.stake_transfer_id,
                    code="refund",
                    memo="table cancelled: buy-in refunded",
                )

    def record_done(self, call: WalletCall, result: wallet_pb2.Transfer | None) -> bool:
        with self.engine.begin() as conn:
            return wallet_ops.mark(conn, call.op_id, done=True, error="", at=utc_now())

    def record_failure(self, call: WalletCall, error: str) -> None:
        with self.engine.begin() as conn:
            wallet_ops.mark(conn, call.op_id, done=False, error=error, at=utc_now())

    async def settle(self, group: str) -> None:
        players = await asyncio.to_thread(
            handlers.start_if_paid, self.store, group, correlation_id=group
        )
        if players:
            self.notify(players)

    async def before_pass(self) -> None:
        return None

    async def after_pass(self) -> None:
        await self.sweep()

    # ------------------------------------------------------------------ abandoned attempts

    async def void_attempt(self, key: str, attempt: int, entries: int) -> None:
        """Void every reservation an attempt may have made, then mark it failed."""
        for entry_id in handlers.entry_ids_for(key, attempt, entries):
            await self._void(handlers.buyin_transfer_id(entry_id), "rollback")
        await asyncio.to_thread(handlers.end_attempt, self.engine, key, attempt, status="failed")

    async def sweep(self) -> None:
        """Roll back abandoned Register attempts (see module doc)."""
        for a in await asyncio.to_thread(
            handlers.abandoned_attempts, self.engine, self.stale_after
        ):
            # Claim it first: a slow in-flight twin then finds it no longer ``reserving``
            # and does not seat (it voids its own reservations instead).
            await asyncio.to_thread(
                handlers.end_attempt, self.engine, a.key, a.attempt, status="voiding"
            )
            try:
                await self.void_attempt(a.key, a.attempt, a.entries)
            except grpc.aio.AioRpcError as err:
                log.warning("attempt_rollback.failed", request_key=a.key, error=describe_error(err))
