"""Composition root of the table service: config → store → event path → tables → API."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping

from electric.table.v1 import table_pb2, table_pb2_grpc
from electric_platform.eventmetrics import watch_consumers
from electric_platform.eventpath import open_event_path
from electric_platform.server import ServiceHost

from electric_table.api import TableApi
from electric_table.consumers import SOURCE_TOPIC, run_tournament_consumer, tournament_worker
from electric_table.metrics import TableMetrics
from electric_table.runtime import DEFAULT_HAND_PAUSE_MS, HAND_PAUSE_ENV, TableManager
from electric_table.store.tables import VERSIONS_DIR, metadata

SERVICE = "table"
#: Kafka consumer group of the registration subscription (default ``table.tournaments``).
#: Only for isolating a deployment (or a test) on a shared broker; every instance of one
#: deployment must use the same group.
CONSUMER_GROUP_ENV = "ELECTRIC_TABLE_CONSUMER_GROUP"

#: The live manager of each started host (tests and the embedded runner look tables up here).
MANAGERS: dict[int, TableManager] = {}


def hand_pause_ms(environ: Mapping[str, str] | None = None) -> int:
    """``ELECTRIC_TABLE_HAND_PAUSE_MS``: pause between hands (default 500 ms)."""
    env = os.environ if environ is None else environ
    text = env.get(HAND_PAUSE_ENV, "").strip()
    if not text:
        return DEFAULT_HAND_PAUSE_MS
    value = int(text)
    if value < 0:
        raise ValueError(f"{HAND_PAUSE_ENV} must be >= 0, got {value}")
    return value


def make_setup(*, pause_ms: int | None = None) -> Callable[[ServiceHost], Awaitable[None]]:
    """A setup function with an explicit hand pause (default: from the environment)."""

    async def setup_with(host: ServiceHost) -> None:
        path = await open_event_path(
            host, versions_dir=VERSIONS_DIR, target_metadata=metadata, consumes=[SOURCE_TOPIC]
        )
        manager = TableManager(
            path.engine,
            path.store,
            stopping=host.stopping,
            hand_pause_ms=hand_pause_ms() if pause_ms is None else pause_ms,
            metrics=TableMetrics(host.metrics.registry),
        )
        MANAGERS[id(host)] = manager
        resumed = await manager.recover()
        host.log.info("table.recovered", tables=resumed)

        async def close() -> None:
            await manager.close()
            MANAGERS.pop(id(host), None)

        host.on_shutdown(close)
        worker = tournament_worker(
            path.engine, path.bus, path.store, group_id=os.environ.get(CONSUMER_GROUP_ENV, "")
        )
        watch_consumers(host, worker)
        host.add_background(
            "tournament-consumer",
            lambda: run_tournament_consumer(worker, host.stopping, manager),
            restart=True,
        )
        host.add_service(
            table_pb2.DESCRIPTOR.services_by_name["TableService"],
            table_pb2_grpc.add_TableServiceServicer_to_server,
            TableApi(path.engine, host.stopping, manager),
        )

    return setup_with


async def setup(host: ServiceHost) -> None:
    """Wire the table service into ``host``."""
    await make_setup()(host)
