"""The wallet work a lobby decision owes (carried out after its commit, in order).

When a table fills, each entry's reserved buy-in is posted (player funds → tournament
escrow), then split out of the escrow: the rake to the house rake account, the rest (the net
buy-in) to the prize reserve that funds multiplied prize pools (docs/wallet.md). Moves of 0
cents are left out. An entry withdrawn before the fill owes the void of its reservation.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from electric_domain.lobby.entries import buyin_transfer_id


class Account(enum.Enum):
    """House accounts a buy-in moves through (the service maps them to account ids)."""

    NONE = "none"
    ESCROW = "tournament_escrow"
    RAKE = "rake"
    PRIZE_RESERVE = "prize_reserve"


class OpKind(enum.Enum):
    """Wallet call of an owed op."""

    POST = "post"
    MOVE = "move"
    VOID = "void"
    #: Give a cancelled table's buy-in back (``electric_domain.lobby.cancel``).
    UNWIND = "unwind"


@dataclass(frozen=True)
class WalletOp:
    """One owed wallet call, idempotent by ``transfer_id``."""

    entry_id: str
    #: Order within the table (the post before the moves out of the escrow).
    seq: int
    kind: OpKind
    transfer_id: str
    source: Account
    target: Account
    amount_cents: int
    code: str
    #: UNWIND: the player the buy-in goes back to.
    player_id: str = ""

    @property
    def op_id(self) -> str:
        return f"{self.kind.value}:{self.transfer_id}"


def buy_in_settlement(
    entries: Sequence[tuple[str, str]], *, buy_in_cents: int, rake_cents: int
) -> list[WalletOp]:
    """Ops that collect a filled table's buy-ins; ``entries``: (entry id, its reservation's
    transfer id) in seat order. Every post comes first, then each entry's rake and net
    moves out of the escrow: a move never runs before the post that funds it, and the posts
    (or the moves) of one table do not depend on each other, so each set can run at once."""
    net = buy_in_cents - rake_cents
    planned = [
        (OpKind.POST, entry_id, reservation, Account.NONE, Account.NONE, 0, "buy_in")
        for entry_id, reservation in entries
    ]
    for entry_id, _ in entries:
        planned += [
            (
                OpKind.MOVE,
                entry_id,
                f"rake-{entry_id}",
                Account.ESCROW,
                Account.RAKE,
                rake_cents,
                "rake",
            ),
            (
                OpKind.MOVE,
                entry_id,
                f"net-{entry_id}",
                Account.ESCROW,
                Account.PRIZE_RESERVE,
                net,
                "prize_reserve",
            ),
        ]
    ops: list[WalletOp] = []
    for kind, entry_id, transfer_id, src, dst, amount, code in planned:
        if kind is OpKind.MOVE and amount == 0:
            continue
        ops.append(WalletOp(entry_id, len(ops) + 1, kind, transfer_id, src, dst, amount, code))
    return ops


def withdrawal(entry_id: str, reservation: str = "") -> WalletOp:
    """The void owed by a withdrawn entry (``reservation``: its transfer id)."""
    transfer_id = reservation or buyin_transfer_id(entry_id)
    return WalletOp(
        entry_id, 0, OpKind.VOID, transfer_id, Account.NONE, Account.NONE, 0, "unregistered"
    )
