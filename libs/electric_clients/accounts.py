"""Wallet account ids every service agrees on (see docs/wallet.md).

House accounts are named ``house:<purpose>``; a player's accounts are
``player:<player_id>:<kind>``. These strings are part of the wallet's public contract
(``TransferSpec.debit_account_id`` / ``credit_account_id``), so they live here, next to the
client, and nowhere else.
"""

from __future__ import annotations

#: Buy-ins wait here between reservation and the table filling (then rake + prize reserve).
ESCROW = "house:tournament_escrow"
#: The net of each filled table's buy-ins; prizes are paid from it.
PRIZE_RESERVE = "house:prize_reserve"
#: The house's cut of each buy-in.
RAKE = "house:rake"
#: Casino games' stakes and winnings.
BANKROLL = "house:casino_bankroll"
#: Bonus funds granted and forfeited.
PROMOTIONS = "house:promotions"

#: Every house account, in the order the wallet opens them.
HOUSE_ACCOUNTS: tuple[str, ...] = (RAKE, PRIZE_RESERVE, ESCROW, BANKROLL, PROMOTIONS)

#: Kinds of a player's accounts (the third part of ``player:<id>:<kind>``).
PLAYER_CASH = "cash"


def player_account(player_id: str, kind: str = PLAYER_CASH) -> str:
    """The account id ``player:<player_id>:<kind>`` (``kind`` is e.g. ``cash``)."""
    return f"player:{player_id}:{kind}"
