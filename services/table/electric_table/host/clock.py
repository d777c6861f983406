"""The service's clock: the domain sees integer epoch milliseconds only.

`Clock` gives epoch milliseconds advanced by the monotonic clock (so a wall-clock jump does
not move the game). Persisted deadlines are epoch milliseconds, so after a restart a timer
that expired while the service was down fires at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class Clock:
    """Epoch milliseconds advanced by the monotonic clock."""

    def __init__(self, now_ms: Callable[[], int] | None = None) -> None:
        self._epoch = time.time_ns() // 1_000_000
        self._mono = time.monotonic_ns()
        self._override = now_ms

    def now_ms(self) -> int:
        if self._override is not None:
            return self._override()
        return self._epoch + (time.monotonic_ns() - self._mono) // 1_000_000
