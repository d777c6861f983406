"""The table service gRPC tests of ``tests/unit/table`` again, on real PostgreSQL (a fresh
database per test) instead of SQLite: same ServiceHost on 127.0.0.1:0, same in-process bus."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "table"))

from electric.table.v1 import table_pb2_grpc
from electric_platform import ServiceHost, load_config
from electric_table.app import MANAGERS, make_setup
from table_kit import SECRET
from test_table_service_grpc import (
    Env,
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
    config = load_config(
        "table",
        {
            "DATABASE_URL": fresh_pg_url,
            "ELECTRIC_VAR_DIR": str(tmp_path),
            "ELECTRIC_AUTH_SECRET": SECRET,
            "ELECTRIC_GRPC_PORT": "0",
            "ELECTRIC_METRICS_PORT": "-1",
            "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "1",
            "ELECTRIC_LOG_LEVEL": "WARNING",
        },
    )
    host = ServiceHost(config, make_setup(pause_ms=50))
    await host.start()
    target = f"127.0.0.1:{host.grpc_port}"
    channel = grpc.aio.insecure_channel(target)
    try:
        yield Env(host, MANAGERS[id(host)], table_pb2_grpc.TableServiceStub(channel), target)
    finally:
        await channel.close()
        await host.stop()
