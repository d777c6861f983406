"""Wallet work owed by committed decisions, carried out idempotently and retried until done.

``registration_wallet_ops`` rows are written in the same transaction as the decision that
owes them (a filled table owes, per entry, ``post buyin-<entry>``, ``move rake-<entry>``
escrow → house rake and ``move net-<entry>`` escrow → prize reserve; an unregistered entry
owes ``void buyin-<entry>``). Every call carries its transfer id as idempotency key, so doing
an op twice (a crash after the wallet answered but before the row was marked done, two
workers) is one transfer. The ops of a table run in ``seq`` order (the post before the moves
out of the escrow); once all of a filled table's ops are done, TournamentStarted is
appended (``handlers.start_if_paid``).

The same worker also sweeps Register attempts that never reached their seating transaction
(a crash between the reservations and the seats, or an abandoned insufficient-funds
rollback): it voids every reservation key of such an attempt, then marks it failed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from datetime import timedelta

import grpc
from electric_eventlog import EventStore, utc_now
from electric_platform.log import get_logger
from electric_wallet.client import WalletClient
from sqlalchemy import Engine, select, update

from electric_registration import handlers
from electric_registration.store import tables as t

log = get_logger("electric.registration.wallet_work")

#: A Register attempt still ``reserving`` after this long is considered abandoned.
STALE_ATTEMPT = timedelta(seconds=120)


class WalletWork:
    """Runs owed wallet ops and sweeps abandoned Register attempts."""

    def __init__(
        self,
        engine: Engine,
        store: EventStore,
        wallet: WalletClient,
        *,
        notify: Callable[[set[str]], None] = lambda _players: None,
        stale_after: timedelta = STALE_ATTEMPT,
    ) -> None:
        self.engine = engine
        self.store = store
        self.wallet = wallet
        self.notify = notify
        self.stale_after = stale_after
        self._locks: dict[str, asyncio.Lock] = {}

    # ------------------------------------------------------------------ ops

    def _pending(self, table_id: str | None) -> list[tuple[str, ...]]:
        with self.engine.connect() as conn:
            q = select(
                t.wallet_ops.c.op_id,
                t.wallet_ops.c.table_id,
                t.wallet_ops.c.kind,
                t.wallet_ops.c.transfer_id,
                t.wallet_ops.c.from_account,
                t.wallet_ops.c.to_account,
                t.wallet_ops.c.amount_cents,
                t.wallet_ops.c.code,
            ).where(t.wallet_ops.c.status == "pending")
            if table_id is not None:
                q = q.where(t.wallet_ops.c.table_id == table_id)
            rows = conn.execute(q.order_by(t.wallet_ops.c.table_id, t.wallet_ops.c.seq)).all()
        return [tuple(str(v) for v in r) for r in rows]

    def _filled_tables(self) -> list[str]:
        with self.engine.connect() as conn:
            return list(
                conn.execute(
                    select(t.tables.c.table_id).where(
                        t.tables.c.tournament_started.is_not(None), t.tables.c.started_at.is_(None)
                    )
                ).scalars()
            )

    def _mark(self, op_id: str, *, done: bool, error: str = "") -> None:
        with self.engine.begin() as conn:
            values: dict[str, object] = {"attempts": t.wallet_ops.c.attempts + 1}
            if done:
                values.update(status="done", done_at=utc_now())
            else:
                values["last_error"] = error[:2000]
            conn.execute(update(t.wallet_ops).where(t.wallet_ops.c.op_id == op_id).values(values))

    async def _do(
        self, kind: str, transfer_id: str, src: str, dst: str, amount: int, code: str
    ) -> None:
        if kind == "post":
            await self.wallet.post(transfer_id)
        elif kind == "move":
            await self.wallet.move(transfer_id, src, dst, amount, code=code)
        elif kind == "void":
            try:
                await self.wallet.void(transfer_id, reason=code)
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.NOT_FOUND:  # never reserved: nothing to void
                    raise
        else:  # pragma: no cover - rows are written by handlers only
            raise ValueError(f"unknown wallet op kind {kind!r}")

    async def run_table(self, table_id: str) -> bool:
        """Do the pending ops of one table in order; start its tournament when paid.
        True when nothing is left pending."""
        lock = self._locks.setdefault(table_id, asyncio.Lock())
        async with lock:
            ok = True
            for op_id, _table, kind, transfer_id, src, dst, amount, code in await asyncio.to_thread(
                self._pending, table_id
            ):
                try:
                    await self._do(kind, transfer_id, src, dst, int(amount), code)
                except grpc.aio.AioRpcError as err:
                    ok = False
                    log.warning(
                        "wallet_op.failed",
                        op_id=op_id,
                        code=err.code().name,
                        detail=err.details(),
                    )
                    await asyncio.to_thread(
                        self._mark, op_id, done=False, error=f"{err.code().name}: {err.details()}"
                    )
                    if kind != "void":
                        break  # keep the order: nothing after a failed post/move
                    continue
                await asyncio.to_thread(self._mark, op_id, done=True)
            players = await asyncio.to_thread(
                handlers.start_if_paid, self.engine, self.store, table_id, correlation_id=table_id
            )
            if players:
                self.notify(players)
        if len(self._locks) > 1000:  # forget idle locks of old tables
            for key in [k for k, v in self._locks.items() if not v.locked()]:
                self._locks.pop(key, None)
        return ok

    async def run_pending(self) -> None:
        """One pass over every table with pending ops or waiting to start."""
        tables = {row[1] for row in await asyncio.to_thread(self._pending, None)}
        tables.update(await asyncio.to_thread(self._filled_tables))
        for table_id in sorted(tables):
            await self.run_table(table_id)

    # ------------------------------------------------------------------ abandoned attempts

    def _abandoned(self) -> list[tuple[str, int, int]]:
        cutoff = utc_now() - self.stale_after
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(t.requests.c.request_key, t.requests.c.attempt, t.requests.c.entries).where(
                    (t.requests.c.status == "voiding")
                    | ((t.requests.c.status == "reserving") & (t.requests.c.updated_at < cutoff))
                )
            ).all()
        return [(r.request_key, int(r.attempt), int(r.entries)) for r in rows]

    async def void_attempt(self, key: str, attempt: int, entries: int) -> None:
        """Void every reservation an attempt may have made, then mark it failed."""
        for entry_id in handlers.entry_ids_for(key, attempt, entries):
            try:
                await self.wallet.void(handlers.buyin_transfer_id(entry_id), reason="rollback")
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.NOT_FOUND:
                    raise
        await asyncio.to_thread(handlers.end_attempt, self.engine, key, attempt, status="failed")

    async def sweep(self) -> None:
        """Roll back abandoned Register attempts (see module doc)."""
        for key, attempt, entries in await asyncio.to_thread(self._abandoned):
            # Claim it first: a slow in-flight twin then finds it no longer ``reserving``
            # and does not seat (it voids its own reservations instead).
            await asyncio.to_thread(
                handlers.end_attempt, self.engine, key, attempt, status="voiding"
            )
            try:
                await self.void_attempt(key, attempt, entries)
            except grpc.aio.AioRpcError as err:
                log.warning("attempt_rollback.failed", request_key=key, code=err.code().name)

    async def run(self, stop: asyncio.Event, interval: float = 1.0) -> None:
        """Background loop: pending ops and sweeps until ``stop``."""
        while not stop.is_set():
            try:
                await self.run_pending()
                await self.sweep()
            except grpc.aio.AioRpcError as err:
                log.warning("wallet_work.pass_failed", code=err.code().name)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=interval)
