"""The longest a bot waited for one call to be answered, retries included.

This is the pause a player sees when the platform answers late or not at all (a command
retried through a failover, a table that moved); the chaos run reports it beside the gaps
it reads from the table topic (``tests/chaos/pauses.py``)."""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

T = TypeVar("T")


@dataclass
class LongestWait:
    """The longest call seen: its seconds, name, player and when it was first sent (UTC)."""

    seconds: float = 0.0
    call: str = ""
    player: str = ""
    began: str = ""

    def observe(self, call: str, player: str, began: float, seconds: float) -> None:
        """A call first sent at ``began`` (seconds since the epoch) ended after ``seconds``."""
        if seconds > self.seconds:
            self.seconds = round(seconds, 2)
            self.call, self.player = call, player
            self.began = datetime.fromtimestamp(began, UTC).isoformat(timespec="seconds")

    async def timed(self, call: str, player: str, answer: Awaitable[T]) -> T:
        """Await ``answer`` (a call with its retries) and observe how long it took, whether
        it was answered or failed for good; a cancelled or stopped wait is observed too,
        since the player waited that long."""
        began, t = time.time(), time.monotonic()
        try:
            return await answer
        finally:
            self.observe(call, player, began, time.monotonic() - t)
