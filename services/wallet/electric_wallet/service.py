"""Composition root of the wallet: engine, migrations, event store, handlers, servicer,
outbox relay. Used by ``__main__`` and by the embedded runner."""

from __future__ import annotations

import asyncio

from electric.wallet.v1 import wallet_pb2, wallet_pb2_grpc
from electric_eventlog import EventBus, EventStore, OutboxRelay, create_engine
from electric_platform.eventpath import register_outbox_metrics
from electric_platform.server import ServiceHost
from sqlalchemy import Engine

from . import store
from .api import WalletApi
from .flows import MeteredWallet, WalletFlowMetrics
from .handlers import Wallet
from .metrics import WalletCollector

PRODUCER = "wallet"


def open_wallet(database_url: str, *, flows: WalletFlowMetrics | None = None) -> Wallet:
    """Engine + migrations + system accounts: a ready :class:`Wallet` (blocking). With
    ``flows``, posted transfers are counted there."""
    engine: Engine = create_engine(database_url)
    store.migrate(engine)
    wallet = MeteredWallet(engine, EventStore(engine, producer=PRODUCER))
    wallet.flows = flows
    wallet.bootstrap()
    return wallet


async def setup(host: ServiceHost, *, bus: EventBus | None = None) -> None:
    """Wire the wallet into ``host``. Events are relayed from the outbox to ``bus`` (given by
    the embedded runner) or, when Kafka is configured, to Kafka."""
    flows = WalletFlowMetrics(host.metrics.registry)
    wallet = await asyncio.to_thread(open_wallet, host.config.database_url, flows=flows)
    host.add_service(
        wallet_pb2.DESCRIPTOR.services_by_name["WalletService"],
        wallet_pb2_grpc.add_WalletServiceServicer_to_server,
        WalletApi(wallet),
    )
    host.metrics.registry.register(WalletCollector(wallet))
    if bus is None and host.config.uses_kafka:
        from electric_eventlog.kafka import KafkaBus, ensure_topics

        cfg = host.config
        await ensure_topics(
            cfg.kafka_bootstrap_servers, [wallet.events.topic], namespace=cfg.kafka_namespace
        )
        kafka = KafkaBus(
            cfg.kafka_bootstrap_servers, client_id="electric-wallet", namespace=cfg.kafka_namespace
        )
        await kafka.start()
        host.on_shutdown(kafka.stop)
        bus = kafka
    relay: OutboxRelay | None = None
    if bus is not None:
        relay = OutboxRelay(wallet.engine, bus, topic=wallet.events.topic)
        stopping = host.stopping
        running = relay
        host.add_background("wallet-outbox-relay", lambda: running.run(stopping))
    register_outbox_metrics(host, wallet.engine, wallet.events.topic, relay)
    host.on_shutdown(wallet.engine.dispose)
