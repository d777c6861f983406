"""The ``env`` fixture of the WalletService component tests: a wallet on a fresh SQLite
file behind a real gRPC server (tests.support.wallet_kit.serve_wallet)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.wallet_kit import Env, serve_wallet


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[Env]:
    async with serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as served:
        yield served
