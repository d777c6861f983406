"""The wallet's ledger: accounts, double-entry transfers, two-phase pending/post/void.

Pure module: no I/O, no clock, no randomness. Every decision takes the current state and a
command and returns the facts (events) it produces; the state is a fold over those facts
(:meth:`Ledger.apply`), so the same code rebuilds balances from the event log.

Model (after TigerBeetle):

* An :class:`Account` has a kind and three integers in cents: ``posted`` (credits minus
  debits of posted transfers), ``reserved`` (debits of pending transfers not yet resolved)
  and ``incoming`` (credits of pending transfers not yet resolved). ``available`` is
  ``posted - reserved``. The sum of ``posted`` over all accounts is always zero, and the sum
  of ``reserved`` equals the sum of ``incoming``.
* Accounts of a *non-negative* kind (every player account, escrow, rake, cash-out) must keep
  ``available >= 0`` after every transfer, reservations included. House/system accounts that
  are the counter-account of money entering or leaving the ledger may go negative
  (:data:`MAY_GO_NEGATIVE`).
* A :class:`Transfer` moves ``amount`` from a debit side to a credit side in one or more
  legs (a wager drawn from a player's funds is a cash leg and a playable-bonus leg). Its id is
  chosen by the client and is the idempotency key: the same id with the same content returns
  the original transfer; with different content it is rejected
  (:class:`TransferExists`, mapped to ALREADY_EXISTS).
* Two phases: a pending transfer reserves the amount on the debit accounts; posting moves
  all of it or a smaller amount (the rest is released); voiding releases all of it. A pending
  transfer resolves exactly once; retrying the same resolution is idempotent, the other one
  is rejected (:class:`TransferStateError`, FAILED_PRECONDITION).

Funds order (documented in docs/wallet.md): a wager drawn from a player's funds takes cash
first, then playable bonus; pending bonus is never spendable. Winnings credited to a player
go to cash, unless they name the stake transfer they are winnings of, in which case they are
split in the proportion that stake was funded (bonus share rounded down, the rest to cash).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

#: Largest amount of one transfer, in cents (10^15 cents = 10 trillion currency units).
MAX_AMOUNT = 10**15
#: Longest transfer id / account id / code / memo accepted.
MAX_ID_LEN = 128
MAX_MEMO_LEN = 512

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]*$")
_PLAYER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+=-]*$")
_CODE_RE = re.compile(r"^[a-z][a-z0-9_.-]*$")


class AccountKind(enum.IntEnum):
    """What an account is for. Values equal the ``AccountKind`` enum of wallet.proto."""

    PLAYER_CASH = 1
    PLAYER_BONUS = 2
    PLAYER_PENDING_BONUS = 3
    HOUSE_RAKE = 4
    PRIZE_RESERVE = 5
    TOURNAMENT_ESCROW = 6
    CASINO_BANKROLL = 7
    OPERATOR_CASH_IN = 8
    OPERATOR_CASH_OUT = 9
    OPERATOR_ADJUSTMENT = 10
    HOUSE_PROMOTIONS = 11


PLAYER_KINDS = frozenset(
    {AccountKind.PLAYER_CASH, AccountKind.PLAYER_BONUS, AccountKind.PLAYER_PENDING_BONUS}
)

#: Kinds whose balance may go below zero: the counter-accounts of money entering the ledger
#: (cash-in, adjustments, promotions) and the house's risk accounts (casino bankroll pays
#: winnings before it earns them back; the prize reserve funds multiplied prize pools and
#: drifts around zero). Every other kind keeps ``available >= 0``.
MAY_GO_NEGATIVE = frozenset(
    {
        AccountKind.OPERATOR_CASH_IN,
        AccountKind.OPERATOR_ADJUSTMENT,
        AccountKind.HOUSE_PROMOTIONS,
        AccountKind.CASINO_BANKROLL,
        AccountKind.PRIZE_RESERVE,
    }
)

#: The fixed system accounts, opened at start-up (idempotently).
SYSTEM_ACCOUNTS: dict[str, AccountKind] = {
    "house:rake": AccountKind.HOUSE_RAKE,
    "house:prize_reserve": AccountKind.PRIZE_RESERVE,
    "house:tournament_escrow": AccountKind.TOURNAMENT_ESCROW,
    "house:casino_bankroll": AccountKind.CASINO_BANKROLL,
    "house:promotions": AccountKind.HOUSE_PROMOTIONS,
    "operator:cash_in": AccountKind.OPERATOR_CASH_IN,
    "operator:cash_out": AccountKind.OPERATOR_CASH_OUT,
    "operator:adjustments": AccountKind.OPERATOR_ADJUSTMENT,
}

_PLAYER_SUFFIX = {
    AccountKind.PLAYER_CASH: "cash",
    AccountKind.PLAYER_BONUS: "bonus",
    AccountKind.PLAYER_PENDING_BONUS: "pending_bonus",
}
_SUFFIX_KIND = {v: k for k, v in _PLAYER_SUFFIX.items()}


def player_account_id(player_id: str, kind: AccountKind) -> str:
    """``player:<player_id>:cash|bonus|pending_bonus``."""
    return f"player:{player_id}:{_PLAYER_SUFFIX[kind]}"


def player_account_ids(player_id: str) -> tuple[str, str, str]:
    """The three account ids of one player: cash, playable bonus, pending bonus."""
    return (
        player_account_id(player_id, AccountKind.PLAYER_CASH),
        player_account_id(player_id, AccountKind.PLAYER_BONUS),
        player_account_id(player_id, AccountKind.PLAYER_PENDING_BONUS),
    )


def parse_account_id(account_id: str) -> tuple[AccountKind, str] | None:
    """Kind and player id ("" for system accounts) named by an account id, or None."""
    if account_id in SYSTEM_ACCOUNTS:
        return SYSTEM_ACCOUNTS[account_id], ""
    parts = account_id.split(":")
    ok = len(parts) == 3 and parts[0] == "player" and parts[2] in _SUFFIX_KIND
    if ok and valid_player_id(parts[1]):
        return _SUFFIX_KIND[parts[2]], parts[1]
    return None


def valid_player_id(player_id: str) -> bool:
    """Player ids: 1..100 characters of ``[A-Za-z0-9._@+=-]``, no colon."""
    return 0 < len(player_id) <= 100 and _PLAYER_RE.match(player_id) is not None


# --------------------------------------------------------------------------- errors


class WalletError(Exception):
    """Base of every rejection. Each subclass maps to one gRPC status code."""

    code = "FAILED_PRECONDITION"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(WalletError):
    """The command is malformed (INVALID_ARGUMENT)."""

    code = "INVALID_ARGUMENT"


class NotFound(WalletError):
    """An account or transfer does not exist (NOT_FOUND)."""

    code = "NOT_FOUND"


class TransferExists(WalletError):
    """The transfer id is taken by a transfer with different content (ALREADY_EXISTS)."""

    code = "ALREADY_EXISTS"


class TransferStateError(WalletError):
    """The transfer is not in a state that allows this (FAILED_PRECONDITION)."""

    code = "FAILED_PRECONDITION"


class RuleViolation(WalletError):
    """An account rule forbids the movement, e.g. spending pending bonus (FAILED_PRECONDITION)."""

    code = "FAILED_PRECONDITION"


class InsufficientFunds(WalletError):
    """A non-negative account would go below zero (FAILED_PRECONDITION, reason
    INSUFFICIENT_FUNDS)."""

    code = "FAILED_PRECONDITION"

    def __init__(self, account_id: str, available: int, requested: int) -> None:
        super().__init__(
            f"insufficient funds on {account_id}: available {available} cents, "
            f"requested {requested} cents"
        )
        self.account_id = account_id
        self.available = available
        self.requested = requested


# --------------------------------------------------------------------------- state


@dataclass
class Account:
    """One ledger account and its balances in cents."""

    account_id: str
    kind: AccountKind
    player_id: str = ""
    posted: int = 0
    reserved: int = 0
    incoming: int = 0

    @property
    def available(self) -> int:
        """What may still be debited: posted balance minus pending debits."""
        return self.posted - self.reserved

    @property
    def may_go_negative(self) -> bool:
        return self.kind in MAY_GO_NEGATIVE


@dataclass(frozen=True)
class Leg:
    """One double-entry movement: ``amount`` cents from ``debit`` to ``credit``."""

    debit: str
    credit: str
    amount: int


class TransferState(enum.IntEnum):
    """Values equal the ``TransferState`` enum of wallet.proto."""

    PENDING = 1
    POSTED = 2
    VOIDED = 3


@dataclass(frozen=True)
class AccountSide:
    """A transfer side naming one account."""

    account_id: str


@dataclass(frozen=True)
class PlayerFunds:
    """Debit side: a player's spendable funds, drawn cash first, then playable bonus."""

    player_id: str


