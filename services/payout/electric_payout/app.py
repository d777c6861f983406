"""Composition root of the payout service: config → store → event path → API."""

from __future__ import annotations

from electric.payout.v1 import payout_pb2, payout_pb2_grpc
from electric_platform.eventpath import open_event_path
from electric_platform.server import ServiceHost

from electric_payout.api import PayoutApi
from electric_payout.store.tables import VERSIONS_DIR, metadata

SERVICE = "payout"


async def setup(host: ServiceHost) -> None:
    """Wire the payout service into ``host``."""
    path = await open_event_path(host, versions_dir=VERSIONS_DIR, target_metadata=metadata)
    host.add_service(
        payout_pb2.DESCRIPTOR.services_by_name["PayoutService"],
        payout_pb2_grpc.add_PayoutServiceServicer_to_server,
        PayoutApi(path.engine),
    )
