"""The casino's wallet side: reserve each bet, and the settlement calls owed afterwards.

- :meth:`CasinoMoney.reserve`: pending transfer player → ``house:casino_bankroll``
  (transfer id = bet id) before its BetPlaced is appended; insufficient funds become
  `WalletRefused` (FAILED_PRECONDITION at the edge) with the wallet's InsufficientFunds
  detail.
- Settlement records per bet ``post`` (the bet lost or won: the stake goes to the bankroll;
  payout credits stake + win of a win from RoundSettled) or ``void`` (push, refund, void
  round) in the settling transaction; :class:`CasinoWalletWork` (an ``OwedWorkSource`` for
  ``electric_platform.owed_work.OwedWork``) performs them, each once (wallet idempotency by
  transfer id + ``op_done``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import grpc
from electric.wallet.v1 import ledger_pb2
from electric_clients.accounts import BANKROLL
from electric_clients.wallet import WalletClient, insufficient_funds
from sqlalchemy import Engine

from electric_table.casino import repo
from electric_table.refusals import WalletRefused, WalletUnavailable

#: Wallet transfer code of a casino bet.
BET_CODE = "casino_bet"


@dataclass(frozen=True)
class OwedOp:
    """One owed wallet call (``OwedCall``)."""

    bet_id: str
    round_id: str
    op: str

    @property
    def op_id(self) -> str:
        return f"{self.op}:{self.bet_id}"

    @property
    def group(self) -> str:
        return self.round_id

    @property
    def blocking(self) -> bool:
        return False


async def reserve(wallet: WalletClient, bet_id: str, player_id: str, amount: int) -> None:
    """Reserve a bet; a refusal changes nothing (`WalletRefused`; `WalletUnavailable`: the
    wallet did not answer, the outcome is unknown)."""
    try:
        t = await wallet.reserve(
            bet_id, player_id, amount, to_account=BANKROLL, code=BET_CODE, memo=bet_id
        )
    except grpc.aio.AioRpcError as err:
        detail = insufficient_funds(err)
        if detail is not None:
            raise WalletRefused(
                f"insufficient funds for a bet of {amount} cents", detail=detail
            ) from err
        if err.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.INVALID_ARGUMENT):
            raise WalletRefused(f"the wallet refused the bet: {err.details()}") from err
        raise WalletUnavailable(f"wallet unavailable, bet not placed: {err.details()}") from err
    if t.state != ledger_pb2.TRANSFER_STATE_PENDING:
        raise WalletRefused(
            f"bet {bet_id} was already resolved in the wallet; this bet cannot be placed again"
        )


class CasinoWalletWork:
    """Owed post/void calls of settled or voided rounds (groups = round ids)."""

    def __init__(self, engine: Engine, wallet: WalletClient) -> None:
        self.engine = engine
        self.wallet = wallet

    def pending(self, group: str | None) -> Sequence[OwedOp]:
        with self.engine.connect() as conn:
            return [OwedOp(b.bet_id, b.round_id, b.owed_op) for b in repo.owed(conn, group)]

    def groups_waiting(self) -> Iterable[str]:
        return ()

    async def perform(self, call: OwedOp) -> str:
        try:
            if call.op == repo.POST:
                await self.wallet.post(call.bet_id)
            else:
                await self.wallet.void(call.bet_id, reason="casino round")
        except grpc.aio.AioRpcError as err:
            if call.op == repo.VOID and err.code() == grpc.StatusCode.NOT_FOUND:
                return "never reserved"  # an intent whose reservation never happened
            raise
        return call.op

    def record_done(self, call: OwedOp, result: str) -> bool:
        with self.engine.begin() as conn:
            return repo.done(conn, call.bet_id)

    def record_failure(self, call: OwedOp, error: str) -> None:
        with self.engine.begin() as conn:
            repo.failed(conn, call.bet_id, error)

    async def settle(self, group: str) -> None:
        return None

    async def before_pass(self) -> None:
        return None

    async def after_pass(self) -> None:
        return None
