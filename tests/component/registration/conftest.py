"""Registration test fixtures: the test stack without payout (reg_harness.start_stack)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.reg_harness import Stack, start_stack


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    s = await start_stack(tmp_path, payout=False)
    try:
        yield s
    finally:
        await s.close()
