"""Application service of the wallet: load state, run the ledger's decision, then in ONE
database transaction hand the decided events to the projector (``store.project``, the one
writer of the wallet's rows) and to the mapper (``codec.append``, the one caller of the
event store's append). The handlers write no rows of their own.

Synchronous and thread-safe (the gRPC layer calls it through ``asyncio.to_thread``). Every
command is retried on a lost race — :class:`electric_eventlog.ConcurrencyError`,
a unique violation from a concurrent insert, a PostgreSQL deadlock or serialisation
failure — from a fresh read; a retry of an already applied command then finds it and
returns the original result. After ``max_attempts`` lost races the command fails with
:class:`Aborted`.

Reads and writes go through :mod:`.store`; the decisions are the pure ledger's
(:mod:`.domain`). Posting commands report their result to ``observe`` after commit (the
money-flow counters of :mod:`.metrics`).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from electric_clients.accounts import PROMOTIONS
from electric_eventlog.engine import read_only
from electric_eventlog.errors import ConcurrencyError
from electric_eventlog.store import EventStore
from electric_platform import paging
from electric_platform.context import causation_id, correlation_id, request_id
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import IntegrityError, OperationalError

from . import codec, store
from . import domain as d
from .batch import WalletCommand, execute_batch

R = TypeVar("R")


class Aborted(d.WalletError):
    """Concurrent writers kept winning; the caller may retry the same call (ABORTED)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Result:
    """A transfer after a command, and whether the command was a retry (nothing changed)."""

    transfer: d.Transfer
    replayed: bool


def _retryable(exc: BaseException) -> bool:
    """A lost race: the same command from a fresh read may succeed."""
    if isinstance(exc, ConcurrencyError | IntegrityError):
        return True
    if isinstance(exc, OperationalError):
        code = getattr(exc.orig, "sqlstate", None)
        return code in ("40001", "40P01") or "database is locked" in str(exc)
    return False


def _backoff(attempt_number: int) -> float:
    """A short random pause, growing with the attempt number: spreads the retries of
    writers that collided."""
    return random.uniform(0, 0.002 * attempt_number)


