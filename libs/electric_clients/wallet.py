"""Typed async client of the wallet for other services (registration, payout, runner, bots).

Every money movement carries a caller-chosen transfer id, so a call can be repeated safely:
the channel retries ABORTED (lost races), UNAVAILABLE and server-reported DEADLINE_EXCEEDED
with the same id (gRPC service-config ``retryPolicy``, :mod:`electric_clients.channel`), and a
repeat of a call that already succeeded returns the original transfer (``replayed=True``).
Usage::

    tokens = service_tokens(host.config)   # electric_platform.auth: its own signing key
    async with WalletClient.connect("127.0.0.1:50053", tokens) as wallet:
        t = await wallet.reserve(f"buyin-{entry_id}", player_id, 500)   # pending
        await wallet.post(f"buyin-{entry_id}")                          # table filled
        # or: await wallet.void(f"buyin-{entry_id}", reason="unregistered")
        await wallet.move(f"rake-{entry_id}", ESCROW, RAKE, 35, code="rake")
        await wallet.credit_prize(f"prize-{tournament_id}-{player_id}", player_id, 1500)

Errors are ``grpc.aio.AioRpcError`` with the status codes documented in wallet.proto;
:func:`insufficient_funds` extracts the detail of a FAILED_PRECONDITION for missing money.

The client depends on the generated protos and grpc only: the caller supplies each call's
metadata (bearer token, request and correlation ids) through :class:`CallMetadata`, which
the platform's ``TokenSource`` implements.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Protocol, TypeVar

import grpc
from electric.common.v1 import errors_pb2
from electric.wallet.v1 import ledger_pb2, wallet_pb2, wallet_pb2_grpc

from electric_clients.accounts import BANKROLL, ESCROW, PRIZE_RESERVE
from electric_clients.channel import retrying_channel, service_config
from electric_clients.errors import error_detail

T = TypeVar("T")

#: Full proto name of the wallet service (every method is idempotent by its ids).
WALLET_SERVICE = "electric.wallet.v1.WalletService"
#: Retry policy of the wallet channel: 5 attempts, 50 ms doubling to 400 ms (jittered).
WALLET_SERVICE_CONFIG = service_config([WALLET_SERVICE])


class CallMetadata(Protocol):
    """Supplies the metadata of each outgoing call (auth and tracing ids)."""

    def metadata(self) -> Sequence[tuple[str, str]]: ...


def insufficient_funds(err: grpc.aio.AioRpcError) -> errors_pb2.InsufficientFunds | None:
    """The InsufficientFunds detail of a wallet error, or None."""
    detail = errors_pb2.InsufficientFunds()
    return detail if error_detail(err, detail) else None


class WalletClient:
    """Async client over one channel; ``calls`` supplies each call's metadata."""

    def __init__(
        self, channel: grpc.aio.Channel, calls: CallMetadata, *, timeout: float = 10.0
    ) -> None:
        self.channel = channel
        self.stub = wallet_pb2_grpc.WalletServiceStub(channel)
        self._calls = calls
        self.timeout = timeout

    @classmethod
    def connect(cls, target: str, calls: CallMetadata) -> WalletClient:
        """A client on a new channel to ``target`` (host:port) retrying transient failures."""
        return cls(retrying_channel(target, WALLET_SERVICE_CONFIG), calls)

    async def close(self) -> None:
        await self.channel.close(None)

    async def __aenter__(self) -> WalletClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _call(self, fn: Callable[..., Awaitable[T]], request: object) -> T:
        # One deadline for the call and all its retries (the channel retries, see module doc).
        return await fn(request, metadata=tuple(self._calls.metadata()), timeout=self.timeout)

    # ------------------------------------------------------------------ money movements

    async def create(self, spec: ledger_pb2.TransferSpec) -> wallet_pb2.CreateTransferResponse:
        """Create any transfer (see TransferSpec)."""
        return await self._call(
            self.stub.CreateTransfer, wallet_pb2.CreateTransferRequest(spec=spec)
        )

    async def reserve(
        self,
        transfer_id: str,
        player_id: str,
        amount: int,
        *,
        to_account: str = ESCROW,
        code: str = "buy_in",
        memo: str = "",
    ) -> wallet_pb2.Transfer:
        """Pending transfer of ``amount`` cents from the player's funds (cash first, then
        playable bonus) to ``to_account``: reserves the buy-in."""
        spec = ledger_pb2.TransferSpec(
            transfer_id=transfer_id,
            debit_player_id=player_id,
            credit_account_id=to_account,
            amount=amount,
            pending=True,
            code=code,
            memo=memo,
        )
        return (await self.create(spec)).transfer

    async def wager(
        self,
        transfer_id: str,
        player_id: str,
        amount: int,
        *,
        to_account: str = BANKROLL,
        code: str = "wager",
        memo: str = "",
    ) -> wallet_pb2.Transfer:
        """Immediate transfer from the player's funds (cash first) to ``to_account``."""
        spec = ledger_pb2.TransferSpec(
            transfer_id=transfer_id,
            debit_player_id=player_id,
            credit_account_id=to_account,
            amount=amount,
            code=code,
            memo=memo,
        )
        return (await self.create(spec)).transfer

    async def post(self, transfer_id: str, amount: int = 0) -> wallet_pb2.Transfer:
        """Post a pending transfer (``amount`` 0 = all of it; less releases the rest)."""
        response = await self._call(
            self.stub.PostTransfer,
            wallet_pb2.PostTransferRequest(transfer_id=transfer_id, amount=amount),
        )
        return response.transfer

    async def void(self, transfer_id: str, reason: str = "") -> wallet_pb2.Transfer:
        """Void a pending transfer, releasing the reservation."""
        response = await self._call(
            self.stub.VoidTransfer,
            wallet_pb2.VoidTransferRequest(transfer_id=transfer_id, reason=reason),
        )
        return response.transfer

    async def move(
        self,
        transfer_id: str,
        from_account: str,
        to_account: str,
        amount: int,
        *,
        code: str = "transfer",
        memo: str = "",
        pending: bool = False,
    ) -> wallet_pb2.Transfer:
        """Transfer between two named accounts (e.g. escrow to rake and prize reserve)."""
        spec = ledger_pb2.TransferSpec(
            transfer_id=transfer_id,
            debit_account_id=from_account,
            credit_account_id=to_account,
            amount=amount,
            pending=pending,
            code=code,
            memo=memo,
        )
        return (await self.create(spec)).transfer

    async def credit_prize(
        self,
        transfer_id: str,
        player_id: str,
        amount: int,
        *,
        from_account: str = PRIZE_RESERVE,
        stake_transfer_id: str = "",
        code: str = "prize",
        memo: str = "",
    ) -> wallet_pb2.Transfer:
        """Credit winnings to a player: to cash, or split like the stake transfer was
        funded when ``stake_transfer_id`` is given."""
        spec = ledger_pb2.TransferSpec(
            transfer_id=transfer_id,
            debit_account_id=from_account,
            credit_player_winnings=ledger_pb2.PlayerWinnings(
                player_id=player_id, stake_transfer_id=stake_transfer_id
            ),
            amount=amount,
            code=code,
            memo=memo,
        )
        return (await self.create(spec)).transfer

    # ------------------------------------------------------------------ reads

    async def open_player(self, player_id: str) -> wallet_pb2.Balance:
        response = await self._call(
            self.stub.OpenPlayerAccounts,
            wallet_pb2.OpenPlayerAccountsRequest(player_id=player_id),
        )
        return response.balance

    async def balance(self, player_id: str) -> wallet_pb2.Balance:
        response = await self._call(
            self.stub.GetBalance, wallet_pb2.GetBalanceRequest(player_id=player_id)
        )
        return response.balance

    async def account(self, account_id: str) -> wallet_pb2.Account:
        response = await self._call(
            self.stub.GetAccount, wallet_pb2.GetAccountRequest(account_id=account_id)
        )
        return response.account

    async def get_transfer(self, transfer_id: str) -> wallet_pb2.Transfer:
        response = await self._call(
            self.stub.GetTransfer, wallet_pb2.GetTransferRequest(transfer_id=transfer_id)
        )
        return response.transfer
