"""Prometheus view of the money: read from the projections at scrape time (never stale,
no bookkeeping in the write path).

* ``electric_wallet_account_posted_cents{account_id,kind}`` — every house/operator account
  (rake, prize reserve, escrow, bankroll, promotions, cash-in/out, adjustments).
* ``electric_wallet_account_reserved_cents{account_id,kind}`` — their pending debits.
* ``electric_wallet_player_funds_cents{kind}`` — sum over all players per player kind (the
  operator's liability to players).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from . import domain as d
from . import store
from .handlers import Wallet


class WalletCollector(Collector):
    """Custom collector over the wallet's projection tables."""

    def __init__(self, wallet: Wallet) -> None:
        self.wallet = wallet

    def collect(self) -> Iterator[GaugeMetricFamily]:
        posted = GaugeMetricFamily(
            "electric_wallet_account_posted_cents",
            "Posted balance of each house/operator account, in cents.",
            labels=["account_id", "kind"],
        )
        reserved = GaugeMetricFamily(
            "electric_wallet_account_reserved_cents",
            "Pending debits held on each house/operator account, in cents.",
            labels=["account_id", "kind"],
        )
        players = GaugeMetricFamily(
            "electric_wallet_player_funds_cents",
            "Sum of posted balances over all player accounts of a kind, in cents.",
            labels=["kind"],
        )
        a = store.accounts
        with self.wallet.engine.connect() as conn:
            system = conn.execute(
                select(a.c.account_id, a.c.kind, a.c.posted, a.c.reserved).where(
                    a.c.account_id.in_(list(d.SYSTEM_ACCOUNTS))
                )
            ).all()
            sums = conn.execute(
                select(a.c.kind, func.sum(a.c.posted))
                .where(a.c.kind.in_([int(k) for k in d.PLAYER_KINDS]))
                .group_by(a.c.kind)
            ).all()
        for account_id, kind, p, r in system:
            name = d.AccountKind(kind).name.lower()
            posted.add_metric([account_id, name], float(p))
            reserved.add_metric([account_id, name], float(r))
        for kind, total in sums:
            players.add_metric([d.AccountKind(kind).name.lower()], float(total or 0))
        yield posted
        yield reserved
        yield players
