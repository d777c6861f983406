"""The table service gRPC tests of ``tests/component/table`` again, on real PostgreSQL (a fresh
database per test) instead of SQLite: same ServiceHost on 127.0.0.1:0, same in-process bus."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.component.table.test_table_service_grpc import (
    Env,
    running_env,
    test_duplicate_request_id_is_applied_once,
    test_full_tournament_over_grpc_with_private_views,
    test_permissions_not_found_stale_and_bad_amounts,
    test_timeouts_auto_check_or_fold_and_sit_out,
)

pytestmark = pytest.mark.integration

__all__ = [
    "test_duplicate_request_id_is_applied_once",
    "test_full_tournament_over_grpc_with_private_views",
    "test_permissions_not_found_stale_and_bad_amounts",
    "test_timeouts_auto_check_or_fold_and_sit_out",
]


@pytest.fixture
async def env(fresh_pg_url: str, tmp_path: Path) -> AsyncIterator[Env]:
    async with running_env(tmp_path, DATABASE_URL=fresh_pg_url) as e:
        yield e
