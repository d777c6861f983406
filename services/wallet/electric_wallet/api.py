"""gRPC servicer of ``electric.wallet.v1.WalletService``: roles, proto → command, result →
proto, error mapping by error type — nothing else. The work happens in
:class:`.handlers.Wallet` (run in a thread).

Every ledger rejection becomes a precise status with a detail in the standard
``grpc-status-details-bin`` trailer (see :mod:`electric_platform.errors`):

====================  ====================  ==============================================
domain error          status                detail
====================  ====================  ==============================================
InsufficientFunds     FAILED_PRECONDITION   ``electric.common.v1.InsufficientFunds``
TransferStateError    FAILED_PRECONDITION   ErrorInfo reason WRONG_STATE
RuleViolation         FAILED_PRECONDITION   ErrorInfo reason NOT_ALLOWED
TransferExists        ALREADY_EXISTS        ErrorInfo reason DUPLICATE_REQUEST
NotFound              NOT_FOUND             ErrorInfo reason NOT_FOUND
InvalidArgument       INVALID_ARGUMENT      ErrorInfo reason INVALID_FIELD
Aborted               ABORTED               ErrorInfo reason VERSION_CONFLICT
wrong role / player   PERMISSION_DENIED     (from electric_platform.auth)
====================  ====================  ==============================================
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

import grpc
from electric.common.v1 import errors_pb2, money_pb2
from electric.wallet.v1 import ledger_pb2, wallet_pb2, wallet_pb2_grpc
from electric_clients import convert
from electric_platform import errors as perr
from electric_platform.auth import Role, current_principal, require_player, require_role

from . import codec
from . import domain as d
from .handlers import Aborted, Wallet

P = ParamSpec("P")
T = TypeVar("T")

READERS = (Role.SERVICE, Role.OPERATOR, Role.AUDITOR)
MOVERS = (Role.SERVICE, Role.OPERATOR)

# --------------------------------------------------------------------------- result -> proto


def transfer_to_pb(t: d.Transfer) -> wallet_pb2.Transfer:
    return wallet_pb2.Transfer(
        spec=codec.spec_to_pb(t.request),
        state=ledger_pb2.TransferState.ValueType(int(t.state)),
        legs=codec.legs_to_pb(t.legs),
        posted_legs=codec.legs_to_pb(t.posted_legs),
        posted_amount=t.posted_amount,
        created_at=convert.timestamp(t.created_at),
        resolved_at=convert.timestamp_or_none(t.resolved_at),
    )


def account_to_pb(a: d.Account) -> wallet_pb2.Account:
    return wallet_pb2.Account(
        account_id=a.account_id,
        kind=ledger_pb2.AccountKind.ValueType(int(a.kind)),
        player_id=a.player_id,
        posted=a.posted,
        reserved=a.reserved,
        incoming=a.incoming,
        available=a.available,
    )


def balance_to_pb(player_id: str, b: dict[str, int]) -> wallet_pb2.Balance:
    return wallet_pb2.Balance(
        player_id=player_id,
        balance=b["balance"],
        cash=b["cash"],
        playable_bonus=b["playable_bonus"],
        pending_bonus=b["pending_bonus"],
        reserved=b["reserved"],
    )


def add_entry(response: wallet_pb2.ListTransactionsResponse, e: d.Entry) -> None:
    """Append statement line ``e`` to ``response``."""
    response.entries.add(
        entry_id=e.entry_id,
        transfer_id=e.transfer_id,
        account_id=e.account_id,
        account_kind=int(e.account_kind),
        entry_type=e.entry_type,
        amount=e.amount,
        posted_after=e.posted_after,
        available_after=e.available_after,
        code=e.code,
        memo=e.memo,
        occurred_at=convert.timestamp(e.occurred_at),
    )


# --------------------------------------------------------------------------- errors


_REASONS: dict[type[d.WalletError], tuple[type[perr.ServiceError], int]] = {
    d.TransferStateError: (perr.FailedPrecondition, errors_pb2.ERROR_REASON_WRONG_STATE),
    d.RuleViolation: (perr.FailedPrecondition, errors_pb2.ERROR_REASON_NOT_ALLOWED),
    d.TransferExists: (perr.AlreadyExists, errors_pb2.ERROR_REASON_DUPLICATE_REQUEST),
    d.NotFound: (perr.NotFound, errors_pb2.ERROR_REASON_NOT_FOUND),
    d.InvalidArgument: (perr.InvalidArgument, errors_pb2.ERROR_REASON_INVALID_FIELD),
    Aborted: (perr.Aborted, errors_pb2.ERROR_REASON_VERSION_CONFLICT),
}


def to_service_error(exc: d.WalletError) -> perr.ServiceError:
    """The platform error (status + detail) for a ledger rejection."""
    if isinstance(exc, d.InsufficientFunds):
        return perr.FailedPrecondition(
            exc.message,
            detail=errors_pb2.InsufficientFunds(
                account_id=exc.account_id,
                available=money_pb2.Money(cents=exc.available),
                required=money_pb2.Money(cents=exc.requested),
            ),
        )
    cls, reason = _REASONS.get(type(exc), (perr.FailedPrecondition, 0))
    return cls(
        exc.message,
        detail=errors_pb2.ErrorInfo(
            reason=errors_pb2.ErrorReason.ValueType(reason), domain="wallet"
        ),
    )


async def _call(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a blocking wallet call in a worker thread (context variables carried along),
    turning ledger rejections into platform errors."""
    try:
        return await asyncio.to_thread(fn, *args, **kwargs)
    except d.WalletError as exc:
        raise to_service_error(exc) from None


