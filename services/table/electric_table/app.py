"""Composition root of the table service: config → event path → tables → consumers → API.

The event path (database, event store, outbox relay, bus) comes from
`electric_platform.eventpath.open_event_path`, like every service; then the live tables
(`runtime`), their application service (`handlers`) and real-time driver (`driver`), the
registration subscription (`consumers`, on the shared ConsumerWorker) and the servicer.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from electric.table.v1 import table_pb2, table_pb2_grpc
from electric_platform.config import env_ms
from electric_platform.eventmetrics import watch_consumers
from electric_platform.eventpath import open_event_path
from electric_platform.server import ServiceHost

from electric_table.casino.wiring import setup_casino
from electric_table.host.forwarding import OwnerForwarding
from electric_table.host.ownership import (
    OWNERSHIP_ENV,
    PARTITIONS,
    SINGLE,
    PartitionOwnership,
    own_by_partitions,
    ownership_mode,
)
from electric_table.host.routing import Router, advertised_address
from electric_table.store.tables import VERSIONS_DIR, metadata
from electric_table.tournament.api import DEFAULT_WATCH_START_WAIT_S, TableApi
from electric_table.tournament.consumers import SOURCE_TOPIC, tournament_worker
from electric_table.tournament.driver import TableDriver
from electric_table.tournament.handlers import DEFAULT_HAND_PAUSE_MS, HAND_PAUSE_ENV, TableHandlers
from electric_table.tournament.metrics import TableMetrics
from electric_table.tournament.ownership import TournamentOwnership
from electric_table.tournament.routing import TournamentDirectory, table_routes
from electric_table.tournament.runtime import FINISHED_RETENTION_S, TableManager

SERVICE = "table"
#: Kafka consumer group of the registration subscription (default ``table.tournaments``).
#: Only for isolating a deployment (or a test) on a shared broker; every instance of one
#: deployment must use the same group.
CONSUMER_GROUP_ENV = "ELECTRIC_TABLE_CONSUMER_GROUP"

#: Worker threads of a ``partitions`` instance (asyncio's default is cores + 4).
PARTITIONS_WORKERS = 32

#: The live manager of each started host (tests and the embedded runner look tables up here).
MANAGERS: dict[int, TableManager] = {}
#: The partition ownership of each host started with ``ELECTRIC_TABLE_OWNERSHIP=partitions``.
OWNERSHIPS: dict[int, PartitionOwnership] = {}


def hand_pause_ms(environ: Mapping[str, str] | None = None) -> int:
    """``ELECTRIC_TABLE_HAND_PAUSE_MS``: pause between hands (default 500 ms)."""
    return env_ms(HAND_PAUSE_ENV, DEFAULT_HAND_PAUSE_MS, environ)


#: How long WatchTable waits for a table being started before NOT_FOUND (milliseconds).
WATCH_START_WAIT_ENV = "ELECTRIC_TABLE_WATCH_START_WAIT_MS"


def watch_start_wait_s(environ: Mapping[str, str] | None = None) -> float:
    """``ELECTRIC_TABLE_WATCH_START_WAIT_MS`` in seconds (default 10 s)."""
    default = round(DEFAULT_WATCH_START_WAIT_S * 1000)
    return env_ms(WATCH_START_WAIT_ENV, default, environ) / 1000


#: How long a finished table stays in memory before it is released (milliseconds).
FINISHED_RETENTION_ENV = "ELECTRIC_TABLE_FINISHED_RETENTION_MS"


def finished_retention_s(environ: Mapping[str, str] | None = None) -> float:
    """``ELECTRIC_TABLE_FINISHED_RETENTION_MS`` in seconds (default 60 s)."""
    return env_ms(FINISHED_RETENTION_ENV, round(FINISHED_RETENTION_S * 1000), environ) / 1000


#: Whether this instance hosts the casino (THB rounds, UTH live tables): ``on`` (default) or
#: ``off`` — ``single`` ownership only. Under ``partitions`` ownership every instance serves
#: THB and hosts the UTH tables of its partitions (docs/scaling.md), so the casino is on
#: everywhere: ``off`` there is refused (its partitions' UTH tables would have no host).
CASINO_ENV = "ELECTRIC_TABLE_CASINO"


def casino_hosted(environ: Mapping[str, str] | None = None, *, partitions: bool = False) -> bool:
    """``ELECTRIC_TABLE_CASINO``: ``on`` (default) or ``off`` (not with ``partitions``)."""
    env = os.environ if environ is None else environ
    value = env.get(CASINO_ENV, "").strip().lower() or "on"
    if value not in ("on", "off"):
        raise ValueError(f"{CASINO_ENV} must be 'on' or 'off', got {value!r}")
    if partitions and value == "off":
        raise ValueError(
            f"{CASINO_ENV}=off is for {OWNERSHIP_ENV}={SINGLE} only: with {PARTITIONS} every "
            "instance hosts the casino's UTH tables of its partitions"
        )
    return value == "on"


def make_setup(
    *, pause_ms: int | None = None, ownership: str | None = None
) -> Callable[[ServiceHost], Awaitable[None]]:
    """A setup function with an explicit hand pause and ownership mode (default: from the
    environment, ``ELECTRIC_TABLE_HAND_PAUSE_MS`` / ``ELECTRIC_TABLE_OWNERSHIP``)."""

    async def setup_with(host: ServiceHost) -> None:
        path = await open_event_path(
            host, versions_dir=VERSIONS_DIR, target_metadata=metadata, consumes=[SOURCE_TOPIC]
        )
        manager = TableManager(
            path.engine,
            path.store,
            stopping=host.stopping,
            metrics=TableMetrics(host.metrics.registry),
            finished_retention_s=finished_retention_s(),
        )
        handlers = TableHandlers(
            manager, hand_pause_ms=hand_pause_ms() if pause_ms is None else pause_ms
        )
        manager.start_driver = TableDriver(manager, handlers).start
        MANAGERS[id(host)] = manager
        by_partitions = (ownership or ownership_mode()) == PARTITIONS
        with_casino = casino_hosted(partitions=by_partitions)  # refused before any work
        if not by_partitions:  # single: this instance owns (and resumes) every table
            resumed = await manager.recover()
            host.log.info("table.recovered", tables=resumed)

        async def close() -> None:
            await manager.close()
            MANAGERS.pop(id(host), None)
            OWNERSHIPS.pop(id(host), None)

        host.on_shutdown(close)
        worker = tournament_worker(
            path.engine,
            path.bus,
            path.store,
            manager,
            group_id=os.environ.get(CONSUMER_GROUP_ENV, ""),
        )
        start_wait = watch_start_wait_s()
        owned: PartitionOwnership | None = None
        address: Callable[[], str] | None = None
        if by_partitions:  # tables come and go with the group's assignment (docs/scaling.md)
            # Writers waiting on a lock a paused ex-owner holds must not take every worker
            # thread: the takeover (fence + rebuild) needs threads to end that wait.
            asyncio.get_running_loop().set_default_executor(
                ThreadPoolExecutor(max_workers=PARTITIONS_WORKERS, thread_name_prefix="table")
            )
            address = advertised_address(host.config.grpc_host, lambda: host.grpc_port)
            by_part = await own_by_partitions(path, worker.group_id, SOURCE_TOPIC, owner=address)
            tournaments = TournamentOwnership(manager, by_part)
            OWNERSHIPS[id(host)] = owned = by_part
            host.add_background(
                "table-ownership-sweep", lambda: by_part.sweep_forever(host.stopping), restart=True
            )
            # Calls for another instance's table are forwarded to it (`routing`).
            router = Router(
                TournamentDirectory(tournaments, path.engine), address, start_wait_s=start_wait
            )
            host.on_shutdown(router.close)
            host.add_interceptor(OwnerForwarding(table_routes(router)))
        api = TableApi(handlers, host.stopping, manager, watch_start_wait_s=start_wait)
        watch_consumers(host, worker)
        host.add_background("tournament-consumer", lambda: worker.run(host.stopping), restart=True)
        host.add_service(
            table_pb2.DESCRIPTOR.services_by_name["TableService"],
            table_pb2_grpc.add_TableServiceServicer_to_server,
            api,
        )
        if with_casino:  # partitions: the UTH tables follow the same assignment
            await setup_casino(
                host, path, ownership=owned, advertised=address, start_wait_s=start_wait
            )
        else:  # single ownership: another instance (or nobody) hosts the casino
            host.log.info("table.casino_off", reason=f"{CASINO_ENV}=off")

    return setup_with


async def setup(host: ServiceHost) -> None:
    """Wire the table service into ``host``."""
    await make_setup()(host)
