"""Refusals of casino commands."""

from __future__ import annotations

from enum import StrEnum


class RejectReason(StrEnum):
    """Why a command was refused (maps to a gRPC status in the service)."""

    BAD_AMOUNT = "bad_amount"  # outside the table limits
    NOT_ALLOWED_NOW = "not_allowed_now"  # wrong phase or already decided
    UNKNOWN_SEAT = "unknown_seat"
    NOTHING_TO_UNDO = "nothing_to_undo"
    ALREADY_DOUBLED = "already_doubled"
    ROUND_OVER = "round_over"
    BAD_SEED = "bad_seed"


class Rejected(ValueError):
    """A command was refused; nothing was applied."""

    def __init__(self, reason: RejectReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
