"""Helpers for tests of the tournament bots (``electric_bots.player`` / ``table_play``): a
bot with no runner around it, and a TableService stub that records what a bot's watches
asked for and read."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import grpc
from electric.registration.v1 import registration_pb2
from electric.table.v1 import table_pb2
from electric_bots.player import BotPlayer, BotSettings, BotStats, Channels
from electric_bots.runner import make_strategy
from electric_platform import Role, TokenSource

from tests.support.auth import ISSUER_KEY


def make_bot(
    player_id: str,
    channel: grpc.aio.Channel,
    *,
    stats: BotStats | None = None,
    strategy: str = "random",
    seed: int = 1,
    think_scale: float = 0.0,
) -> BotPlayer:
    """A bot that only plays the tables it is given (``play_table``): every service behind
    ``channel``, no registering, no deposits."""
    return BotPlayer(
        BotSettings(player_id=player_id, tier_id="test-tier", think_scale=think_scale),
        make_strategy(strategy),
        random.Random(seed),
        Channels(registration=channel, table=channel, wallet=channel),
        key=ISSUER_KEY,
        operator=TokenSource(ISSUER_KEY, "test-cashier", Role.OPERATOR),
        stats=stats if stats is not None else BotStats(),
        may_register=lambda: False,
        draining=asyncio.Event(),
        stop=asyncio.Event(),
    )


def my_table(table_id: str, status: int) -> registration_pb2.MyTable:
    """A My Tables row as WatchMyTables would show it (status only)."""
    return registration_pb2.MyTable(table_id=table_id, status=status)  # type: ignore[arg-type]


def set_my_table(bot: BotPlayer, table_id: str, status: int) -> None:
    """What a WatchMyTables snapshot does to the bot: the table's status, and a wake-up."""
    bot._my_tables[table_id] = my_table(table_id, status)
    bot._changed.set()


class RecordedCall:
    """A WatchTable call whose messages are recorded as they are read."""

    def __init__(self, call: Any, into: RecordingTable, watch: int) -> None:
        self._call = call
        self._into = into
        self._watch = watch

    async def read(self) -> Any:
        message = await self._call.read()
        if isinstance(message, table_pb2.WatchTableResponse):
            self._into.read.append((self._watch, message))
        return message

    def cancel(self) -> bool:
        return bool(self._call.cancel())


class RecordingTable:
    """A TableService stub in front of ``stub`` that records every WatchTable request and
    every message read from it (``read``: (index of the watch, message))."""

    def __init__(self, stub: Any) -> None:
        self._stub = stub
        self.requests: list[table_pb2.WatchTableRequest] = []
        self.read: list[tuple[int, table_pb2.WatchTableResponse]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stub, name)

    def WatchTable(self, request: table_pb2.WatchTableRequest, **kwargs: Any) -> RecordedCall:
        self.requests.append(request)
        return RecordedCall(self._stub.WatchTable(request, **kwargs), self, len(self.requests) - 1)

    def messages(self, watch: int) -> list[table_pb2.WatchTableResponse]:
        return [m for n, m in self.read if n == watch]