@dataclass(frozen=True)
class PlayerWinnings:
    """Credit side: a player's winnings. Without ``stake_transfer_id`` all go to cash; with
    it they are split in the proportion that stake was funded by cash and playable bonus."""

    player_id: str
    stake_transfer_id: str = ""


DebitSide = AccountSide | PlayerFunds
CreditSide = AccountSide | PlayerWinnings


@dataclass(frozen=True)
class TransferRequest:
    """A client's command to move money. The whole request is the idempotency content."""

    transfer_id: str
    debit: DebitSide
    credit: CreditSide
    amount: int
    pending: bool = False
    code: str = "transfer"
    memo: str = ""


@dataclass
class Transfer:
    """A transfer as the ledger remembers it."""

    request: TransferRequest
    legs: tuple[Leg, ...]
    state: TransferState
    created_at: datetime
    posted_legs: tuple[Leg, ...] = ()
    resolved_at: datetime | None = None

    @property
    def transfer_id(self) -> str:
        return self.request.transfer_id

    @property
    def amount(self) -> int:
        return self.request.amount

    @property
    def posted_amount(self) -> int:
        return sum(leg.amount for leg in self.posted_legs)


# --------------------------------------------------------------------------- events


@dataclass(frozen=True)
class AccountOpened:
    """An account came into existence (balances zero)."""

    account_id: str
    kind: AccountKind
    player_id: str
    occurred_at: datetime


