"""The ledger: state (accounts and transfers) folded from facts, and the decisions over it.

Model (after TigerBeetle): the sum of ``posted`` over all accounts is always zero, and the
sum of ``reserved`` equals the sum of ``incoming``. Every decision takes the current state
and a command and returns the facts it produces, already folded into the state.

Funds order (documented in docs/wallet.md): a wager drawn from a player's funds takes cash
first, then playable bonus; pending bonus is never spendable. Winnings credited to a player
go to cash, unless they name the stake transfer they are winnings of, in which case they are
split in the proportion that stake was funded (bonus share rounded down, the rest to cash).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from .accounts import (
    Account,
    AccountKind,
    parse_account_id,
    player_account_ids,
    valid_player_id,
)
from .errors import (
    InsufficientFunds,
    InvalidArgument,
    NotFound,
    RuleViolation,
    TransferExists,
    TransferStateError,
)
from .events import AccountOpened, Event, TransferPending, TransferPosted, TransferVoided
from .transfers import (
    MAX_MEMO_LEN,
    AccountSide,
    Leg,
    PlayerFunds,
    Transfer,
    TransferRequest,
    TransferState,
    check_amount,
    check_id,
    credit_account_ids,
    debit_account_ids,
    describe_request,
    request_account_ids,
    validate_request,
)
from .twophase import decide_post, decide_void


def _check_rules(legs: Iterable[Leg], accounts: dict[str, Account]) -> None:
    """Per-kind rules beyond balances. Pending bonus may only be converted (to the same
    player's playable bonus or cash) or forfeited (to house:promotions). Playable bonus
    cannot be withdrawn. Player money credited to cash-out must come from cash."""
    for leg in legs:
        d, c = accounts[leg.debit], accounts[leg.credit]
        if d.kind is AccountKind.PLAYER_PENDING_BONUS:
            same_player = c.player_id == d.player_id and c.kind in (
                AccountKind.PLAYER_BONUS,
                AccountKind.PLAYER_CASH,
            )
            if not (same_player or c.kind is AccountKind.HOUSE_PROMOTIONS):
                raise RuleViolation(
                    f"pending bonus on {d.account_id} cannot be spent; it can only be "
                    "released to the same player's bonus or cash, or forfeited"
                )
        if c.kind is AccountKind.OPERATOR_CASH_OUT and d.kind is not AccountKind.PLAYER_CASH:
            raise RuleViolation("only player cash can be withdrawn")
        if d.kind is AccountKind.OPERATOR_CASH_OUT:
            raise RuleViolation("operator:cash_out is only ever credited")


def copy_account(a: Account) -> Account:
    """A copy of a (flat) account: the constructor is ~10x cheaper than ``copy.copy``,
    which matters on the batch executor's path (docs/wallet.md, "Benchmark")."""
    return Account(a.account_id, a.kind, a.player_id, a.posted, a.reserved, a.incoming)


def copy_transfer(t: Transfer) -> Transfer:
    """A copy of a (flat) transfer, like :func:`copy_account`."""
    return Transfer(t.request, t.legs, t.state, t.created_at, t.posted_legs, t.resolved_at)


@dataclass
class Ledger:
    """State of (a part of) the ledger plus the decisions over it.

    The store loads only the accounts and transfers a command touches; decisions raise
    :class:`NotFound` for anything missing, so a partial ledger decides exactly as the full
    one would."""

    accounts: dict[str, Account] = field(default_factory=dict)
    transfers: dict[str, Transfer] = field(default_factory=dict)

    def clone(self) -> Ledger:
        """An independent copy, cheaper than ``copy.deepcopy``: accounts and transfers are
        flat (every field is immutable: ints, enums, datetimes, frozen requests, tuples of
        frozen legs), so copying each object copies the state."""
        return Ledger(
            {k: copy_account(v) for k, v in self.accounts.items()},
            {k: copy_transfer(v) for k, v in self.transfers.items()},
        )

    # ---- fold

    def apply(self, event: Event) -> None:
        """Fold one fact into the state (no checks: facts are already decided)."""
        if isinstance(event, AccountOpened):
            self.accounts[event.account_id] = Account(event.account_id, event.kind, event.player_id)
        elif isinstance(event, TransferPending):
            for leg in event.legs:
                self.accounts[leg.debit].reserved += leg.amount
                self.accounts[leg.credit].incoming += leg.amount
            self.transfers[event.request.transfer_id] = Transfer(
                event.request, event.legs, TransferState.PENDING, event.occurred_at
            )
        elif isinstance(event, TransferPosted):
            tid = event.request.transfer_id
            if event.was_pending:
                t = self.transfers[tid]
                for leg in t.legs:
                    self.accounts[leg.debit].reserved -= leg.amount
                    self.accounts[leg.credit].incoming -= leg.amount
                t.state = TransferState.POSTED
                t.posted_legs = event.legs
                t.resolved_at = event.occurred_at
            else:
                self.transfers[tid] = Transfer(
                    event.request,
                    event.legs,
                    TransferState.POSTED,
                    event.occurred_at,
                    posted_legs=event.legs,
                    resolved_at=event.occurred_at,
                )
            for leg in event.legs:
                self.accounts[leg.debit].posted -= leg.amount
                self.accounts[leg.credit].posted += leg.amount
        elif isinstance(event, TransferVoided):
            t = self.transfers[event.transfer_id]
            for leg in t.legs:
                self.accounts[leg.debit].reserved -= leg.amount
                self.accounts[leg.credit].incoming -= leg.amount
            t.state = TransferState.VOIDED
            t.resolved_at = event.occurred_at

    def apply_all(self, events: Iterable[Event]) -> None:
        for e in events:
            self.apply(e)

    # ---- queries

    def account(self, account_id: str) -> Account:
        try:
            return self.accounts[account_id]
        except KeyError:
            raise NotFound(f"account {account_id} does not exist") from None

    def transfer(self, transfer_id: str) -> Transfer:
        try:
            return self.transfers[transfer_id]
        except KeyError:
            raise NotFound(f"transfer {transfer_id} does not exist") from None

    # ---- decisions: accounts

    def open_account(self, account_id: str, now: datetime) -> list[Event]:
        """Open an account named by the naming scheme; nothing if it exists already."""
        parsed = parse_account_id(account_id)
        if parsed is None:
            raise InvalidArgument(f"malformed account id {account_id!r}")
        if account_id in self.accounts:
            return []
        kind, player_id = parsed
        event = AccountOpened(account_id, kind, player_id, now)
        self.apply(event)
        return [event]

    def open_player(self, player_id: str, now: datetime) -> list[Event]:
        """Open a player's three accounts (those missing)."""
        if not valid_player_id(player_id):
            raise InvalidArgument(f"malformed player id {player_id!r}")
        events: list[Event] = []
        for aid in player_account_ids(player_id):
            events += self.open_account(aid, now)
        return events

    # ---- decisions: transfers

    def create_transfer(self, req: TransferRequest, now: datetime) -> tuple[Transfer, list[Event]]:
        """Create a pending or posted transfer. Returns the transfer and the new facts
        (none when this is a retry of an identical request)."""
        validate_request(req)
        existing = self.transfers.get(req.transfer_id)
        if existing is not None:
            if existing.request != req:
                raise TransferExists(
                    f"transfer {req.transfer_id} already exists with different content "
                    f"(existing: {describe_request(existing.request)}; "
                    f"this: {describe_request(req)})"
                )
            return existing, []
        for aid in request_account_ids(req):
            self.account(aid)
        _check_rules(
            (Leg(a, b, 1) for a in debit_account_ids(req) for b in credit_account_ids(req)),
            self.accounts,
        )
        legs = self._credit(req, self._draw(req))
        event: Event
        if req.pending:
            event = TransferPending(req, legs, now)
        else:
            event = TransferPosted(req, legs, False, (), now)
        self.apply(event)
        return self.transfers[req.transfer_id], [event]

    def _draw(self, req: TransferRequest) -> list[tuple[str, int]]:
        """(debit account, amount) pairs: one account, or cash first then playable bonus."""
        if isinstance(req.debit, AccountSide):
            acct = self.accounts[req.debit.account_id]
            if not acct.may_go_negative and acct.available < req.amount:
                raise InsufficientFunds(acct.account_id, acct.available, req.amount)
            return [(acct.account_id, req.amount)]
        cash_id, bonus_id, _ = player_account_ids(req.debit.player_id)
        cash, bonus = self.accounts[cash_id], self.accounts[bonus_id]
        if cash.available + bonus.available < req.amount:
            raise InsufficientFunds(
                f"player:{req.debit.player_id}", cash.available + bonus.available, req.amount
            )
        from_cash = min(cash.available, req.amount)
        draws = [(cash_id, from_cash), (bonus_id, req.amount - from_cash)]
        return [(a, n) for a, n in draws if n > 0]

    def _credit(self, req: TransferRequest, draws: list[tuple[str, int]]) -> tuple[Leg, ...]:
        """Pair the debit draws with credit accounts into legs."""
        if isinstance(req.credit, AccountSide):
            cid = req.credit.account_id
            return tuple(Leg(d, cid, n) for d, n in draws)
        cash_id, bonus_id, _ = player_account_ids(req.credit.player_id)
        to_bonus = 0
        if req.credit.stake_transfer_id:
            stake = self.transfer(req.credit.stake_transfer_id)
            if stake.state is not TransferState.POSTED:
                raise TransferStateError(
                    f"stake transfer {stake.transfer_id} is {stake.state.name}, not POSTED"
                )
            stake_player = stake.request.debit
            if not (
                isinstance(stake_player, PlayerFunds)
                and stake_player.player_id == req.credit.player_id
            ):
                raise RuleViolation(
                    f"stake transfer {stake.transfer_id} is not a wager of player "
                    f"{req.credit.player_id}"
                )
            staked = stake.posted_amount
            from_bonus = sum(leg.amount for leg in stake.posted_legs if leg.debit == bonus_id)
            to_bonus = req.amount * from_bonus // staked if staked else 0
        split = [(cash_id, req.amount - to_bonus), (bonus_id, to_bonus)]
        # One debit account (a credit to a player never draws player funds): pair it with
        # each credit account.
        ((debit_id, _),) = draws
        return tuple(Leg(debit_id, c, n) for c, n in split if n > 0)

    # ---- decisions: two-phase resolution (rules in :mod:`.twophase`)

    def post_transfer(
        self, transfer_id: str, amount: int | None, now: datetime
    ) -> tuple[Transfer, list[Event]]:
        """Post a pending transfer, all of it (``amount`` None) or a smaller amount, the
        rest released. Posting an already posted transfer with the same amount is an
        idempotent retry; anything else on a resolved transfer is rejected."""
        check_id("transfer_id", transfer_id)
        if amount is not None:
            check_amount(amount)
        t = self.transfer(transfer_id)
        event = decide_post(t, amount, now)
        if event is None:
            return t, []
        self.apply(event)
        return t, [event]

    def void_transfer(
        self, transfer_id: str, reason: str, now: datetime
    ) -> tuple[Transfer, list[Event]]:
        """Void a pending transfer, releasing its reservation. Voiding a voided transfer is
        an idempotent retry; voiding a posted transfer is rejected."""
        check_id("transfer_id", transfer_id)
        if len(reason) > MAX_MEMO_LEN:
            raise InvalidArgument(f"reason longer than {MAX_MEMO_LEN} characters")
        t = self.transfer(transfer_id)
        event = decide_void(t, reason, now)
        if event is None:
            return t, []
        self.apply(event)
        return t, [event]

    # ---- invariants

    def check_invariants(self) -> None:
        """Assert the ledger's invariants over the accounts it holds (all of them when the
        ledger is complete). Raises AssertionError."""
        total = sum(a.posted for a in self.accounts.values())
        assert total == 0, f"posted balances sum to {total}, not 0"
        res = sum(a.reserved for a in self.accounts.values())
        inc = sum(a.incoming for a in self.accounts.values())
        assert res == inc, f"reserved {res} != incoming {inc}"
        for a in self.accounts.values():
            assert a.reserved >= 0 and a.incoming >= 0, a
            if not a.may_go_negative:
                assert a.available >= 0, f"{a.account_id} available {a.available} < 0"
