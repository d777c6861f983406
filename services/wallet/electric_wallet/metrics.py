"""The wallet's Prometheus metrics.

Money-flow counters, fed by :class:`.handlers.Wallet` after each posting command committed
(:class:`WalletFlowMetrics` is its ``observe``):

- ``electric_wallet_posted_cents_total{code, debit, credit}`` (counter): cents of the posted
  legs, by transfer code and by the kinds of the debit and credit accounts (``player_cash``,
  ``house_rake``, ``prize_reserve``, ``tournament_escrow``, ``operator_cash_in`` …);
- ``electric_wallet_posted_transfers_total{code}`` (counter): transfers posted.

A transfer counts once, when it is posted: a single-phase transfer when it is created, a
two-phase one when its pending reservation is posted (only the posted amount; pending and
voided transfers move no money). Replays of a command (same transfer id) count nothing.
Labels are bounded: account kinds are an enum, and codes outside :data:`KNOWN_CODES` are
reported as ``other`` (codes are client-chosen strings).

Balances, read from the projections at scrape time (never stale, no bookkeeping in the
write path) by :class:`WalletCollector`:

* ``electric_wallet_account_posted_cents{account_id,kind}`` — every house/operator account
  (rake, prize reserve, escrow, bankroll, promotions, cash-in/out, adjustments).
* ``electric_wallet_account_reserved_cents{account_id,kind}`` — their pending debits.
* ``electric_wallet_player_funds_cents{kind}`` — sum over all players per player kind (the
  operator's liability to players).
* ``electric_wallet_ledger_posted_cents{kind}`` and ``electric_wallet_ledger_pending_cents{kind}``
  — per account kind, the sum of the posted balances and of ``reserved − incoming``, read in
  ONE statement (one snapshot). Double entry: every leg debits one account and credits
  another, so ``sum(electric_wallet_ledger_posted_cents)`` and
  ``sum(electric_wallet_ledger_pending_cents)`` are 0 exactly; anything else is a broken
  ledger (alert ``LedgerUnbalanced``).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import Connection, Engine, func, select

from . import domain as d
from . import store
from .handlers import Result
from .store.tables import accounts as accounts_table

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


#: The platform's money flows (code, debit kind, credit kind): their series exist at 0 from
#: start-up, so a panel or alert over one (withdrawals: ``credit="operator_cash_out"``)
#: shows 0, not "no data", before the first such transfer (issue 28 item 6).
KNOWN_FLOWS = (
    ("deposit", "operator_cash_in", "player_cash"),
    ("withdrawal", "player_cash", "operator_cash_out"),
    ("buy_in", "player_cash", "tournament_escrow"),
    ("rake", "tournament_escrow", "house_rake"),
    ("prize_reserve", "tournament_escrow", "prize_reserve"),
    ("prize", "prize_reserve", "player_cash"),
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
        for code, debit, credit in KNOWN_FLOWS:
            self.cents.labels(code, debit, credit)
            self.transfers.labels(code)

    def observe(self, result: Result) -> None:
        """Count ``result`` if the command just posted its transfer."""
        t = result.transfer
        if result.replayed or t.state is not d.TransferState.POSTED:
            return
        code = t.request.code if t.request.code in KNOWN_CODES else "other"
        self.transfers.labels(code).inc()
        for leg in t.posted_legs:
            self.cents.labels(code, kind_name(leg.debit), kind_name(leg.credit)).inc(leg.amount)


class WalletCollector(Collector):
    """Custom collector over the wallet's projection tables."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

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
        ledger_posted = GaugeMetricFamily(
            "electric_wallet_ledger_posted_cents",
            "Sum of the posted balances of the accounts of a kind (all kinds sum to 0).",
            labels=["kind"],
        )
        ledger_pending = GaugeMetricFamily(
            "electric_wallet_ledger_pending_cents",
            "Sum of reserved minus incoming of the accounts of a kind (all kinds sum to 0).",
            labels=["kind"],
        )
        with self.engine.connect() as conn:
            system = store.system_balances(conn)
            sums = store.player_funds(conn)
            for kind, p, pending in ledger_sums(conn):
                ledger_posted.add_metric([kind.name.lower()], float(p))
                ledger_pending.add_metric([kind.name.lower()], float(pending))
        for account_id, kind, p, r in system:
            posted.add_metric([account_id, kind.name.lower()], float(p))
            reserved.add_metric([account_id, kind.name.lower()], float(r))
        for kind, total in sums:
            players.add_metric([kind.name.lower()], float(total))
        yield posted
        yield reserved
        yield players
        yield ledger_posted
        yield ledger_pending


def ledger_sums(conn: Connection) -> list[tuple[d.AccountKind, int, int]]:
    """(kind, Σ posted, Σ reserved − Σ incoming) per account kind, in one statement (so one
    snapshot: the legs of a transfer are committed together)."""
    a = accounts_table
    rows = conn.execute(
        select(a.c.kind, func.sum(a.c.posted), func.sum(a.c.reserved) - func.sum(a.c.incoming))
        .group_by(a.c.kind)
        .order_by(a.c.kind)
    ).all()
    return [(d.AccountKind(kind), int(p or 0), int(q or 0)) for kind, p, q in rows]
