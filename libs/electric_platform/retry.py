"""Retrying with backoff, on tenacity (the one retry library; docs/architecture.md,
"Libraries").

Two shapes cover every loop of the platform and the services:

- :func:`retry_async` -- call an async function until it returns: failures that
  ``retry_on`` accepts are retried after an exponential backoff (``initial`` doubling to
  ``maximum``), others are raised at once; optionally at most ``attempts`` attempts, and
  stop-aware: when ``stop`` is set (before an attempt or while waiting) :class:`Stopped` is
  raised instead of trying again.
- :func:`backoff_delay` -- the same backoff as a number, for loops that wait on their own
  events (a worker woken early, a relay polling): seconds to wait after ``failures``
  consecutive failures.

Idempotent gRPC calls between services are retried by the channel instead (service-config
``retryPolicy``, ``electric_clients.channel``); these helpers are for the loops above that.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar, cast

import tenacity

T = TypeVar("T")

#: ``before_sleep(error, attempt, delay_seconds)``: called before each wait (log, count).
BeforeSleep = Callable[[BaseException, int, float], None]


class Stopped(Exception):
    """The stop event was set before the call succeeded."""


def exponential(initial: float, maximum: float) -> tenacity.wait.wait_base:
    """Wait ``initial`` after the first failure, doubling with each one, at most ``maximum``."""
    return tenacity.wait_exponential(multiplier=initial, max=maximum)


def backoff_delay(failures: int, *, initial: float, maximum: float) -> float:
    """Seconds to wait after ``failures`` consecutive failures: ``initial`` when there were
    none, then doubling (``2 * initial`` after one) up to ``maximum``."""
    if failures <= 0:
        return initial
    # tenacity's strategy reads only the attempt number of the state it is given.
    state = tenacity.RetryCallState(cast(tenacity.BaseRetrying, None), None, (), {})
    state.attempt_number = min(failures, 64) + 1
    return float(exponential(initial, maximum)(state))


async def _sleep_unless(stop: asyncio.Event | None, seconds: float) -> None:
    if stop is None:
        await asyncio.sleep(seconds)
        return
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    if stop.is_set():
        raise Stopped


async def retry_async(
    fn: Callable[[], Awaitable[T]],
    *,
    retry_on: Callable[[BaseException], bool],
    initial: float,
    maximum: float,
    attempts: int | None = None,
    stop: asyncio.Event | None = None,
    before_sleep: BeforeSleep | None = None,
) -> T:
    """``await fn()`` until it returns (module doc). The last error is raised unchanged when
    it is not retryable or the attempts are used up; :class:`Stopped` when ``stop`` is set."""

    def _before_sleep(state: tenacity.RetryCallState) -> None:
        if before_sleep is not None and state.outcome is not None and state.next_action:
            error = state.outcome.exception()
            if error is not None:
                before_sleep(error, state.attempt_number, state.next_action.sleep)

    give_up: tenacity.stop.stop_base = (
        tenacity.stop_after_attempt(attempts) if attempts is not None else tenacity.stop_never
    )
    retrying = tenacity.AsyncRetrying(
        sleep=lambda seconds: _sleep_unless(stop, seconds),
        stop=give_up,
        wait=exponential(initial, maximum),
        # Never retry a cancellation (BaseException), whatever ``retry_on`` says.
        retry=tenacity.retry_if_exception(lambda e: isinstance(e, Exception) and retry_on(e)),
        before_sleep=_before_sleep,
        reraise=True,
    )
    async for attempt in retrying:
        if stop is not None and stop.is_set():
            raise Stopped
        with attempt:
            return await fn()
    raise AssertionError("unreachable: tenacity returns or raises")  # pragma: no cover
