"""Wires the casino rounds into the table's ServiceHost (called from ``electric_table.app``).

The wallet is reached at ``ELECTRIC_WALLET_TARGET`` with the table's own service token.
At start every open round is replayed and the auto-void rule applied (handlers module doc);
the owed wallet calls then run in the background (``casino-wallet``), and registration's
casino seats are consumed (``casino-seats``, :mod:`electric_table.casino.consumers`).
Live UTH tables (:mod:`uth.tables`) are loaded and driven (:mod:`uth.driver`); left intents
are swept every 30 s (``casino-intent-sweep``).

With ``partitions`` ownership (``ownership`` given) every instance serves THB, hosts the UTH
tables of its partitions (:mod:`uth.ownership`: fenced, rebuilt on assignment, dropped on
revocation) and forwards the calls of the others' UTH tables (:mod:`uth.routing`); start-up
recovery leaves intents to the sweep (a peer may be between a reservation and its append).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from electric.table.v1 import casino_pb2, casino_pb2_grpc
from electric_clients.wallet import WalletClient
from electric_domain.casino.common.config import load_config
from electric_platform.auth import service_tokens
from electric_platform.config import ConfigError
from electric_platform.eventmetrics import watch_consumers
from electric_platform.eventpath import EventPath
from electric_platform.server import ServiceHost

from electric_table.casino.api import CasinoApi
from electric_table.casino.consumers import seats_worker
from electric_table.casino.metrics import CasinoMetrics
from electric_table.casino.thb.handlers import CasinoHandlers
from electric_table.casino.uth.driver import UthDriver
from electric_table.casino.uth.ownership import UthOwnership
from electric_table.casino.uth.routing import UthDirectory, casino_routes
from electric_table.casino.uth.settings import pause_ms as uth_pause_ms
from electric_table.casino.uth.settings import uth_config
from electric_table.casino.uth.tables import UthTables
from electric_table.host.forwarding import OwnerForwarding
from electric_table.host.ownership import PartitionOwnership
from electric_table.host.routing import Router

#: Kafka group of the seats subscription: ``<ELECTRIC_TABLE_CONSUMER_GROUP>.casino`` when that
#: is set (isolating a deployment or a test), else the consumer name ``table.casino_seats``.
CONSUMER_GROUP_ENV = "ELECTRIC_TABLE_CONSUMER_GROUP"

#: The casino handlers of each started host (tests look them up here).
CASINO: dict[int, CasinoHandlers] = {}
#: The live UTH tables of each started host.
UTH: dict[int, UthTables] = {}


async def setup_casino(
    host: ServiceHost,
    path: EventPath,
    *,
    ownership: PartitionOwnership | None = None,
    advertised: Callable[[], str] | None = None,
    start_wait_s: float = 10.0,
) -> CasinoHandlers | None:
    """The casino service on ``host``; None (casino off, logged) without a signing key.
    ``ownership``: ``partitions`` mode (UTH tables follow its assignment; ``advertised`` is
    this instance's address, which other instances forward to)."""
    try:
        tokens = service_tokens(host.config)
    except ConfigError as exc:
        host.log.warning("table.casino_disabled", reason=str(exc))
        return None
    wallet = WalletClient.connect(host.config.target("wallet"), tokens)
    metrics = CasinoMetrics(host.metrics.registry)
    engine, store = path.engine, path.store
    handlers = CasinoHandlers(engine, store, wallet, uth_config(load_config()), metrics)
    metrics.watch(lambda: float(handlers.count_unfinished()))
    metrics.configure(handlers.config.version)
    recovered = await handlers.recover(resolve_intents=ownership is None)
    uth = UthTables(handlers, handlers.config, pause_ms=uth_pause_ms(), stopping=host.stopping)
    UthDriver(uth)
    if ownership is None:  # single: this instance hosts every UTH table
        recovered.update(await uth.recover())
    else:  # the assignment brings the tables (before the first one, none is hosted)
        owned = UthOwnership(uth, ownership)
        directory = UthDirectory(owned, uth, engine)
        router = Router(
            directory, advertised or (lambda: ownership.owner), start_wait_s=start_wait_s
        )
        host.on_shutdown(router.close)
        host.add_interceptor(OwnerForwarding(casino_routes(router, directory)))
    host.log.info("table.casino_recovered", **recovered)
    CASINO[id(host)] = handlers
    UTH[id(host)] = uth

    async def close() -> None:
        CASINO.pop(id(host), None)
        UTH.pop(id(host), None)
        await uth.close()
        await wallet.close()

    host.on_shutdown(close)
    group = os.environ.get(CONSUMER_GROUP_ENV, "")
    seats = seats_worker(engine, path.bus, group_id=f"{group}.casino" if group else "")
    watch_consumers(host, seats)
    host.add_background("casino-seats", lambda: seats.run(host.stopping), restart=True)
    host.add_background("casino-wallet", lambda: handlers.work.run(host.stopping), restart=True)
    host.add_background(
        "casino-intent-sweep", lambda: handlers.run_sweeper(host.stopping), restart=True
    )
    host.add_background(
        "casino-uth-tables", lambda: uth.host_seated_tables(host.stopping), restart=True
    )
    host.add_service(
        casino_pb2.DESCRIPTOR.services_by_name["CasinoTableService"],
        casino_pb2_grpc.add_CasinoTableServiceServicer_to_server,
        CasinoApi(handlers, uth, host.stopping),
    )
    return handlers
