"""Credits owed casino wins through the wallet as owed work (``electric_platform.owed_work``).

Each win: wallet CreateTransfer id ``cwin-<round>-<player>-<bet kind>``, debit
``house:casino_bankroll``, credit the player's winnings (split like the stake transfer was
funded when the bet names it), code ``winnings``, amount stake + win; then one transaction
marks it ``credited`` (only if still ``owed``) and appends CasinoWinCredited. A crash in
between repeats the wallet call, which the wallet answers as a replay: one transfer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

from electric.wallet.v1 import wallet_pb2
from electric_clients.accounts import BANKROLL
from electric_clients.wallet import WalletClient
from electric_platform.owed_work import OwedWork

from electric_payout.casino.metrics import CasinoPayoutMetrics
from electric_payout.casino.repo import WinRow
from electric_payout.casino.wins import CasinoWins

#: Wallet transfer code of a casino win.
WIN_CODE = "winnings"


@dataclass(frozen=True)
class WinCall:
    """One owed casino credit (an ``OwedCall``: credits do not block each other)."""

    win: WinRow
    blocking: bool = False
    #: Correlation id of the CasinoWinOwed (the settling request's), bound while it runs.
    correlation_id: str = ""
    #: Id of the CasinoWinOwed that owes the credit.
    causation_id: str = ""

    @property
    def op_id(self) -> str:
        return self.win.transfer_key

    @property
    def group(self) -> str:
        return self.win.round_id


class CasinoCrediter:
    """The owed-work source of casino credits (module doc)."""

    def __init__(
        self,
        wins: CasinoWins,
        wallet: WalletClient,
        *,
        interval: float = 1.0,
        metrics: CasinoPayoutMetrics | None = None,
    ) -> None:
        self.metrics = metrics or CasinoPayoutMetrics()
        self.wins = wins
        self.wallet = wallet
        self.work: OwedWork[WinCall, wallet_pb2.Transfer] = OwedWork(
            "casino_win_credit", self, interval=interval
        )
        #: Set to make the background loop pass now (after a settled round).
        self.wake = self.work.wake

    async def run_once(self) -> int:
        """One pass; the number of wins credited by it."""
        return (await self.work.run_pass()).done

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop``: a pass whenever woken, and at least every ``interval``."""
        await self.work.run(stop)

    # ------------------------------------------------------------------ OwedWorkSource

    def pending(self, group: str | None) -> list[WinCall]:
        wins = self.wins.owed(group)
        causes = self.wins.owed_causes(w.round_id for w in wins) if wins else {}
        out = []
        for w in wins:
            cause = causes.get(w.transfer_key)
            ids = (cause.correlation_id, cause.event_id) if cause is not None else ("", "")
            out.append(WinCall(w, correlation_id=ids[0], causation_id=ids[1]))
        return out

    def groups_waiting(self) -> Iterable[str]:
        return ()

    async def perform(self, call: WinCall) -> wallet_pb2.Transfer:
        w = call.win
        return await self.wallet.credit_prize(
            w.transfer_key,
            w.player_id,
            w.amount_cents,
            from_account=BANKROLL,
            stake_transfer_id=w.stake_transfer_id,
            code=WIN_CODE,
            memo=f"Electric Poker {w.game} win, round {w.round_id}, {w.bet_kind}",
        )

    def record_done(self, call: WinCall, result: wallet_pb2.Transfer) -> bool:
        w = call.win
        if not self.wins.mark_credited(w, result.spec.transfer_id or w.transfer_key):
            return False
        self.metrics.count(w.game, w.amount_cents)
        return True

    def record_failure(self, call: WinCall, error: str) -> None:
        self.wins.note_failure(call.win, error)

    async def settle(self, group: str) -> None:
        return None

    async def before_pass(self) -> None:
        return None

    async def after_pass(self) -> None:
        return None
