"""The ledger's rejections. Pure: the gRPC status and detail of each are chosen by its type
at the edge (:mod:`electric_wallet.api`), never by comparing strings."""

from __future__ import annotations


class WalletError(Exception):
    """Base of every rejection."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArgument(WalletError):
    """The command is malformed (INVALID_ARGUMENT)."""


class NotFound(WalletError):
    """An account or transfer does not exist (NOT_FOUND)."""


class TransferExists(WalletError):
    """The transfer id is taken by a transfer with different content (ALREADY_EXISTS)."""


class TransferStateError(WalletError):
    """The transfer is not in a state that allows this (FAILED_PRECONDITION)."""


class RuleViolation(WalletError):
    """An account rule forbids the movement, e.g. spending pending bonus (FAILED_PRECONDITION)."""


class InsufficientFunds(WalletError):
    """A non-negative account would go below zero (FAILED_PRECONDITION, reason
    INSUFFICIENT_FUNDS)."""

    def __init__(self, account_id: str, available: int, requested: int) -> None:
        super().__init__(
            f"insufficient funds on {account_id}: available {available} cents, "
            f"requested {requested} cents"
        )
        self.account_id = account_id
        self.available = available
        self.requested = requested
