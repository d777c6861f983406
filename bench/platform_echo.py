"""The bare-gRPC ceiling of ``python -m bench platform``: a ``grpc.aio`` echo server with no
application code, and the client loop the bots' Act measure is compared with.

The loop mirrors a bot at a table: it holds a server stream open (``Watch``, like
``WatchTable``), sends a unary command (``Act``, ~an ActRequest's size) and waits until the
server pushes a view (~a TableView's size) on its stream; the time from send to push is the
latency. ``N`` such loops run at once (``N`` tables in flight). Methods are registered as
generic handlers on raw bytes: no protobuf, no interceptors, no auth, no database.

``python -m bench.platform_echo PORT`` serves until SIGTERM (prints ``serving`` when ready).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import AsyncIterator

import grpc

SERVICE = "bench.Echo"
COMMAND_BYTES = 96
VIEW_BYTES = 700


def _identity(data: bytes) -> bytes:
    return data


class _Echo:
    def __init__(self) -> None:
        self.streams: dict[bytes, asyncio.Queue[bytes]] = {}

    async def act(self, request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        queue = self.streams.get(request[:8])
        if queue is not None:
            queue.put_nowait(request[:8] + b"v" * (VIEW_BYTES - 8))
        return b"ok"

    async def watch(
        self, request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]
    ) -> AsyncIterator[bytes]:
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.streams[request[:8]] = queue
        try:
            yield b"hello"
            while True:
                yield await queue.get()
        finally:
            self.streams.pop(request[:8], None)


async def serve(port: int) -> None:
    echo = _Echo()
    handler = grpc.method_handlers_generic_handler(
        SERVICE,
        {
            "Act": grpc.unary_unary_rpc_method_handler(
                echo.act, request_deserializer=_identity, response_serializer=_identity
            ),
            "Watch": grpc.unary_stream_rpc_method_handler(
                echo.watch, request_deserializer=_identity, response_serializer=_identity
            ),
        },
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("serving", flush=True)
    await stop.wait()
    await server.stop(1)


async def _loop(channel: grpc.aio.Channel, n: int, until: float, out: list[float]) -> None:
    tag = f"{n:08d}".encode()
    act = channel.unary_unary(
        f"/{SERVICE}/Act", request_serializer=_identity, response_deserializer=_identity
    )
    watch = channel.unary_stream(
        f"/{SERVICE}/Watch", request_serializer=_identity, response_deserializer=_identity
    )
    stream = watch(tag)
    await stream.read()  # the stream is open: views will be pushed on it
    command = tag + b"c" * (COMMAND_BYTES - 8)
    try:
        while time.perf_counter() < until:
            sent = time.perf_counter()
            await act(command, timeout=10)
            await stream.read()
            out.append((time.perf_counter() - sent) * 1000)
    finally:
        stream.cancel()


async def client_loops(target: str, loops: int, seconds: float) -> list[float]:
    """Run ``loops`` command/push loops for ``seconds``; latency samples in ms."""
    out: list[float] = []
    async with grpc.aio.insecure_channel(target) as channel:
        await channel.channel_ready()
        until = time.perf_counter() + seconds
        await asyncio.gather(*(_loop(channel, n, until, out) for n in range(loops)))
    return out


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1])))
