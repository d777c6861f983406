"""Wrapping gRPC method handlers (unary and streaming) for the server interceptors.

Every platform interceptor wraps the servicer's behaviour with an *around* async context
manager, for all four call kinds. :class:`~electric_platform.errors.ServiceError` raised by
the behaviour (or by the around block, e.g. a failed token check) becomes
``context.abort(code, message)`` with the optional detail in ``grpc-status-details-bin``.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Callable
from contextvars import ContextVar
from typing import Any, NoReturn, TypeAlias

import grpc

from electric_platform.errors import (
    InvalidArgument,
    ServiceError,
    bound_detail,
    rich_status,
    service_error_for,
)

HandlerCallDetails: TypeAlias = grpc.HandlerCallDetails
RpcHandler: TypeAlias = Any  # grpc.RpcMethodHandler | None (untyped in the stubs)
Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]
Around: TypeAlias = Callable[[Context], contextlib.AbstractAsyncContextManager[None]]


def method_kind(handler: RpcHandler) -> str:
    """``unary_unary``, ``unary_stream``, ``stream_unary`` or ``stream_stream``."""
    if handler.request_streaming and handler.response_streaming:
        return "bidi_stream"
    if handler.request_streaming:
        return "client_stream"
    if handler.response_streaming:
        return "server_stream"
    return "unary"


def split_method(full: str) -> tuple[str, str]:
    """``/pkg.Service/Method`` → (``pkg.Service``, ``Method``)."""
    _, _, rest = full.partition("/")
    service, _, method = rest.partition("/")
    return service or "unknown", method or "unknown"


async def abort_with(context: Context, exc: ServiceError) -> NoReturn:
    """Abort the call with the status (and detail) of ``exc``; the detail's text fields are
    bounded like the message (:func:`electric_platform.errors.bound_text`)."""
    if exc.detail is not None:
        status = rich_status(exc.code, exc.message, bound_detail(exc.detail))
        context.set_trailing_metadata(status.trailing_metadata)
    await context.abort(exc.code, exc.message)
    raise AssertionError("unreachable: context.abort raises")  # pragma: no cover


async def _result(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


async def _iterate(value: Any) -> AsyncIterator[Any]:
    if inspect.isawaitable(value):
        value = await value
    if value is None:  # the behaviour wrote its responses with context.write()
        return
    if hasattr(value, "__aiter__"):
        async for item in value:
            yield item
    else:
        for item in value:
            yield item


def map_stream(
    handler: RpcHandler, transform: Callable[[AsyncIterator[Any]], AsyncIterator[Any]]
) -> RpcHandler:
    """``handler`` with its response stream passed through ``transform`` (server and bidi
    streams; unary responses are returned unchanged)."""
    if handler is None or not handler.response_streaming:
        return handler
    if handler.request_streaming:
        inner = handler.stream_stream
        factory: Any = grpc.stream_stream_rpc_method_handler
    else:
        inner = handler.unary_stream
        factory = grpc.unary_stream_rpc_method_handler

    async def streaming(request: Any, context: Context) -> AsyncIterator[Any]:
        async for item in transform(_iterate(inner(request, context))):
            yield item

    return factory(
        streaming,
        request_deserializer=handler.request_deserializer,
        response_serializer=handler.response_serializer,
    )


class Undecodable:
    """What a wrapped deserializer returns for bytes that are not the request message: the
    call then ends with INVALID_ARGUMENT instead of gRPC's UNKNOWN with the parser's text."""

    __slots__ = ()


_UNDECODABLE = Undecodable()


def _tolerant(deserializer: Any) -> Any:
    """``deserializer`` returning :data:`_UNDECODABLE` instead of raising."""
    if deserializer is None or getattr(deserializer, "_electric_tolerant", False):
        return deserializer

    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception:
            return _UNDECODABLE

    deserialize._electric_tolerant = True  # type: ignore[attr-defined]
    return deserialize


def _check_decoded(request: Any) -> None:
    if isinstance(request, Undecodable):
        raise InvalidArgument("the request is not a valid message of this method's type")


def _unexpected(exc: Exception) -> bool:
    """True for an error the outermost wrapper must turn into a status itself (not an abort
    already under way)."""
    return not isinstance(exc, ServiceError | grpc.aio.AbortError)


#: Set by the outermost wrapper of a call: only it turns ServiceError into a status. That way
#: every around block (metrics, logs) sees the ServiceError and finishes *before*
#: ``context.abort`` sends the status to the client.
_outer: ContextVar[bool | None] = ContextVar("electric_rpc_outer", default=None)


def wrap_handler(handler: RpcHandler, around: Around) -> RpcHandler:
    """``handler`` with each call's behaviour running inside ``around(context)``.

    :class:`ServiceError` from the behaviour or an around block propagates through the
    around blocks of all wrappers; the outermost wrapper aborts the call with its status.
    Any other exception is the last resort: the outermost wrapper maps it by type
    (:func:`electric_platform.errors.service_error_for`) with a message that never shows
    internals, so no call ends with UNKNOWN.
    """
    if handler is None:
        return None
    if handler.request_streaming and handler.response_streaming:
        inner = handler.stream_stream
        factory: Any = grpc.stream_stream_rpc_method_handler
    elif handler.request_streaming:
        inner = handler.stream_unary
        factory = grpc.stream_unary_rpc_method_handler
    elif handler.response_streaming:
        inner = handler.unary_stream
        factory = grpc.unary_stream_rpc_method_handler
    else:
        inner = handler.unary_unary
        factory = grpc.unary_unary_rpc_method_handler

    if handler.response_streaming:

        async def streaming(request: Any, context: Context) -> AsyncIterator[Any]:
            token = _outer.set(False) if _outer.get() is None else None
            try:
                async with around(context):
                    _check_decoded(request)
                    async for item in _iterate(inner(request, context)):
                        yield item
            except ServiceError as exc:
                if token is None:
                    raise  # an outer wrapper reports it, after every around block ran
                await abort_with(context, exc)
            except Exception as exc:
                if token is None or not _unexpected(exc):
                    raise
                await abort_with(context, service_error_for(exc))
            finally:
                if token is not None:
                    with contextlib.suppress(ValueError):  # closed from another context
                        _outer.reset(token)

        behaviour: Any = streaming
    else:

        async def unary(request: Any, context: Context) -> Any:
            token = _outer.set(False) if _outer.get() is None else None
            try:
                async with around(context):
                    _check_decoded(request)
                    return await _result(inner(request, context))
            except ServiceError as exc:
                if token is None:
                    raise
                await abort_with(context, exc)
            except Exception as exc:
                if token is None or not _unexpected(exc):
                    raise
                await abort_with(context, service_error_for(exc))
            finally:
                if token is not None:
                    with contextlib.suppress(ValueError):  # closed from another context
                        _outer.reset(token)

        behaviour = unary

    deserializer = handler.request_deserializer
    if not handler.request_streaming:  # a stream's items reach the servicer directly
        deserializer = _tolerant(deserializer)
    return factory(
        behaviour,
        request_deserializer=deserializer,
        response_serializer=handler.response_serializer,
    )
