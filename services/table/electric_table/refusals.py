"""What the table service's handlers raise besides the domain's refusals: typed, with no
transport in them. The handlers decide and store; the edge (`errors`) says which gRPC
status each answers (docs/architecture.md: handlers never build a status).

A `Refusal` is answered to the caller (and stored with its status when the request is
de-duplicated). The kinds, by what the caller should do:

| class | the caller | status |
|---|---|---|
| `BadRequest` | fixes the request | INVALID_ARGUMENT |
| `NotPermitted` | is not the one who may | PERMISSION_DENIED |
| `NotKnown` | names what does not exist (here) | NOT_FOUND |
| `NotNow` | waits for another state (or gives up) | FAILED_PRECONDITION |
| `TryAgain` | retries the same request | UNAVAILABLE |
| `TableMoved`, `ConcurrentChange` | retries (it reaches the new owner / re-reads) | ABORTED |
"""

from __future__ import annotations

from google.protobuf.message import Message


class Refusal(Exception):
    """A request the service refused, or could not carry out (nothing was changed)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(Refusal):
    """The request is malformed: it can never succeed as sent."""


class NotPermitted(Refusal):
    """The caller may not do this (not their seat, round or result)."""


class NotKnown(Refusal):
    """What the request names does not exist (or is not hosted here)."""


class NotNow(Refusal):
    """The request is well formed but the state forbids it now (a round still open, no
    result yet, a bet voided since an earlier attempt)."""


class TryAgain(Refusal):
    """A passing state (a table moving, a write interrupted): the same request can be
    retried."""


class RequestIdReused(BadRequest):
    """A request id already answered another RPC: the client reused an idempotency key."""

    def __init__(self, request_id: str, first_rpc: str) -> None:
        super().__init__(f"request_id {request_id!r} was already used for {first_rpc}")
        self.request_id = request_id
        self.first_rpc = first_rpc


class RepeatedRefusal(Refusal):
    """A retried request that was refused the first time: the stored answer again.

    ``status`` is the status name stored with the first answer (the requests table's
    ``code``), so a retry gets exactly what the first call got."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status


class TableMoved(Refusal):
    """This instance lost the table (its write was fenced): nothing was written; the retry
    reaches the new owner."""


class ConcurrentChange(Refusal):
    """The stream moved under the write (another writer), or a re-run disagreed with the
    first run: nothing was written."""


class NotStored(TryAgain):
    """The store could not take the command (the database away, a lock timeout): nothing
    was written; the same request can be retried."""


class WalletRefused(NotNow):
    """The wallet refused a bet's reservation (funds, limits): nothing is held. ``detail``:
    the wallet's own detail (``InsufficientFunds``), passed on to the caller."""

    def __init__(self, message: str, detail: Message | None = None) -> None:
        super().__init__(message)
        self.detail = detail


class WalletUnavailable(TryAgain):
    """The wallet did not answer a reservation: its outcome is unknown (the intent stays,
    resolved by the auto-void rule)."""
