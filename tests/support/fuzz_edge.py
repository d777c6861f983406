"""The API fuzz harness through the browser edge: a :class:`~tests.support.fuzz_api.Transport`
that makes every call the way a browser does, with connect-python through ``web/edge``
(Connect or gRPC-Web, drawn per call), so the same generated requests, credentials and
checks (:class:`~tests.support.fuzz_api.FuzzRunner`) cover the edge.

Statuses come back as gRPC codes (Connect's ``canceled`` is gRPC's CANCELLED); an answer's
size is the response message's bytes, or the error's message plus its details.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from typing import Any

import grpc
from connectrpc.errors import ConnectError
from connectrpc.protocol import ProtocolType
from google.protobuf.message import Message

from tests.support.fuzz_api import STREAM_WINDOW, Credential, Outcome
from tests.support.fuzz_values import Rpc
from tests.support.web_edge import Edge, method_info

#: The edge's per-caller limits are tested on their own (tests/component/web); here they
#: would only turn fuzzed calls into RESOURCE_EXHAUSTED.
UNLIMITED = ("-rate", "1000000", "-burst", "1000000", "-max-streams", "1000")


def grpc_code(err: ConnectError) -> grpc.StatusCode:
    name = err.code.name
    return grpc.StatusCode["CANCELLED" if name == "CANCELED" else name]


def _error_size(err: ConnectError) -> int:
    return len(err.message.encode()) + sum(len(d.type_url) + len(d.value) for d in err.details)


class EdgeTransport:
    """Calls through a running edge (:func:`tests.support.web_edge.browser_edge`)."""

    def __init__(self, edge: Edge, seed: int) -> None:
        self.edge = edge
        self._rng = random.Random(seed)  # its own: the requests stay those of the seed
        self.by_protocol: dict[str, int] = {}

    async def call(self, rpc: Rpc, request: Message, cred: Credential) -> Outcome:
        protocol = self._rng.choice((ProtocolType.CONNECT, ProtocolType.GRPC_WEB))
        self.by_protocol[protocol.name] = self.by_protocol.get(protocol.name, 0) + 1
        client = self.edge.client(protocol=protocol)
        headers = dict(cred.metadata)
        if not rpc.streaming:
            try:
                out = await client.execute_unary(
                    request=request, method=method_info(rpc), headers=headers, timeout_ms=10_000
                )
            except ConnectError as err:
                return Outcome(grpc_code(err), _error_size(err), err.message)
            return Outcome(grpc.StatusCode.OK, out.ByteSize(), "")
        stream: AsyncIterator[Any] = client.execute_server_stream(
            request=request, method=method_info(rpc), headers=headers, timeout_ms=10_000
        )
        largest = 0
        try:
            for _ in range(3):
                # Not wait_for: connect-python turns the cancelled read into its own
                # CANCELED error, which would be counted as the edge's answer.
                read = asyncio.ensure_future(anext(stream))
                done, _ = await asyncio.wait({read}, timeout=STREAM_WINDOW)
                if not done:
                    read.cancel()
                    with contextlib.suppress(ConnectError, asyncio.CancelledError):
                        await read
                    return Outcome(grpc.StatusCode.OK, largest, "stream open")
                largest = max(largest, read.result().ByteSize())
            return Outcome(grpc.StatusCode.OK, largest, "")
        except StopAsyncIteration:
            return Outcome(grpc.StatusCode.OK, largest, "")
        except ConnectError as err:
            return Outcome(grpc_code(err), max(largest, _error_size(err)), err.message)
        finally:
            await stream.aclose()  # type: ignore[attr-defined]
