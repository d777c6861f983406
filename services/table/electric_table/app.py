"""Composition root of the table service: config → store → event path → consumers → API."""

from __future__ import annotations

from electric.table.v1 import table_pb2, table_pb2_grpc
from electric_platform.eventpath import open_event_path
from electric_platform.server import ServiceHost

from electric_table.api import TableApi
from electric_table.consumers import SOURCE_TOPIC, run_tournament_consumer, tournament_worker
from electric_table.store.tables import VERSIONS_DIR, metadata

SERVICE = "table"


async def setup(host: ServiceHost) -> None:
    """Wire the table service into ``host``."""
    path = await open_event_path(
        host, versions_dir=VERSIONS_DIR, target_metadata=metadata, consumes=[SOURCE_TOPIC]
    )
    worker = tournament_worker(path.engine, path.bus, path.store)
    host.add_background(
        "tournament-consumer",
        lambda: run_tournament_consumer(worker, host.stopping),
        restart=True,
    )
    host.add_service(
        table_pb2.DESCRIPTOR.services_by_name["TableService"],
        table_pb2_grpc.add_TableServiceServicer_to_server,
        TableApi(path.engine, host.stopping),
    )
