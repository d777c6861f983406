"""Two-phase transfers: resolving a pending reservation by posting or voiding it.

A pending transfer reserves its amount on the debit accounts. Posting moves all of it or a
smaller amount (the rest is released); voiding releases all of it. A pending transfer
resolves exactly once; retrying the same resolution is idempotent (no new fact), the other
one is rejected (:class:`TransferStateError`).

The functions here decide on one transfer and return the fact, or None for an idempotent
retry; :class:`.Ledger` looks the transfer up and folds the fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from .errors import TransferStateError
from .events import TransferPosted, TransferVoided
from .transfers import Leg, Transfer, TransferState


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


def decide_post(t: Transfer, amount: int | None, now: datetime) -> TransferPosted | None:
    """Post ``t``, all of it (``amount`` None) or a smaller amount, the rest released.
    Posting an already posted transfer with the same amount is an idempotent retry (None);
    anything else on a resolved transfer is rejected."""
    want = t.amount if amount is None else amount
    if t.state is TransferState.POSTED:
        if not t.request.pending:
            raise TransferStateError(f"transfer {t.transfer_id} is single-phase, not pending")
        if t.posted_amount == want:
            return None
        raise TransferStateError(
            f"transfer {t.transfer_id} was already posted with {t.posted_amount} cents"
        )
    if t.state is TransferState.VOIDED:
        raise TransferStateError(f"transfer {t.transfer_id} was voided; cannot post it")
    if want > t.amount:
        raise TransferStateError(
            f"cannot post {want} cents: pending transfer {t.transfer_id} reserved only {t.amount}"
        )
    posted, released = split_legs(t.legs, want)
    return TransferPosted(t.request, posted, True, released, now)


def decide_void(t: Transfer, reason: str, now: datetime) -> TransferVoided | None:
    """Void ``t``, releasing its reservation. Voiding a voided transfer is an idempotent
    retry (None); voiding a posted transfer is rejected."""
    if t.state is TransferState.VOIDED:
        return None
    if t.state is TransferState.POSTED:
        raise TransferStateError(
            f"transfer {t.transfer_id} was posted; a posted transfer cannot be voided "
            "(move the money back with a new transfer)"
        )
    return TransferVoided(t.transfer_id, t.legs, reason, now)
