"""Composition root of the registration service: config → store → event path → wallet
client → handlers, background work and consumer → servicer.

``setup`` is what ``python -m electric_registration`` and the embedded runner call.
"""

from __future__ import annotations

import asyncio

from electric.registration.v1 import (
    casino_pb2,
    casino_pb2_grpc,
    registration_pb2,
    registration_pb2_grpc,
)
from electric_clients.wallet import WalletClient
from electric_domain.casino.common.config import load_config
from electric_domain.tournament import TournamentConfig, default_config
from electric_platform.auth import service_tokens
from electric_platform.eventmetrics import event_metrics, watch_consumers
from electric_platform.eventpath import open_event_path
from electric_platform.server import ServiceHost

from electric_registration.api import RegistrationApi
from electric_registration.casino.activity import known_until, register_activity
from electric_registration.casino.api import CasinoLobbyApi
from electric_registration.casino.lobby import CasinoLobby, ExpirySweeper
from electric_registration.consumers import SOURCE_TOPIC, TableStatusConsumer
from electric_registration.handlers import ensure_open_tables, sync_tiers
from electric_registration.metrics import RegistrationMetrics
from electric_registration.notify import Notifier
from electric_registration.peer_wakeups import peer_wakeups
from electric_registration.registrar import Registrar
from electric_registration.store.tables import VERSIONS_DIR, metadata
from electric_registration.wallet_work import WalletWork

SERVICE = "registration"


async def setup(host: ServiceHost, *, config: TournamentConfig | None = None) -> None:
    """Wire the registration service into ``host`` (``config``: the tournament
    configuration, default the packaged electric-v1)."""
    cfg = config or default_config()
    path = await open_event_path(
        host, versions_dir=VERSIONS_DIR, target_metadata=metadata, consumes=[SOURCE_TOPIC]
    )
    await asyncio.to_thread(sync_tiers, path.engine, cfg)
    opened = await asyncio.to_thread(
        ensure_open_tables, path.engine, path.store, cfg, correlation_id=path.instance_id
    )
    host.log.info("registration.tables_opened", count=len(opened))
    wallet = WalletClient.connect(host.config.target("wallet"), service_tokens(host.config))
    host.on_shutdown(wallet.close)
    notifier = Notifier()
    # On PostgreSQL every wake-up is also announced to the other instances (peer_wakeups).
    notify, wakeups = peer_wakeups(path.engine, notifier, path.instance_id)
    if wakeups is not None:
        wakeups.start()
        host.on_shutdown(wakeups.stop)
    work = WalletWork(path.engine, path.store, wallet, notify=notify, config=cfg)
    metrics = RegistrationMetrics(host.metrics.registry)
    metrics.watch(path.engine)
    metrics.configure(cfg)
    registrar = Registrar(
        path.engine, path.store, cfg, wallet, work, notify=notify, metrics=metrics
    )
    host.on_shutdown(registrar.drain)
    host.add_background("wallet-work", lambda: work.run(host.stopping), restart=True)
    consumer = TableStatusConsumer(path.engine, path.bus, notify)
    register_activity(consumer.worker)
    watch_consumers(host, consumer.worker)
    host.add_background(
        "table-status-consumer", lambda: consumer.worker.run(host.stopping), restart=True
    )
    casino = CasinoLobby(path.engine, path.store, await asyncio.to_thread(load_config))
    await asyncio.to_thread(casino.ensure_tables)
    # Idle time is judged against the table-topic consumer's progress, not the wall clock:
    # a session is never expired over activity still in its backlog (issue 28 item 5).
    collector = event_metrics(host)
    sweeper = ExpirySweeper(
        casino, known_until=known_until(consumer.worker, lambda: collector.lag(consumer.worker))
    )
    host.add_background("casino-session-sweeper", lambda: sweeper.run(host.stopping), restart=True)
    host.add_service(
        casino_pb2.DESCRIPTOR.services_by_name["CasinoLobbyService"],
        casino_pb2_grpc.add_CasinoLobbyServiceServicer_to_server,
        CasinoLobbyApi(casino),
    )
    host.add_service(
        registration_pb2.DESCRIPTOR.services_by_name["RegistrationService"],
        registration_pb2_grpc.add_RegistrationServiceServicer_to_server,
        RegistrationApi(
            path.engine,
            host.stopping,
            config=cfg,
            registrar=registrar,
            notifier=notifier,
            notify=notify,
        ),
    )
