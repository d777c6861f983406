"""Security 1 against the real services: WatchMyTables and WatchTable opened with a 2-second
token end with UNAUTHENTICATED when it expires (the probe's stream kept sending private views
25 s after its 6-second token expired)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import grpc
import pytest
from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric.table.v1 import table_pb2, table_pb2_grpc

from tests.support import auth
from tests.support.platform_kit import embedded_platform

pytestmark = pytest.mark.timeout(120)


async def _until_end(stream: Any) -> tuple[int, grpc.StatusCode, str, float]:
    started = time.monotonic()
    received = 0
    try:
        async for _ in stream:
            received += 1
    except grpc.aio.AioRpcError as err:
        return received, err.code(), err.details() or "", time.monotonic() - started
    return received, grpc.StatusCode.OK, "", time.monotonic() - started


async def test_streams_of_the_services_end_when_their_token_expires(tmp_path: Path) -> None:
    async with embedded_platform(tmp_path) as platform:
        reg = registration_pb2_grpc.RegistrationServiceStub(platform.channel("registration"))
        table = table_pb2_grpc.TableServiceStub(platform.channel("table"))
        short = auth.bearer("alice", "player", ttl=2)
        my_tables = reg.WatchMyTables(
            registration_pb2.WatchMyTablesRequest(), metadata=short, timeout=30
        )
        # A table that is not there (yet): the stream waits for it, and must still end.
        waiting = table.WatchTable(
            table_pb2.WatchTableRequest(table_id="00000000-0000-4000-8000-000000000000"),
            metadata=short,
            timeout=30,
        )
        (
            (got_tables, code_tables, why, took_tables),
            (_, code_table, _, took_table),
        ) = await asyncio.gather(_until_end(my_tables), _until_end(waiting))
        assert got_tables >= 1  # the snapshot arrived while the token was valid
        assert code_tables is grpc.StatusCode.UNAUTHENTICATED and "expired" in why
        assert code_table is grpc.StatusCode.UNAUTHENTICATED
        assert took_tables < 6 and took_table < 6, (took_tables, took_table)
        # The same stream with a fresh token is served again (the client's way back).
        again = reg.WatchMyTables(
            registration_pb2.WatchMyTablesRequest(), metadata=auth.bearer("alice"), timeout=5
        )
        first = await asyncio.wait_for(again.read(), 5)
        assert isinstance(first, registration_pb2.WatchMyTablesResponse)
        again.cancel()
