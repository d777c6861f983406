"""Waiting for a condition in async event-log tests, failing early if a task died."""

from __future__ import annotations

import asyncio
import threading


async def run_until(predicate: object, *tasks: asyncio.Task[None], timeout: float = 10.0) -> None:
    """Poll ``predicate()`` every 10 ms until it holds; raise a task's exception if one of
    ``tasks`` ended, or fail after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():  # type: ignore[operator]
        for task in tasks:
            if task.done():
                task.result()
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


def relay_loop_threads() -> list[threading.Thread]:
    """Threads of ``electric_eventlog.relay_thread`` still alive."""
    return [t for t in threading.enumerate() if t.name == "outbox-relay-loop"]
