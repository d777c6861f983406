"""Registration test fixtures: the test stack without payout (reg_harness.running_stack)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.reg_harness import Stack, running_stack


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    async with running_stack(tmp_path, payout=False) as s:
        yield s
