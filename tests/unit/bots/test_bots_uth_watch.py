"""A UTH bot's table watch against a scripted CasinoTableService: a stream the platform ends
because its bearer token expired is reopened, not counted as an error (docs/security.md,
"Streams and token expiry"); any other refusal still is (issue 28, the casino bots of the
chaos runs counted every expiry as an error)."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest
from electric_bots.casino import CasinoChannels, CasinoStats
from electric_bots.casino_uth import UthBot
from electric_platform import Role, TokenSource

from tests.support.auth import ISSUER_KEY


def _error(code: grpc.StatusCode, details: str) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details)


class _EndingStream:
    """A server stream that ends at once with ``error``."""

    def __init__(self, error: grpc.aio.AioRpcError) -> None:
        self.error = error
        self.cancelled = False

    def __aiter__(self) -> _EndingStream:
        return self

    async def __anext__(self) -> Any:
        raise self.error

    def cancel(self) -> bool:
        self.cancelled = True
        return True


class _Table:
    def __init__(self, error: grpc.aio.AioRpcError) -> None:
        self.error = error
        self.opened: list[_EndingStream] = []

    def WatchCasinoTable(self, request: Any, metadata: Any = None) -> _EndingStream:
        stream = _EndingStream(self.error)
        self.opened.append(stream)
        return stream


async def _bot(table: _Table) -> UthBot:
    channel = grpc.aio.insecure_channel("127.0.0.1:9")  # never dialled: the stubs are replaced
    bot = UthBot(
        "p1",
        CasinoChannels(channel, channel, channel),
        key=ISSUER_KEY,
        operator=TokenSource(ISSUER_KEY, "test-cashier", Role.OPERATOR),
        stats=CasinoStats(),
        may_play=lambda: True,
        stop=asyncio.Event(),
    )
    bot.table = table  # type: ignore[assignment]
    return bot


async def test_a_watch_ended_by_its_token_expiring_is_reopened_without_an_error() -> None:
    expired = _error(grpc.StatusCode.UNAUTHENTICATED, "bearer token expired; the stream ends")
    table = _Table(expired)
    bot = await _bot(table)
    await bot._watch()
    await bot._watch()
    assert (bot.stats.errors, bot.stats.reopened) == (0, 2)
    assert len(table.opened) == 2 and all(s.cancelled for s in table.opened)


async def test_a_watch_refused_for_a_bad_token_is_still_an_error() -> None:
    table = _Table(_error(grpc.StatusCode.UNAUTHENTICATED, "bad signature"))
    bot = await _bot(table)
    with pytest.raises(grpc.aio.AioRpcError):
        await bot._watch()
    assert bot.stats.reopened == 0
