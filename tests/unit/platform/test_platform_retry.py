"""electric_platform.retry: tenacity-backed retries with exponential backoff, stop-aware."""

from __future__ import annotations

import asyncio
import time

import pytest
from electric_platform.retry import Stopped, backoff_delay, retry_async


class Flaky(Exception):
    pass


class Fatal(Exception):
    pass


def _failing(errors: list[BaseException], result: str = "ok") -> tuple[list[int], object]:
    calls: list[int] = []

    async def fn() -> str:
        calls.append(1)
        if errors:
            raise errors.pop(0)
        return result

    return calls, fn


def test_backoff_delay_doubles_to_the_cap() -> None:
    delays = [backoff_delay(n, initial=0.5, maximum=5.0) for n in range(7)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    assert backoff_delay(10_000, initial=0.1, maximum=30.0) == 30.0


async def test_retries_until_success_and_reports_each_wait() -> None:
    calls, fn = _failing([Flaky(), Flaky(), Flaky()])
    waits: list[tuple[str, int, float]] = []
    result = await retry_async(
        fn,  # type: ignore[arg-type]
        retry_on=lambda e: isinstance(e, Flaky),
        initial=0.001,
        maximum=0.003,
        before_sleep=lambda e, n, d: waits.append((type(e).__name__, n, d)),
    )
    assert result == "ok" and len(calls) == 4
    assert waits == [("Flaky", 1, 0.001), ("Flaky", 2, 0.002), ("Flaky", 3, 0.003)]


async def test_other_errors_and_exhausted_attempts_raise_the_error_itself() -> None:
    calls, fn = _failing([Fatal()])
    with pytest.raises(Fatal):
        await retry_async(fn, retry_on=lambda e: isinstance(e, Flaky), initial=0, maximum=0)  # type: ignore[arg-type]
    assert len(calls) == 1
    calls, fn = _failing([Flaky()] * 5)
    with pytest.raises(Flaky):
        await retry_async(
            fn,  # type: ignore[arg-type]
            retry_on=lambda e: isinstance(e, Flaky),
            initial=0,
            maximum=0,
            attempts=3,
        )
    assert len(calls) == 3


async def test_stop_interrupts_the_wait() -> None:
    stop = asyncio.Event()
    calls, fn = _failing([Flaky()] * 100)
    asyncio.get_running_loop().call_later(0.05, stop.set)
    t0 = time.perf_counter()
    with pytest.raises(Stopped):
        await retry_async(
            fn,  # type: ignore[arg-type]
            retry_on=lambda e: isinstance(e, Flaky),
            initial=10.0,
            maximum=10.0,
            stop=stop,
        )
    assert time.perf_counter() - t0 < 5 and len(calls) == 1
    with pytest.raises(Stopped):  # already stopped: not even one attempt
        await retry_async(fn, retry_on=lambda e: True, initial=0, maximum=0, stop=stop)  # type: ignore[arg-type]
    assert len(calls) == 1


async def test_cancellation_is_never_retried() -> None:
    calls, fn = _failing([asyncio.CancelledError()])
    with pytest.raises(asyncio.CancelledError):
        await retry_async(fn, retry_on=lambda e: True, initial=0, maximum=0)  # type: ignore[arg-type]
    assert len(calls) == 1
