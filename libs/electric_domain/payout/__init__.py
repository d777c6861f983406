"""Payout's rules: which prize each finishing place is paid, and the audit re-check.

Pure: no I/O, no clock. The table's tournament domain owns the prizes (it publishes one per
finishing place in TournamentFinished); :mod:`.awards` turns those published prizes into the
awards payout credits, and :mod:`.audit` re-computes them from the pay table as an audit
control whose disagreement holds the tournament's money (docs/payout.md).
"""

from electric_domain.payout.audit import (
    Discrepancy,
    Held,
    PrizeCheck,
    Settled,
    Terms,
    UnknownPayTable,
    check_prizes,
    expected_prizes,
    settle,
    shares_for,
)
from electric_domain.payout.awards import (
    MAX_TRANSFER_ID,
    Award,
    PlaceResult,
    finish_groups,
    prize_transfer_id,
    published_awards,
)

__all__ = [
    "MAX_TRANSFER_ID",
    "Award",
    "Discrepancy",
    "Held",
    "PlaceResult",
    "PrizeCheck",
    "Settled",
    "Terms",
    "UnknownPayTable",
    "check_prizes",
    "expected_prizes",
    "finish_groups",
    "prize_transfer_id",
    "published_awards",
    "settle",
    "shares_for",
]
