"""Game numbers: the round's start time in GMT (hh:mm:ss) made unique.

The sheet (seed 004): "the number reflects when the round started, in GMT, by
hour:minute:second". The number is ``YYYYMMDD-hhmmss-TT-N``: the GMT date and time of the
round's start (``start_ms``, Unix epoch milliseconds, given as input — no clock is read), the
table code ``TT``, and ``N`` = 1, 2, … counting rounds of that table started in the same
second, so two numbers never collide. :func:`next_game_number` computes it from the table's
previous number.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

_PATTERN = re.compile(r"^(\d{8})-(\d{6})-([A-Za-z0-9]+)-(\d+)$")


def _stamp(start_ms: int) -> str:
    if start_ms < 0:
        raise ValueError("start time must be after 1970")
    # pure arithmetic conversion of the given instant; no clock is read
    t = datetime.fromtimestamp(start_ms // 1000, tz=UTC)
    return t.strftime("%Y%m%d-%H%M%S")


def game_number(start_ms: int, table: str, seq: int = 1) -> str:
    """The number of the ``seq``-th round of ``table`` started in the second of ``start_ms``."""
    if not table.isalnum():
        raise ValueError("table code must be letters and digits")
    if seq < 1:
        raise ValueError("seq starts at 1")
    return f"{_stamp(start_ms)}-{table}-{seq}"


def next_game_number(start_ms: int, table: str, previous: str | None) -> str:
    """The next unique number for ``table``, given its previous round's number (or None)."""
    seq = 1
    if previous is not None:
        m = _PATTERN.match(previous)
        if m is None:
            raise ValueError(f"not a game number: {previous!r}")
        if f"{m.group(1)}-{m.group(2)}" == _stamp(start_ms) and m.group(3) == table:
            seq = int(m.group(4)) + 1
    return game_number(start_ms, table, seq)


def start_time_text(number: str) -> str:
    """``"hh:mm:ss"`` (GMT) of a game number, as the client shows it."""
    m = _PATTERN.match(number)
    if m is None:
        raise ValueError(f"not a game number: {number!r}")
    t = m.group(2)
    return f"{t[0:2]}:{t[2:4]}:{t[4:6]}"
