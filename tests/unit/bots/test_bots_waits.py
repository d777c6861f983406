"""electric_bots.waits: the longest call a bot waited for, retries included."""

from __future__ import annotations

import asyncio

import pytest
from electric_bots.waits import LongestWait


def test_keeps_the_longest_with_its_call_and_start() -> None:
    w = LongestWait()
    w.observe("Act", "p1", 1_765_000_000.0, 3.456)
    w.observe("Register", "p2", 1_765_000_100.0, 1.0)
    assert (w.seconds, w.call, w.player, w.began) == (
        3.46,
        "Act",
        "p1",
        "2025-12-06T05:46:40+00:00",
    )


def test_timed_counts_a_call_that_failed_for_good() -> None:
    w = LongestWait()

    async def fails() -> None:
        await asyncio.sleep(0.05)
        raise RuntimeError("UNAVAILABLE after every attempt")

    with pytest.raises(RuntimeError):
        asyncio.run(w.timed("Decide", "p3", fails()))
    assert w.call == "Decide" and w.seconds >= 0.05


def test_timed_returns_the_answer() -> None:
    w = LongestWait()

    async def answers() -> int:
        return 7

    assert asyncio.run(w.timed("GetRound", "p4", answers())) == 7
    assert w.call == "GetRound"
