"""A thread of a component's own for its blocking database calls (issue 16).

The outbox relay and each consumer worker run one database call at a time. In the loop's
shared default executor every such call queued behind the service's blocking RPC work, so
they managed one call per queue wait (docs/event-store.md, "Keeping up inside a busy
service"). One thread each is all they need, and it is never taken by anyone else.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


class OwnThread:
    """``asyncio.to_thread`` on one thread reserved for its owner (started at first use)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._executor: ThreadPoolExecutor | None = None

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` on the thread, in a copy of the caller's context (log
        fields, causal ids), as ``asyncio.to_thread`` does."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix=self.name)
            weakref.finalize(self, self._executor.shutdown, wait=False)
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)
