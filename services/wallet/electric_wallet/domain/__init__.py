"""The wallet's ledger: accounts, double-entry transfers, two-phase pending/post/void.

Pure package: no I/O, no clock, no randomness, no grpc or sqlalchemy. Every decision takes
the current state and a command and returns the facts (events) it produces; the state is a
fold over those facts (:meth:`Ledger.apply`), so the same code rebuilds balances from the
event log. The model follows TigerBeetle (docs/wallet.md).

By concept:

- :mod:`.accounts` — account kinds, the account id scheme, balances;
- :mod:`.transfers` — requests, their validation, the transfer as remembered;
- :mod:`.events` — the facts;
- :mod:`.ledger` — the fold and the decisions (funds order, per-kind rules);
- :mod:`.twophase` — resolving a pending transfer (post all/part, void);
- :mod:`.balance` — a player's balance panel;
- :mod:`.statement` — the statement lines each fact adds;
- :mod:`.errors` — the rejections (mapped to gRPC statuses by type in ``api``).

Callers use the package namespace (``from electric_wallet import domain as d``).
"""

from __future__ import annotations

from .accounts import (
    ADJUSTMENTS,
    CASH_IN,
    CASH_OUT,
    MAY_GO_NEGATIVE,
    PLAYER_KINDS,
    SYSTEM_ACCOUNTS,
    Account,
    AccountKind,
    parse_account_id,
    player_account_id,
    player_account_ids,
    valid_player_id,
)
from .balance import balance_breakdown
from .errors import (
    InsufficientFunds,
    InvalidArgument,
    NotFound,
    RuleViolation,
    TransferExists,
    TransferStateError,
    WalletError,
)
from .events import AccountOpened, Event, TransferPending, TransferPosted, TransferVoided, utc
from .ledger import Ledger, copy_account, copy_transfer
from .statement import CREDIT, DEBIT, HOLD, INCOMING, RELEASE, Entry, entries_for
from .transfers import (
    MAX_AMOUNT,
    MAX_ID_LEN,
    MAX_MEMO_LEN,
    AccountSide,
    CreditSide,
    DebitSide,
    Leg,
    PlayerFunds,
    PlayerWinnings,
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
from .twophase import decide_post, decide_void, split_legs

__all__ = [
    "ADJUSTMENTS",
    "CASH_IN",
    "CASH_OUT",
    "CREDIT",
    "DEBIT",
    "HOLD",
    "INCOMING",
    "MAX_AMOUNT",
    "MAX_ID_LEN",
    "MAX_MEMO_LEN",
    "MAY_GO_NEGATIVE",
    "PLAYER_KINDS",
    "RELEASE",
    "SYSTEM_ACCOUNTS",
    "Account",
    "AccountKind",
    "AccountOpened",
    "AccountSide",
    "CreditSide",
    "DebitSide",
    "Entry",
    "Event",
    "InsufficientFunds",
    "InvalidArgument",
    "Ledger",
    "Leg",
    "NotFound",
    "PlayerFunds",
    "PlayerWinnings",
    "RuleViolation",
    "Transfer",
    "TransferExists",
    "TransferPending",
    "TransferPosted",
    "TransferRequest",
    "TransferState",
    "TransferStateError",
    "TransferVoided",
    "WalletError",
    "balance_breakdown",
    "check_amount",
    "check_id",
    "copy_account",
    "copy_transfer",
    "credit_account_ids",
    "debit_account_ids",
    "decide_post",
    "decide_void",
    "describe_request",
    "entries_for",
    "parse_account_id",
    "player_account_id",
    "player_account_ids",
    "request_account_ids",
    "split_legs",
    "utc",
    "valid_player_id",
    "validate_request",
]
