"""Reading the rich error details of a failed call.

Services attach a detail message (e.g. ``electric.common.v1.InsufficientFunds``) to an error
as a ``google.rpc.Status`` in the ``grpc-status-details-bin`` trailer (built server-side by
``electric_platform.errors``). :func:`error_detail` reads it back with grpcio-status.
"""

from __future__ import annotations

import grpc
from google.protobuf.message import Message
from grpc_status import rpc_status


def error_detail(err: object, into: Message) -> bool:
    """Unpack the first detail of ``into``'s type from a gRPC error into ``into``.

    ``err`` is a ``grpc.aio.AioRpcError`` (or a sync ``grpc.RpcError`` call). True if found;
    False when the error carries no ``google.rpc.Status``, or one that disagrees with the
    call's own code and message (``rpc_status.from_call`` rejects those).
    """
    try:
        status = rpc_status.from_call(err)  # type: ignore[arg-type]  # AioRpcError quacks
    except (AttributeError, ValueError):
        return False
    if status is None:
        return False
    for item in status.details:
        if item.TypeName() == into.DESCRIPTOR.full_name:
            item.Unpack(into)
            return True
    return False


def token_expired(err: object) -> bool:
    """True when a call (typically a server stream) ended because its bearer token expired:
    the platform ends every stream then; call again with a fresh token."""
    code = getattr(err, "code", None)
    details = getattr(err, "details", None)
    if not callable(code) or not callable(details):
        return False
    return bool(code() == grpc.StatusCode.UNAUTHENTICATED and "expired" in (details() or ""))