class Wallet:
    """The wallet's commands and queries over one database (PostgreSQL or SQLite)."""

    def __init__(
        self,
        engine: Engine,
        events: EventStore,
        *,
        clock: Callable[[], datetime] = utc_now,
        max_attempts: int = 30,
        observe: Callable[[Result], None] | None = None,
    ) -> None:
        self.engine = engine
        self.events = events
        self.clock = clock
        self.max_attempts = max_attempts
        #: Told the result of every posting command after it committed (flow metrics).
        self.observe = observe
        #: Lost races that were retried (for tests and metrics).
        self.retries = 0
        if engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg":
            events.group.register(WalletCommand, execute_batch, min_units=1)

    # ------------------------------------------------------------------ machinery

    def _command(
        self,
        account_ids: Callable[[Connection], Iterable[str]],
        transfer_ids: Iterable[str],
        decide: Callable[[d.Ledger, datetime], tuple[R, list[d.Event]]],
        *,
        resolves: str = "",
        locks: Callable[[], Iterable[str]] | None = None,
    ) -> R:
        """One command through the event store's group commit: concurrent commands of
        this process share a transaction and a commit; a command that fails (a lost race,
        a domain error) is rolled back alone and retried or raised here.

        Locks: ``locks()`` names the accounts to lock (those the command debits whose
        kind must stay non-negative: ``store.guarded``); None locks every account."""
        tids = tuple(transfer_ids)

        def body(conn: Connection) -> R:
            # A post/void locks the debited accounts of the transfer it resolves: in one
            # round trip on PostgreSQL, else read the transfer then lock.
            found = store.load_for_resolution(conn, resolves, tids) if resolves else None
            ledger = (
                found
                if found is not None
                else store.load(
                    conn, account_ids(conn), tids, lock=True if locks is None else locks()
                )
            )
            before = ledger.clone()
            result, events = decide(ledger, self.clock())
            if events:
                # Projections first, the append last: the event store's global
                # position lock is then held only for the append and the commit.
                # On PostgreSQL the projection write is pipelined: it reaches the
                # server in the same round trip as the store's position allocation.
                with store.pipeline(conn) as pipelined:
                    store.project(conn, before, events, queue=pipelined)
                    codec.append(
                        self.events,
                        conn,
                        events,
                        correlation_id=correlation_id() or request_id(),
                        # The caller's cause (x-causation-id, e.g. the TableFilled owing
                        # a buy-in post), else the request itself.
                        causation_id=causation_id() or request_id(),
                    )
            return result

        def attempt() -> R:
            # As data too: on PostgreSQL the batch's commands are decided together
            # (batch.execute_batch); ``body`` is the one-by-one path.
            command = WalletCommand(
                self.events,
                account_ids,
                tuple(dict.fromkeys((*tids, resolves)) if resolves else tids),
                decide,
                self.clock,
                resolves,
                locks,
                correlation_id() or request_id(),
                causation_id() or request_id(),
            )
            return self.events.transact(body, bulk=command)

        # A plain loop, not a tenacity ``Retrying`` per call: building and driving one
        # cost ~50 µs of every command's Python even when the first attempt wins (all of
        # them but the lost races), under the GIL the batch leader needs. Same policy:
        # retry a lost race after a short random pause, give up after max_attempts.
        attempt_number = 1
        while True:
            try:
                return attempt()
            except Exception as exc:
                if not _retryable(exc):
                    raise
                if attempt_number >= self.max_attempts:
                    raise Aborted(
                        f"gave up after {self.max_attempts} concurrent conflicts; retry: {exc}"
                    ) from exc
            self.retries += 1
            time.sleep(_backoff(attempt_number))
            attempt_number += 1

    def _observed(self, result: Result) -> Result:
        if self.observe is not None:
            self.observe(result)
        return result

    def _read(self) -> Connection:
        return read_only(self.engine.connect())

    # ------------------------------------------------------------------ commands

    def bootstrap(self) -> int:
        """Open the system accounts that are missing; returns how many were opened."""

        def decide(ledger: d.Ledger, now: datetime) -> tuple[int, list[d.Event]]:
            events: list[d.Event] = []
            for aid in d.SYSTEM_ACCOUNTS:
                events += ledger.open_account(aid, now)
            return len(events), events

        return self._command(lambda _c: d.SYSTEM_ACCOUNTS, (), decide)

    def open_player(self, player_id: str) -> tuple[dict[str, int], bool]:
        """Open a player's accounts (idempotent): (balance breakdown, opened now?)."""
        if not d.valid_player_id(player_id):
            raise d.InvalidArgument(f"malformed player id {player_id!r}")

        def decide(
            ledger: d.Ledger, now: datetime
        ) -> tuple[tuple[dict[str, int], bool], list[d.Event]]:
            events = ledger.open_player(player_id, now)
            return (d.balance_breakdown(ledger, player_id), bool(events)), events

        return self._command(lambda _c: d.player_account_ids(player_id), (), decide)

    def create_transfer(self, req: d.TransferRequest) -> Result:
        """Create a pending or posted transfer (idempotent by transfer id)."""
        d.validate_request(req)
        stake = (
            [req.credit.stake_transfer_id]
            if isinstance(req.credit, d.PlayerWinnings) and req.credit.stake_transfer_id
            else []
        )

        def decide(ledger: d.Ledger, now: datetime) -> tuple[Result, list[d.Event]]:
            t, events = ledger.create_transfer(req, now)
            return Result(t, not events), events

        return self._observed(
            self._command(
                lambda _c: d.request_account_ids(req),
                [req.transfer_id, *stake],
                decide,
                locks=lambda: store.guarded(d.debit_account_ids(req)),
            )
        )

    def _resolve(
        self,
        transfer_id: str,
        act: Callable[[d.Ledger, datetime], tuple[d.Transfer, list[d.Event]]],
    ) -> Result:
        if not transfer_id:
            raise d.InvalidArgument("transfer_id is required")

        def accounts_of(conn: Connection) -> Iterable[str]:
            t = store.load_transfer(conn, transfer_id)
            if t is None:
                raise d.NotFound(f"transfer {transfer_id} does not exist")
            return {a for leg in t.legs for a in (leg.debit, leg.credit)}

        def decide(ledger: d.Ledger, now: datetime) -> tuple[Result, list[d.Event]]:
            t, events = act(ledger, now)
            return Result(t, not events), events

        return self._command(accounts_of, [transfer_id], decide, resolves=transfer_id)

    def post_transfer(self, transfer_id: str, amount: int | None = None) -> Result:
        """Post a pending transfer (all of it, or ``amount`` <= the pending amount)."""
        if amount is not None:
            d.check_amount(amount)
        return self._observed(
            self._resolve(
                transfer_id, lambda ledger, now: ledger.post_transfer(transfer_id, amount, now)
            )
        )

    def void_transfer(self, transfer_id: str, reason: str = "") -> Result:
        """Void a pending transfer."""
        return self._resolve(
            transfer_id, lambda ledger, now: ledger.void_transfer(transfer_id, reason, now)
        )

    def deposit(self, transfer_id: str, player_id: str, amount: int, memo: str = "") -> Result:
        """Credit a player's cash from ``operator:cash_in``, opening the player if needed."""
        req = d.TransferRequest(
            transfer_id,
            d.AccountSide(d.CASH_IN),
            d.AccountSide(d.player_account_id(player_id, d.AccountKind.PLAYER_CASH)),
            amount,
            code="deposit",
            memo=memo,
        )
        if not d.valid_player_id(player_id):
            raise d.InvalidArgument(f"malformed player id {player_id!r}")
        d.validate_request(req)

        def decide(ledger: d.Ledger, now: datetime) -> tuple[Result, list[d.Event]]:
            existing = ledger.transfers.get(transfer_id)
            opened = [] if existing is not None else ledger.open_player(player_id, now)
            t, events = ledger.create_transfer(req, now)
            return Result(t, not events), opened + events

        ids = (*d.player_account_ids(player_id), d.CASH_IN)
        return self._observed(
            self._command(
                lambda _c: ids, [transfer_id], decide, locks=lambda: store.guarded([d.CASH_IN])
            )
        )

    def withdraw(self, transfer_id: str, player_id: str, amount: int, memo: str = "") -> Result:
        """Debit a player's cash to ``operator:cash_out``."""
        if not d.valid_player_id(player_id):
            raise d.InvalidArgument(f"malformed player id {player_id!r}")
        return self.create_transfer(
            d.TransferRequest(
                transfer_id,
                d.AccountSide(d.player_account_id(player_id, d.AccountKind.PLAYER_CASH)),
                d.AccountSide(d.CASH_OUT),
                amount,
                code="withdrawal",
                memo=memo,
            )
        )

    def adjust(
        self, transfer_id: str, player_id: str, kind: d.AccountKind, amount: int, reason: str
    ) -> Result:
        """Move one of a player's accounts up (amount > 0) or down (amount < 0): cash
        against ``operator:adjustments``, bonus kinds against ``house:promotions``."""
        if kind not in d.PLAYER_KINDS:
            raise d.InvalidArgument("account_kind must be a player account kind")
        if not d.valid_player_id(player_id):
            raise d.InvalidArgument(f"malformed player id {player_id!r}")
        if not reason.strip():
            raise d.InvalidArgument("reason is required for an adjustment")
        if amount == 0:
            raise d.InvalidArgument("amount must not be 0")
        counter = d.ADJUSTMENTS if kind is d.AccountKind.PLAYER_CASH else PROMOTIONS
        player = d.AccountSide(d.player_account_id(player_id, kind))
        house = d.AccountSide(counter)
        debit, credit = (house, player) if amount > 0 else (player, house)
        return self.create_transfer(
            d.TransferRequest(
                transfer_id, debit, credit, abs(amount), code="adjustment", memo=reason
            )
        )

    # ------------------------------------------------------------------ queries

    def balance(self, player_id: str) -> dict[str, int]:
        """The balance breakdown of a player (NotFound when the player has no wallet)."""
        if not d.valid_player_id(player_id):
            raise d.InvalidArgument(f"malformed player id {player_id!r}")
        with self._read() as conn:
            ledger = store.load(conn, d.player_account_ids(player_id))
        if len(ledger.accounts) < 3:
            raise d.NotFound(
                f"player {player_id} has no wallet (OpenPlayerAccounts or Deposit opens one)"
            )
        return d.balance_breakdown(ledger, player_id)

    def account(self, account_id: str) -> d.Account:
        if d.parse_account_id(account_id) is None:
            raise d.InvalidArgument(f"malformed account id {account_id!r}")
        with self._read() as conn:
            return store.load(conn, [account_id]).account(account_id)

    def transfer(self, transfer_id: str) -> d.Transfer:
        if not transfer_id:
            raise d.InvalidArgument("transfer_id is required")
        with self._read() as conn:
            t = store.load_transfer(conn, transfer_id)
        if t is None:
            raise d.NotFound(f"transfer {transfer_id} does not exist")
        return t

    def statement(
        self,
        *,
        player_id: str = "",
        account_id: str = "",
        page_size: int = 0,
        page_token: str = "",
    ) -> tuple[list[d.Entry], str]:
        """Entries of a player's accounts or of one account, newest first, one page; the
        second value is the token of the next page ("" when none)."""
        if bool(player_id) == bool(account_id):
            raise d.InvalidArgument("give exactly one of player_id and account_id")
        if player_id and not d.valid_player_id(player_id):
            raise d.InvalidArgument(f"malformed player id {player_id!r}")
        if account_id and d.parse_account_id(account_id) is None:
            raise d.InvalidArgument(f"malformed account id {account_id!r}")
        size = paging.page_size(page_size)
        scope = "wallet.ListTransactions:" + (f"p:{player_id}" if player_id else f"a:{account_id}")
        before = paging.decode_page_token(page_token, scope) if page_token else None
        with self._read() as conn:
            ids = d.player_account_ids(player_id) if player_id else (account_id,)
            if not store.load(conn, ids).accounts:
                raise d.NotFound(f"no such {'player' if player_id else 'account'} wallet")
            rows = store.statement_page(
                conn, player_id=player_id, account_id=account_id, before=before, limit=size + 1
            )
        more = len(rows) > size
        rows = rows[:size]
        token = paging.encode_page_token(rows[-1].entry_id, scope) if more and rows else ""
        return rows, token