@dataclass(frozen=True)
class TransferPending:
    """A two-phase transfer reserved ``legs`` on their debit accounts."""

    request: TransferRequest
    legs: tuple[Leg, ...]
    occurred_at: datetime


@dataclass(frozen=True)
class TransferPosted:
    """Money moved. ``was_pending`` tells whether this resolves a pending transfer (then
    ``legs`` are the posted legs and ``released_legs`` what went back to the debit
    accounts) or is a single-phase transfer (then ``request`` is its content)."""

    request: TransferRequest
    legs: tuple[Leg, ...]
    was_pending: bool
    released_legs: tuple[Leg, ...]
    occurred_at: datetime


@dataclass(frozen=True)
class TransferVoided:
    """A pending transfer was cancelled; ``released_legs`` went back to the debit accounts."""

    transfer_id: str
    released_legs: tuple[Leg, ...]
    reason: str
    occurred_at: datetime


Event = AccountOpened | TransferPending | TransferPosted | TransferVoided


# --------------------------------------------------------------------------- validation


def _check_id(what: str, value: str) -> None:
    if not value or len(value) > MAX_ID_LEN or _ID_RE.match(value) is None:
        raise InvalidArgument(
            f"{what} must be 1..{MAX_ID_LEN} characters of [A-Za-z0-9._:@/+=-] "
            f"starting with a letter or digit, got {value!r}"
        )


def check_amount(amount: int, what: str = "amount") -> None:
    """Amounts are integer cents in 1..MAX_AMOUNT."""
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise InvalidArgument(f"{what} must be an integer number of cents")
    if amount <= 0 or amount > MAX_AMOUNT:
        raise InvalidArgument(f"{what} must be between 1 and {MAX_AMOUNT} cents, got {amount}")


def validate_request(req: TransferRequest) -> None:
    """Raise :class:`InvalidArgument` for any malformed part of a transfer request."""
    _check_id("transfer_id", req.transfer_id)
    check_amount(req.amount)
    if not req.code or len(req.code) > 64 or _CODE_RE.match(req.code) is None:
        raise InvalidArgument(f"code must match [a-z][a-z0-9_.-]* (max 64), got {req.code!r}")
    if len(req.memo) > MAX_MEMO_LEN:
        raise InvalidArgument(f"memo longer than {MAX_MEMO_LEN} characters")
    for side in (req.debit, req.credit):
        if isinstance(side, AccountSide):
            if parse_account_id(side.account_id) is None:
                raise InvalidArgument(f"malformed account id {side.account_id!r}")
        elif not valid_player_id(side.player_id):
            raise InvalidArgument(f"malformed player id {side.player_id!r}")
    if isinstance(req.credit, PlayerWinnings) and req.credit.stake_transfer_id:
        _check_id("stake_transfer_id", req.credit.stake_transfer_id)
        if req.pending:
            raise InvalidArgument("winnings split by stake cannot be a pending transfer")
    if isinstance(req.debit, PlayerFunds) and isinstance(req.credit, PlayerWinnings):
        raise InvalidArgument("a transfer cannot debit player funds and credit winnings")
    debit_ids = set(debit_account_ids(req))
    credit_ids = set(credit_account_ids(req))
    if debit_ids & credit_ids:
        raise InvalidArgument("debit and credit account must differ")


def debit_account_ids(req: TransferRequest) -> tuple[str, ...]:
    """The accounts the request may debit."""
    if isinstance(req.debit, AccountSide):
        return (req.debit.account_id,)
    cash, bonus, _ = player_account_ids(req.debit.player_id)
    return (cash, bonus)


def credit_account_ids(req: TransferRequest) -> tuple[str, ...]:
    """The accounts the request may credit."""
    if isinstance(req.credit, AccountSide):
        return (req.credit.account_id,)
    cash, bonus, _ = player_account_ids(req.credit.player_id)
    return (cash, bonus) if req.credit.stake_transfer_id else (cash,)


