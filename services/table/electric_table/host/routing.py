"""Routing of table calls to the table's owner (issue 17; docs/scaling.md §3 "Routing"), one
router for every game (issue 25 item 1): a game plugs in a :class:`Directory`.

With ``ELECTRIC_TABLE_OWNERSHIP=partitions`` a table is driven by one instance only: the one
whose consumer group assignment holds the table's partition. A call may reach any instance
(a load balancer, a client with a list of addresses): **the instance that receives it
forwards it to the owner** and relays the answer, statuses and error details included. The
owner is found in the table's fence row (``eventlog_fences.owner``): every instance takes a
table's epoch under its *advertised address* (``ELECTRIC_TABLE_ADVERTISED_ADDRESS``,
default ``<grpc host>:<bound port>``), so the row always names the latest owner.

Why forwarding rather than telling the client where to go: every client (bots, the text
client, a browser behind a gateway) keeps talking to one address; nothing in the public API
changes. A forwarded call carries ``x-electric-table-forwarded``: an instance that receives
a forwarded call for a table it does not own (the fence row is behind a move) answers
UNAVAILABLE instead of forwarding again, so a call crosses at most two instances and never
loops. UNAVAILABLE is what clients already retry.

Failure behaviour (the table in docs/scaling.md): the owner is dead or moving → UNAVAILABLE
("retry"), the client retries with the same ``request_id`` (commands are idempotent per
request id); a forwarded WatchTable ends with UNAVAILABLE when the owner's stream ends that
way (owner killed, or it disowned the table) and the client reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Protocol

import grpc
from electric_platform import ServiceError, Unavailable
from google.protobuf import any_pb2, symbol_database
from google.protobuf.message import Message
from google.rpc import status_pb2

#: Advertised gRPC address of this instance (what other instances forward to).
ADVERTISED_ENV = "ELECTRIC_TABLE_ADVERTISED_ADDRESS"
#: Metadata key set on a forwarded call (value: the forwarding instance's address).
FORWARDED_KEY = "x-electric-table-forwarded"
#: Metadata the transport sets itself; everything else (token, ids) is passed on.
_TRANSPORT_KEYS = ("user-agent", "content-type", "te", "authority")


def advertised_address(
    grpc_host: str, bound_port: Callable[[], int], environ: Mapping[str, str] | None = None
) -> Callable[[], str]:
    """``ELECTRIC_TABLE_ADVERTISED_ADDRESS``, or ``<grpc_host>:<bound port>`` (the port is
    known once the server is bound, hence a callable; a wildcard host becomes 127.0.0.1)."""
    env = os.environ if environ is None else environ
    fixed = env.get(ADVERTISED_ENV, "").strip()
    host = "127.0.0.1" if grpc_host in ("", "0.0.0.0", "::", "[::]") else grpc_host
    return (lambda: fixed) if fixed else (lambda: f"{host}:{bound_port()}")


def _detail_of(err: grpc.aio.AioRpcError) -> Message | None:
    """The first rich error detail of ``err`` as its own message type (None without one or
    when its type is unknown here)."""
    trailers: Any = err.trailing_metadata() or ()
    for key, value in trailers:
        if key != "grpc-status-details-bin" or not isinstance(value, bytes):
            continue
        details: list[any_pb2.Any] = list(status_pb2.Status.FromString(value).details)
        for packed in details:
            with contextlib.suppress(KeyError):
                cls = symbol_database.Default().GetSymbol(packed.TypeName())
                detail: Message = cls()
                if packed.Unpack(detail):
                    return detail
    return None


def relayed(err: grpc.aio.AioRpcError, owner: str, table_id: str) -> ServiceError:
    """The owner's answer ``err`` as this instance's answer (same code, message, detail);
    an unreachable owner is UNAVAILABLE saying so."""
    if err.code() is grpc.StatusCode.UNAVAILABLE:
        return Unavailable(
            f"table {table_id}: its owner {owner} is unavailable (the table may be moving "
            f"to another instance); retry: {err.details()}"
        )
    return ServiceError(err.details() or err.code().name, code=err.code(), detail=_detail_of(err))


class Directory(Protocol):
    """What a game tells the router about one of its tables (its plug-in: the tournament's
    `tournament.routing.TournamentDirectory`, UTH's `casino.uth.routing.UthDirectory`)."""

    def serves(self, table_id: str) -> bool:
        """This instance serves ``table_id`` now (its partition is assigned here and the
        table is not waiting to be resumed after a rebalance; or it is no table of the
        game's: the local answer refuses it)."""
        ...

    def owner_row(self, table_id: str) -> tuple[str | None, bool]:
        """(the owner's address from the table's fence row or None, whether the table
        exists at all)."""
        ...

    def settled(self, table_id: str) -> bool:
        """``table_id`` exists and will never be driven again (finished, invalid): its
        stored view is served by whoever is asked."""
        ...


class Router:
    """Which instance serves a table call, and the forwarding of it there: one for every
    game, each giving its :class:`Directory`."""

    def __init__(
        self,
        directory: Directory,
        advertised: Callable[[], str],
        *,
        start_wait_s: float = 10.0,
    ) -> None:
        self.directory = directory
        self.advertised = advertised
        self.start_wait_s = start_wait_s
        self._channels: dict[str, grpc.aio.Channel] = {}
        #: table id -> (owner address, loop time until which it is trusted): a command
        #: stream of one table does not read the fence row at every call. A stale entry
        #: costs one UNAVAILABLE (the old owner refuses a forwarded call it cannot serve).
        self._owners: dict[str, tuple[str, float]] = {}
        self.owner_ttl_s = 1.0
        #: Calls forwarded from here (tests and metrics read it).
        self.forwarded = 0

    async def route(self, table_id: str, context: Any, *, wait: bool = False) -> str | None:
        """None: serve the call here (this instance owns the table's partition, or nobody
        knows the table: the local answer is NOT_FOUND). Else the owner's address.

        Raises UNAVAILABLE while the table moves (no owner yet, or the fence row still
        names this instance) and for a forwarded call that reached a non-owner. ``wait``:
        a table being started (read model written, not taken yet) is waited for up to
        ``start_wait_s`` (WatchTable right after the table filled)."""
        directory = self.directory
        if not table_id or directory.serves(table_id):
            return None
        if _forwarded(context):
            if await asyncio.to_thread(directory.settled, table_id):
                return None  # finished or unplayable: served from the store here
            raise Unavailable(f"table {table_id} is moving between instances; retry")
        loop = asyncio.get_running_loop()
        cached = self._owners.get(table_id)
        if cached is not None and cached[1] > loop.time():
            return cached[0]
        give_up = loop.time() + (self.start_wait_s if wait else 0.0)
        while True:
            owner, exists = await asyncio.to_thread(directory.owner_row, table_id)
            if owner is not None and owner != self.advertised():
                if len(self._owners) > 10_000:  # bounded: old entries are useless anyway
                    self._owners.clear()
                self._owners[table_id] = (owner, loop.time() + self.owner_ttl_s)
                return owner
            if directory.serves(table_id):  # assigned here meanwhile
                return None
            if loop.time() >= give_up:
                break
            await asyncio.sleep(0.1)
        if not exists or await asyncio.to_thread(directory.settled, table_id):
            # Unknown everywhere (the local lookup answers NOT_FOUND), or finished or
            # unplayable and its last owner's partition moved: nobody will take it again,
            # so the store's view is served here.
            return None
        raise Unavailable(f"table {table_id} is moving between instances; retry")

    def _channel(self, owner: str) -> grpc.aio.Channel:
        channel = self._channels.get(owner)
        if channel is None:
            channel = self._channels[owner] = grpc.aio.insecure_channel(owner)
        return channel

    def _metadata(self, context: Any) -> list[tuple[str, str | bytes]]:
        md: list[tuple[str, str | bytes]] = [
            (k, v)
            for k, v in context.invocation_metadata() or ()
            if not k.startswith((":", "grpc-")) and k not in _TRANSPORT_KEYS
        ]
        md.append((FORWARDED_KEY, self.advertised()))
        return md

    async def unary(
        self, owner: str, method: str, request: Message, context: Any, *, table_id: str
    ) -> bytes:
        """Call ``method`` (its full gRPC path) on ``owner`` with the caller's metadata;
        its answer, as the bytes the owner sent, is ours."""
        call = self._channel(owner).unary_unary(
            method, request_serializer=_serialize, response_deserializer=None
        )
        self.forwarded += 1
        try:
            result: bytes = await call(
                request, metadata=self._metadata(context), timeout=context.time_remaining()
            )
        except grpc.aio.AioRpcError as err:
            self._forget(table_id, err)
            raise relayed(err, owner, table_id) from err
        return result

    async def stream(
        self, owner: str, method: str, request: Message, context: Any, table_id: str
    ) -> AsyncIterator[bytes]:
        """The owner's server stream ``method`` (full gRPC path), relayed item by item as
        the bytes it sent (cancelled with ours); it ends as the owner's ends (UNAVAILABLE
        when the table moves)."""
        call = self._channel(owner).unary_stream(
            method, request_serializer=_serialize, response_deserializer=None
        )
        self.forwarded += 1
        stream = call(request, metadata=self._metadata(context))
        try:
            async for item in stream:
                yield item
        except grpc.aio.AioRpcError as err:
            self._forget(table_id, err)
            raise relayed(err, owner, table_id) from err
        finally:
            stream.cancel()

    def _forget(self, table_id: str, err: grpc.aio.AioRpcError) -> None:
        if err.code() is grpc.StatusCode.UNAVAILABLE:
            self._owners.pop(table_id, None)

    async def close(self) -> None:
        """Close the channels to the other instances."""
        channels, self._channels = list(self._channels.values()), {}
        for channel in channels:
            await channel.close(None)


def _forwarded(context: Any) -> bool:
    return any(k == FORWARDED_KEY for k, _ in context.invocation_metadata() or ())


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()
