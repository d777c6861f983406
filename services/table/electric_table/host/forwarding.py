"""One forwarder for every call that must reach a table's owner (issue 25 item 1).

With ``partitions`` ownership a call may land on any instance; the one that receives a call
for a table it does not drive forwards it to the table's owner and relays the answer
(`routing.Router` finds the owner and carries the call; docs/scaling.md §3). Which calls are
forwarded, and how each finds its table, is data: a :class:`Route` per gRPC method, in one
map per game (``tournament.routing.table_routes``, ``casino.uth.routing.casino_routes``).
The servicers know nothing of it: :class:`OwnerForwarding` is a server interceptor that, for
a routed method, asks the router for the owner first and then either lets the local servicer
answer or relays the owner's answer. A new game's RPCs are forwarded by adding their routes,
without a method of their own.

The owner's answer is relayed as the bytes it sent (no decode and re-encode here): the
wrapped handler's serializer passes bytes through and serializes the local servicer's
messages as before. Statuses: the router's (UNAVAILABLE while a table moves, the owner's own
status and rich detail relayed), raised as ``ServiceError`` inside the platform's
interceptors, which turn it into the call's status (``electric_platform.rpc``). The
interceptor must be the innermost one (``ServiceHost.add_interceptor``): the caller's token
is checked here before anything is forwarded, and the owner checks it again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import grpc

if TYPE_CHECKING:
    from electric_table.host.routing import Router

__all__ = ["OwnerForwarding", "Route", "by_field"]


@dataclass(frozen=True)
class Route:
    """How one method's calls find their table, and which router owns them.

    ``table_of`` gives the request's table id (None or "": served here); it may block
    (a database read), so it runs in a worker thread. ``wait``: a table that is being
    started is waited for (``Router.route``)."""

    router: Router
    table_of: Callable[[Any], str | None]
    wait: bool = False
    #: The table read from the database (``table_of`` blocks): run it in a worker thread.
    blocking: bool = False

    async def owner(self, request: Any, context: Any) -> tuple[str | None, str]:
        """(the owner's address, or None to serve here; the table id)."""
        if self.blocking:
            table_id = await asyncio.to_thread(self.table_of, request)
        else:
            table_id = self.table_of(request)
        if not table_id:
            return None, ""
        return await self.router.route(table_id, context, wait=self.wait), table_id


def by_field(name: str) -> Callable[[Any], str | None]:
    """A route key read from the request's field ``name`` (``table_id``)."""

    def table_of(request: Any) -> str | None:
        return str(getattr(request, name, "")) or None

    return table_of


def _passing_bytes(serializer: Callable[[Any], bytes] | None) -> Callable[[Any], bytes]:
    """A response serializer that sends a relayed answer's bytes as they are."""

    def serialize(response: Any) -> bytes:
        if isinstance(response, bytes):
            return response
        return response.SerializeToString() if serializer is None else serializer(response)

    return serialize


class OwnerForwarding(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]
    """Forwards each routed method's calls to its table's owner (module doc)."""

    def __init__(self, routes: Mapping[str, Route]) -> None:
        self.routes = dict(routes)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Any],
        details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(details)
        route = self.routes.get(details.method)
        if handler is None or route is None or handler.request_streaming:
            return handler
        method: str = details.method
        serializer = _passing_bytes(handler.response_serializer)
        if handler.response_streaming:
            return grpc.unary_stream_rpc_method_handler(
                _streaming(route, method, handler.unary_stream),
                request_deserializer=handler.request_deserializer,
                response_serializer=serializer,
            )
        return grpc.unary_unary_rpc_method_handler(
            _unary(route, method, handler.unary_unary),
            request_deserializer=handler.request_deserializer,
            response_serializer=serializer,
        )


def _unary(route: Route, method: str, local: Any) -> Any:
    async def behaviour(request: Any, context: Any) -> Any:
        owner, table_id = await route.owner(request, context)
        if owner is None:
            return await local(request, context)
        return await route.router.unary(owner, method, request, context, table_id=table_id)

    return behaviour


def _streaming(route: Route, method: str, local: Any) -> Any:
    async def behaviour(request: Any, context: Any) -> AsyncIterator[Any]:
        owner, table_id = await route.owner(request, context)
        source = (
            local(request, context)
            if owner is None
            else route.router.stream(owner, method, request, context, table_id)
        )
        async for item in source:
            yield item

    return behaviour
