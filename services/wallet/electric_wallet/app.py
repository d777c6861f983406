"""Composition root of the wallet: config → event path (engine, migrations, event store,
bus, outbox relay) → handlers → servicer and metrics.

``setup`` is what ``python -m electric_wallet`` and the embedded runner call. The shared
event path (:func:`electric_platform.eventpath.open_event_path`) runs the event log's and
the wallet's migrations, relays the outbox to Kafka (``KAFKA_BOOTSTRAP_SERVERS`` set) or to
the process's in-process bus, restarts the relay if it fails, and at shutdown drains the
outbox, then stops the producer, then disposes of the engine. The wallet consumes no
events (:mod:`.consumers`).
"""

from __future__ import annotations

import asyncio

from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_platform.eventpath import open_event_path
from electric_platform.server import ServiceHost

from electric_wallet.api import WalletApi
from electric_wallet.handlers import Wallet
from electric_wallet.metrics import WalletCollector, WalletFlowMetrics
from electric_wallet.store.tables import VERSIONS_DIR, metadata

SERVICE = "wallet"


async def setup(host: ServiceHost) -> None:
    """Wire the wallet service into ``host``."""
    path = await open_event_path(host, versions_dir=VERSIONS_DIR, target_metadata=metadata)
    flows = WalletFlowMetrics(host.metrics.registry)
    wallet = Wallet(path.engine, path.store, observe=flows.observe)
    opened = await asyncio.to_thread(wallet.bootstrap)
    host.log.info("wallet.system_accounts_opened", count=opened)
    host.metrics.registry.register(WalletCollector(path.engine))
    host.add_service(
        wallet_pb2.DESCRIPTOR.services_by_name["WalletService"],
        wallet_pb2_grpc.add_WalletServiceServicer_to_server,
        WalletApi(wallet),
    )
