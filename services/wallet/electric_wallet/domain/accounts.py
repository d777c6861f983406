"""Ledger accounts: their kinds, their ids, and their balances.

An :class:`Account` has a kind and three integers in cents: ``posted`` (credits minus
debits of posted transfers), ``reserved`` (debits of pending transfers not yet resolved)
and ``incoming`` (credits of pending transfers not yet resolved). ``available`` is
``posted - reserved``.

Accounts of a *non-negative* kind (every player account, escrow, rake, cash-out) must keep
``available >= 0`` after every transfer, reservations included. House/system accounts that
are the counter-account of money entering or leaving the ledger may go negative
(:data:`MAY_GO_NEGATIVE`).

Account ids are a public naming scheme: ``player:<player_id>:cash|bonus|pending_bonus`` and
the fixed system accounts of :data:`SYSTEM_ACCOUNTS`.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

# The house account ids and the player account format are the wallet's public contract,
# defined once next to the client (a grpc-free module).
from electric_clients.accounts import (
    BANKROLL,
    ESCROW,
    PRIZE_RESERVE,
    PROMOTIONS,
    RAKE,
    player_account,
)
from electric_clients.accounts import PLAYER_CASH as _CASH_SUFFIX


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

#: The operator's accounts: where deposits come from, withdrawals go, adjustments balance.
CASH_IN = "operator:cash_in"
CASH_OUT = "operator:cash_out"
ADJUSTMENTS = "operator:adjustments"

#: The fixed system accounts, opened at start-up (idempotently), in this order.
SYSTEM_ACCOUNTS: dict[str, AccountKind] = {
    RAKE: AccountKind.HOUSE_RAKE,
    PRIZE_RESERVE: AccountKind.PRIZE_RESERVE,
    ESCROW: AccountKind.TOURNAMENT_ESCROW,
    BANKROLL: AccountKind.CASINO_BANKROLL,
    PROMOTIONS: AccountKind.HOUSE_PROMOTIONS,
    CASH_IN: AccountKind.OPERATOR_CASH_IN,
    CASH_OUT: AccountKind.OPERATOR_CASH_OUT,
    ADJUSTMENTS: AccountKind.OPERATOR_ADJUSTMENT,
}

_PLAYER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+=-]*$")

_PLAYER_SUFFIX = {
    AccountKind.PLAYER_CASH: _CASH_SUFFIX,
    AccountKind.PLAYER_BONUS: "bonus",
    AccountKind.PLAYER_PENDING_BONUS: "pending_bonus",
}
_SUFFIX_KIND = {v: k for k, v in _PLAYER_SUFFIX.items()}


def player_account_id(player_id: str, kind: AccountKind) -> str:
    """``player:<player_id>:cash|bonus|pending_bonus``."""
    return player_account(player_id, _PLAYER_SUFFIX[kind])


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