Ctx = grpc.aio.ServicerContext[Any, Any]


def _rpc(
    method: Callable[[WalletApi, Any, Ctx], Awaitable[T]],
) -> Callable[[WalletApi, Any, Ctx], Awaitable[T]]:
    """Decorator: domain errors raised directly in a method body become platform errors."""

    @functools.wraps(method)
    async def wrapper(self: WalletApi, request: Any, context: Ctx) -> T:
        try:
            return await method(self, request, context)
        except d.WalletError as exc:
            raise to_service_error(exc) from None

    return wrapper


def _player_id(requested: str) -> str:
    """The player a request is about: as given, or the calling player when empty."""
    if requested:
        return requested
    principal = current_principal()
    return principal.subject if principal.role is Role.PLAYER else ""


class WalletApi(wallet_pb2_grpc.WalletServiceServicer):
    """The servicer. Roles per RPC are listed in wallet.proto."""

    def __init__(self, wallet: Wallet) -> None:
        self.wallet = wallet

    async def _balance(self, player_id: str) -> wallet_pb2.Balance:
        return balance_to_pb(player_id, await _call(self.wallet.balance, player_id))

    @_rpc
    async def GetBalance(
        self, request: wallet_pb2.GetBalanceRequest, context: Ctx
    ) -> wallet_pb2.GetBalanceResponse:
        player_id = _player_id(request.player_id)
        require_player(player_id, also=READERS)
        return wallet_pb2.GetBalanceResponse(balance=await self._balance(player_id))

    @_rpc
    async def GetAccount(
        self, request: wallet_pb2.GetAccountRequest, context: Ctx
    ) -> wallet_pb2.GetAccountResponse:
        require_role(*READERS)
        account = await _call(self.wallet.account, request.account_id)
        return wallet_pb2.GetAccountResponse(account=account_to_pb(account))

    @_rpc
    async def ListTransactions(
        self, request: wallet_pb2.ListTransactionsRequest, context: Ctx
    ) -> wallet_pb2.ListTransactionsResponse:
        player_id = request.player_id
        if request.account_id:
            require_role(*READERS)
        else:
            player_id = _player_id(player_id)
            require_player(player_id, also=READERS)
        entries, token = await _call(
            self.wallet.statement,
            player_id=player_id,
            account_id=request.account_id,
            page_size=request.page.page_size,
            page_token=request.page.page_token,
        )
        response = wallet_pb2.ListTransactionsResponse()
        response.page.next_page_token = token
        for e in entries:
            add_entry(response, e)
        return response

    @_rpc
    async def OpenPlayerAccounts(
        self, request: wallet_pb2.OpenPlayerAccountsRequest, context: Ctx
    ) -> wallet_pb2.OpenPlayerAccountsResponse:
        player_id = _player_id(request.player_id)
        require_player(player_id, also=MOVERS)
        balance, opened = await _call(self.wallet.open_player, player_id)
        return wallet_pb2.OpenPlayerAccountsResponse(
            balance=balance_to_pb(player_id, balance), opened=opened
        )

    @_rpc
    async def CreateTransfer(
        self, request: wallet_pb2.CreateTransferRequest, context: Ctx
    ) -> wallet_pb2.CreateTransferResponse:
        require_role(*MOVERS)
        if not request.HasField("spec"):
            raise d.InvalidArgument("spec is required")
        result = await _call(self.wallet.create_transfer, codec.spec_from_pb(request.spec))
        return wallet_pb2.CreateTransferResponse(
            transfer=transfer_to_pb(result.transfer), replayed=result.replayed
        )

    @_rpc
    async def PostTransfer(
        self, request: wallet_pb2.PostTransferRequest, context: Ctx
    ) -> wallet_pb2.PostTransferResponse:
        require_role(*MOVERS)
        if request.amount < 0:
            raise d.InvalidArgument("amount must not be negative (0 posts the whole amount)")
        result = await _call(self.wallet.post_transfer, request.transfer_id, request.amount or None)
        return wallet_pb2.PostTransferResponse(
            transfer=transfer_to_pb(result.transfer), replayed=result.replayed
        )

    @_rpc
    async def VoidTransfer(
        self, request: wallet_pb2.VoidTransferRequest, context: Ctx
    ) -> wallet_pb2.VoidTransferResponse:
        require_role(*MOVERS)
        result = await _call(self.wallet.void_transfer, request.transfer_id, request.reason)
        return wallet_pb2.VoidTransferResponse(
            transfer=transfer_to_pb(result.transfer), replayed=result.replayed
        )

    @_rpc
    async def GetTransfer(
        self, request: wallet_pb2.GetTransferRequest, context: Ctx
    ) -> wallet_pb2.GetTransferResponse:
        require_role(*READERS)
        t = await _call(self.wallet.transfer, request.transfer_id)
        return wallet_pb2.GetTransferResponse(transfer=transfer_to_pb(t))

    @_rpc
    async def Deposit(
        self, request: wallet_pb2.DepositRequest, context: Ctx
    ) -> wallet_pb2.DepositResponse:
        require_role(Role.OPERATOR)
        result = await _call(
            self.wallet.deposit,
            request.transfer_id,
            request.player_id,
            request.amount,
            request.memo,
        )
        return wallet_pb2.DepositResponse(
            transfer=transfer_to_pb(result.transfer),
            balance=await self._balance(request.player_id),
            replayed=result.replayed,
        )

    @_rpc
    async def Withdraw(
        self, request: wallet_pb2.WithdrawRequest, context: Ctx
    ) -> wallet_pb2.WithdrawResponse:
        require_role(Role.OPERATOR)
        result = await _call(
            self.wallet.withdraw,
            request.transfer_id,
            request.player_id,
            request.amount,
            request.memo,
        )
        return wallet_pb2.WithdrawResponse(
            transfer=transfer_to_pb(result.transfer),
            balance=await self._balance(request.player_id),
            replayed=result.replayed,
        )

    @_rpc
    async def Adjust(
        self, request: wallet_pb2.AdjustRequest, context: Ctx
    ) -> wallet_pb2.AdjustResponse:
        require_role(Role.OPERATOR)
        try:
            kind = d.AccountKind(request.account_kind)
        except ValueError:
            raise d.InvalidArgument("account_kind must be a player account kind") from None
        result = await _call(
            self.wallet.adjust,
            request.transfer_id,
            request.player_id,
            kind,
            request.amount,
            request.reason,
        )
        return wallet_pb2.AdjustResponse(
            transfer=transfer_to_pb(result.transfer),
            balance=await self._balance(request.player_id),
            replayed=result.replayed,
        )
