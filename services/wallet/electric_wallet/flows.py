"""Money-flow counters of the wallet: cents moved by posted transfers.

- ``electric_wallet_posted_cents_total{code, debit, credit}`` (counter): cents of the posted
  legs, by transfer code and by the kinds of the debit and credit accounts (``player_cash``,
  ``house_rake``, ``prize_reserve``, ``tournament_escrow``, ``operator_cash_in`` …);
- ``electric_wallet_posted_transfers_total{code}`` (counter): transfers posted.

A transfer counts once, when it is posted: a single-phase transfer when it is created, a
two-phase one when its pending reservation is posted (only the posted amount; pending and
voided transfers move no money). Replays of a command (same transfer id) count nothing.
Labels are bounded: account kinds are an enum, and codes outside :data:`KNOWN_CODES` are
reported as ``other`` (codes are client-chosen strings).

Counting is done by :class:`MeteredWallet` around the wallet's commands, after their
transaction committed, so the write path itself is untouched.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter

from . import domain as d
from .handlers import Result, Wallet

#: Transfer codes the platform uses (registration, payout, casino games, operators).
KNOWN_CODES = frozenset(
    {
        "adjustment",
        "buy_in",
        "deposit",
        "prize",
        "prize_reserve",
        "rake",
        "refund",
        "transfer",
        "wager",
        "winnings",
        "withdrawal",
    }
)


def kind_name(account_id: str) -> str:
    """Lower-case account kind of ``account_id`` (``unknown`` if malformed)."""
    parsed = d.parse_account_id(account_id)
    return parsed[0].name.lower() if parsed else "unknown"


class WalletFlowMetrics:
    """The flow counters, in a service's registry."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.cents = Counter(
            "electric_wallet_posted_cents_total",
            "Cents moved by posted transfers, by code and debit/credit account kind.",
            ["code", "debit", "credit"],
            registry=registry,
        )
        self.transfers = Counter(
            "electric_wallet_posted_transfers_total",
            "Transfers posted, by code.",
            ["code"],
            registry=registry,
        )

    def observe(self, result: Result) -> None:
        """Count ``result`` if the command just posted its transfer."""
        t = result.transfer
        if result.replayed or t.state is not d.TransferState.POSTED:
            return
        code = t.request.code if t.request.code in KNOWN_CODES else "other"
        self.transfers.labels(code).inc()
        for leg in t.posted_legs:
            self.cents.labels(code, kind_name(leg.debit), kind_name(leg.credit)).inc(leg.amount)


class MeteredWallet(Wallet):
    """A :class:`Wallet` whose posting commands feed :class:`WalletFlowMetrics`.

    ``withdraw`` and ``adjust`` go through :meth:`create_transfer`; ``deposit`` and
    ``post_transfer`` are counted themselves.
    """

    flows: WalletFlowMetrics | None = None

    def create_transfer(self, req: d.TransferRequest) -> Result:
        return self._observed(super().create_transfer(req))

    def post_transfer(self, transfer_id: str, amount: int | None = None) -> Result:
        return self._observed(super().post_transfer(transfer_id, amount))

    def deposit(self, transfer_id: str, player_id: str, amount: int, memo: str = "") -> Result:
        return self._observed(super().deposit(transfer_id, player_id, amount, memo))

    def _observed(self, result: Result) -> Result:
        if self.flows is not None:
            self.flows.observe(result)
        return result
