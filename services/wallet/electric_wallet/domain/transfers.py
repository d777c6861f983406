"""Transfers: the client's request, its validation, and the transfer the ledger remembers.

A :class:`Transfer` moves ``amount`` from a debit side to a credit side in one or more
legs (a wager drawn from a player's funds is a cash leg and a playable-bonus leg). Its id is
chosen by the client and is the idempotency key: the same id with the same content returns
the original transfer; with different content it is rejected (:class:`TransferExists`).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from datetime import datetime

from .accounts import parse_account_id, player_account_ids, valid_player_id
from .errors import InvalidArgument

#: Largest amount of one transfer, in cents (10^15 cents = 10 trillion currency units).
MAX_AMOUNT = 10**15
#: Longest transfer id / account id / code / memo accepted.
MAX_ID_LEN = 128
MAX_MEMO_LEN = 512

_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]*$")
_CODE_RE = re.compile(r"^[a-z][a-z0-9_.-]*$")


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


# --------------------------------------------------------------------------- validation


def check_id(what: str, value: str) -> None:
    """Transfer ids (and stake ids): 1..MAX_ID_LEN characters of a safe alphabet."""
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
    check_id("transfer_id", req.transfer_id)
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
        check_id("stake_transfer_id", req.credit.stake_transfer_id)
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
