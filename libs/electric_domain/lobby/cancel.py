"""Cancelling a table that has not started, and giving every buy-in back.

Rules (docs/registration.md "Cancelling a table"):

- A table can be cancelled while it is ``registering`` or ``filled`` (buy-ins being
  collected, TournamentStarted not yet published). A ``cancelled`` table is cancelled again
  as a no-op (exactly once); a started, running or finished table cannot be cancelled.
- Registration cancels a filled table by itself when one of its buy-ins cannot be posted
  for good (the wallet refuses the post: the reservation was voided or is unknown).
- Every active entry of a cancelled table owes one *unwind* of its buy-in, decided when it is
  carried out from what the wallet holds (so a post that succeeded but was never recorded is
  still refunded): a pending reservation is voided; a posted one is refunded whole from the
  escrow to the player, split between cash and bonus as the buy-in was funded, after the
  rake and net moves that already left the escrow are moved back.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from electric_domain.lobby.errors import TableNotCancellable
from electric_domain.lobby.settlement import Account, OpKind, WalletOp

#: Statuses a table can be cancelled from.
CANCELLABLE = ("registering", "filled")


def check_cancellable(table_id: str, status: str, started: bool) -> bool:
    """True when the table must be cancelled now, False when it already is (no-op);
    :class:`TableNotCancellable` when it started or finished."""
    if status == "cancelled":
        return False
    if status not in CANCELLABLE or started:
        raise TableNotCancellable(table_id, status)
    return True


def cancellation_ops(
    entries: Sequence[tuple[str, str, str]], *, buy_in_cents: int
) -> list[WalletOp]:
    """One unwind per active entry; ``entries``: (entry id, reservation transfer id, player
    id) in seat order."""
    return [
        WalletOp(
            entry_id,
            1000 + i,
            OpKind.UNWIND,
            reservation,
            Account.ESCROW,
            Account.NONE,
            buy_in_cents,
            "cancelled",
            player_id=player_id,
        )
        for i, (entry_id, reservation, player_id) in enumerate(entries)
    ]


class TransferState(enum.Enum):
    """What the wallet holds under a transfer id."""

    MISSING = "missing"
    PENDING = "pending"
    POSTED = "posted"
    VOIDED = "voided"


class StepKind(enum.Enum):
    """Wallet call of one unwind step."""

    VOID = "void"
    MOVE = "move"
    REFUND = "refund"


@dataclass(frozen=True)
class UnwindStep:
    """One wallet call giving a buy-in back (idempotent by ``transfer_id``)."""

    kind: StepKind
    transfer_id: str
    source: Account
    target: Account
    amount_cents: int
    #: REFUND: the buy-in transfer whose funding split the refund follows.
    stake_transfer_id: str = ""


def refund_transfer_id(entry_id: str) -> str:
    """Transfer id of the refund of a posted buy-in."""
    return f"refund-{entry_id}"


def unwind_steps(
    entry_id: str,
    reservation: str,
    *,
    buy_in: TransferState,
    buy_in_cents: int,
    rake_posted_cents: int,
    net_posted_cents: int,
) -> list[UnwindStep]:
    """The calls that give an entry's buy-in back, given what the wallet holds: the
    reservation's state and the cents already moved out of the escrow by its rake and net
    transfers (0 when not made)."""
    if buy_in is TransferState.PENDING:
        return [UnwindStep(StepKind.VOID, reservation, Account.NONE, Account.NONE, 0)]
    if buy_in is not TransferState.POSTED:
        return []  # voided (or never made): nothing was taken
    steps: list[UnwindStep] = []
    if rake_posted_cents:
        steps.append(
            UnwindStep(
                StepKind.MOVE,
                f"refund-rake-{entry_id}",
                Account.RAKE,
                Account.ESCROW,
                rake_posted_cents,
            )
        )
    if net_posted_cents:
        steps.append(
            UnwindStep(
                StepKind.MOVE,
                f"refund-net-{entry_id}",
                Account.PRIZE_RESERVE,
                Account.ESCROW,
                net_posted_cents,
            )
        )
    steps.append(
        UnwindStep(
            StepKind.REFUND,
            refund_transfer_id(entry_id),
            Account.ESCROW,
            Account.NONE,
            buy_in_cents,
            stake_transfer_id=reservation,
        )
    )
    return steps