def request_account_ids(req: TransferRequest) -> tuple[str, ...]:
    """Every account the request touches, sorted (the lock order of the store)."""
    return tuple(sorted(set(debit_account_ids(req)) | set(credit_account_ids(req))))


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


# --------------------------------------------------------------------------- ledger


@dataclass
class Ledger:
    """State of (a part of) the ledger plus the decisions over it.

    The store loads only the accounts and transfers a command touches; decisions raise
    :class:`NotFound` for anything missing, so a partial ledger decides exactly as the full
    one would."""

    accounts: dict[str, Account] = field(default_factory=dict)
    transfers: dict[str, Transfer] = field(default_factory=dict)

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

    # ---- decisions

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

    def post_transfer(
        self, transfer_id: str, amount: int | None, now: datetime
    ) -> tuple[Transfer, list[Event]]:
        """Post a pending transfer, all of it (``amount`` None) or a smaller amount, the
        rest released. Posting an already posted transfer with the same amount is an
        idempotent retry; anything else on a resolved transfer is rejected."""
        _check_id("transfer_id", transfer_id)
        if amount is not None:
            check_amount(amount)
        t = self.transfer(transfer_id)
        want = t.amount if amount is None else amount
        if t.state is TransferState.POSTED:
            if not t.request.pending:
                raise TransferStateError(f"transfer {transfer_id} is single-phase, not pending")
            if t.posted_amount == want:
                return t, []
            raise TransferStateError(
                f"transfer {transfer_id} was already posted with {t.posted_amount} cents"
            )
        if t.state is TransferState.VOIDED:
            raise TransferStateError(f"transfer {transfer_id} was voided; cannot post it")
        if want > t.amount:
            raise TransferStateError(
                f"cannot post {want} cents: pending transfer {transfer_id} reserved only {t.amount}"
            )
        posted, released = split_legs(t.legs, want)
        event = TransferPosted(t.request, posted, True, released, now)
        self.apply(event)
        return t, [event]

    def void_transfer(
        self, transfer_id: str, reason: str, now: datetime
    ) -> tuple[Transfer, list[Event]]:
        """Void a pending transfer, releasing its reservation. Voiding a voided transfer is
        an idempotent retry; voiding a posted transfer is rejected."""
        _check_id("transfer_id", transfer_id)
        if len(reason) > MAX_MEMO_LEN:
            raise InvalidArgument(f"reason longer than {MAX_MEMO_LEN} characters")
        t = self.transfer(transfer_id)
        if t.state is TransferState.VOIDED:
            return t, []
        if t.state is TransferState.POSTED:
            raise TransferStateError(
                f"transfer {transfer_id} was posted; a posted transfer cannot be voided "
                "(move the money back with a new transfer)"
            )
        event = TransferVoided(transfer_id, t.legs, reason, now)
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


def split_legs(legs: Sequence[Leg], amount: int) -> tuple[tuple[Leg, ...], tuple[Leg, ...]]:
    """Split reserved legs into (posted, released) so the posted part sums to ``amount``,
    taking legs in their order (cash before bonus), so a partial post draws cash first."""
    posted: list[Leg] = []
    released: list[Leg] = []
    left = amount
    for leg in legs:
        take = min(left, leg.amount)
        left -= take
        if take:
            posted.append(replace(leg, amount=take))
        if leg.amount - take:
            released.append(replace(leg, amount=leg.amount - take))
    return tuple(posted), tuple(released)


def describe_request(req: TransferRequest) -> str:
    """Short human text of a request, for error messages."""

    def side(s: DebitSide | CreditSide) -> str:
        if isinstance(s, AccountSide):
            return s.account_id
        if isinstance(s, PlayerFunds):
            return f"funds of player {s.player_id}"
        extra = f" (stake {s.stake_transfer_id})" if s.stake_transfer_id else ""
        return f"winnings of player {s.player_id}{extra}"

    phase = "pending" if req.pending else "posted"
    return (
        f"{req.amount} cents {side(req.debit)} -> {side(req.credit)}, {phase}, "
        f"code {req.code!r}, memo {req.memo!r}"
    )


def balance_breakdown(ledger: Ledger, player_id: str) -> dict[str, int]:
    """The seed's balance panel: balance = cash + playable bonus (available amounts);
    pending bonus is shown but not spendable; reserved = held by pending transfers."""
    cash_id, bonus_id, pend_id = player_account_ids(player_id)
    cash, bonus, pend = ledger.account(cash_id), ledger.account(bonus_id), ledger.account(pend_id)
    return {
        "balance": cash.available + bonus.available,
        "cash": cash.available,
        "playable_bonus": bonus.available,
        "pending_bonus": pend.available,
        "reserved": cash.reserved + bonus.reserved,
    }
