"""The balance panel of a player: what the lobby and the cashier show."""

from __future__ import annotations

from .accounts import player_account_ids
from .ledger import Ledger


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
