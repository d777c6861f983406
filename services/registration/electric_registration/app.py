"""Composition root of the registration service: config → store → event path → servicer.

``setup`` is what ``python -m electric_registration`` and the embedded runner call.
"""

from __future__ import annotations

import asyncio

from electric.registration.v1 import registration_pb2, registration_pb2_grpc
from electric_platform.eventpath import open_event_path
from electric_platform.server import ServiceHost

from electric_registration.api import RegistrationApi
from electric_registration.handlers import ensure_open_tables
from electric_registration.store.tables import VERSIONS_DIR, metadata

SERVICE = "registration"


async def setup(host: ServiceHost) -> None:
    """Wire the registration service into ``host``."""
    path = await open_event_path(host, versions_dir=VERSIONS_DIR, target_metadata=metadata)
    opened = await asyncio.to_thread(
        ensure_open_tables, path.engine, path.store, correlation_id=path.instance_id
    )
    host.log.info("registration.tables_opened", count=len(opened))
    host.add_service(
        registration_pb2.DESCRIPTOR.services_by_name["RegistrationService"],
        registration_pb2_grpc.add_RegistrationServiceServicer_to_server,
        RegistrationApi(path.engine, host.stopping),
    )
