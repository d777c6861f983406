"""Composition root of the payout service: config → store → event path → consumers, credit
worker and wallet client → API."""

from __future__ import annotations

from functools import partial

from electric.payout.v1 import casino_pb2, casino_pb2_grpc, payout_pb2, payout_pb2_grpc
from electric_clients.wallet import WalletClient
from electric_domain.tournament import TournamentConfig, default_config
from electric_platform.auth import service_tokens
from electric_platform.eventmetrics import watch_consumers
from electric_platform.eventpath import open_event_path
from electric_platform.server import ServiceHost

from electric_payout.api import PayoutApi
from electric_payout.casino.api import CasinoPayoutApi
from electric_payout.casino.consumers import CasinoConsumers
from electric_payout.casino.crediter import CasinoCrediter
from electric_payout.casino.metrics import CasinoPayoutMetrics
from electric_payout.casino.wins import CasinoWins
from electric_payout.consumers import REGISTRATION_TOPIC, TABLE_TOPIC, PayoutConsumers
from electric_payout.handlers import Crediter, Payouts
from electric_payout.metrics import PayoutMetrics
from electric_payout.store.tables import VERSIONS_DIR, metadata

SERVICE = "payout"


async def setup(host: ServiceHost, *, config: TournamentConfig | None = None) -> None:
    """Wire the payout service into ``host`` (``config``: the tournament configuration whose
    pay table re-checks the prizes; default the packaged electric-v1)."""
    cfg = config or default_config()
    path = await open_event_path(
        host,
        versions_dir=VERSIONS_DIR,
        target_metadata=metadata,
        consumes=[REGISTRATION_TOPIC, TABLE_TOPIC],
    )
    wallet = WalletClient.connect(host.config.target("wallet"), service_tokens(host.config))
    host.on_shutdown(wallet.close)
    payouts = Payouts(path.engine, path.store, cfg)
    metrics = PayoutMetrics(host.metrics.registry)
    metrics.watch(path.engine)
    crediter = Crediter(payouts, wallet, metrics=metrics)
    consumers = PayoutConsumers(payouts, path.bus, on_award=crediter.wake.set, metrics=metrics)
    casino_metrics = CasinoPayoutMetrics(host.metrics.registry)
    casino_metrics.watch(path.engine)
    casino = CasinoCrediter(CasinoWins(path.engine, path.store), wallet, metrics=casino_metrics)
    CasinoConsumers(casino.wins, on_owed=casino.wake.set).register(consumers.table)
    watch_consumers(host, *consumers.workers)
    for worker in consumers.workers:
        host.add_background(worker.consumer.name, partial(worker.run, host.stopping), restart=True)
    host.add_background("prize-crediter", lambda: crediter.run(host.stopping), restart=True)
    host.add_background("casino-win-crediter", lambda: casino.run(host.stopping), restart=True)
    host.add_service(
        casino_pb2.DESCRIPTOR.services_by_name["CasinoPayoutService"],
        casino_pb2_grpc.add_CasinoPayoutServiceServicer_to_server,
        CasinoPayoutApi(path.engine),
    )
    host.add_service(
        payout_pb2.DESCRIPTOR.services_by_name["PayoutService"],
        payout_pb2_grpc.add_PayoutServiceServicer_to_server,
        PayoutApi(path.engine),
    )
