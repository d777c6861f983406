"""The event path of a service: its database, event store, outbox relay and bus.

:func:`open_event_path` wires, for a :class:`~electric_platform.server.ServiceHost`:

- a SQLAlchemy engine on ``DATABASE_URL`` (``electric_eventlog.create_engine``) and the event
  log's migrations, then the service's own migrations (``versions_dir``);
- an :class:`~electric_eventlog.EventStore` producing to ``electric.<service>.events``;
- the bus: Kafka (``KAFKA_BOOTSTRAP_SERVERS`` set; topics created when missing) or the
  process-wide :class:`~electric_eventlog.InProcessBus` shared by every service of the
  process (embedded mode);
- the outbox relay as a background task of the host; at shutdown, after in-flight calls
  drained, a final relay drain, then the producer flush/stop, then the engine dispose;
- Prometheus gauges ``electric_outbox_unsent_events`` and ``electric_outbox_relayed_events``
  and the counter ``electric_eventlog_published_total{topic}`` in the host's registry
  (:func:`register_outbox_metrics`; consumer metrics:
  :func:`electric_platform.eventmetrics.watch_consumers`);
- signed checkpoints of the store (:mod:`electric_platform.checkpointing`): periodic, and
  one at shutdown after the final relay drain;
- optionally (``announce=True``) a ``electric.platform.v1.ServiceInstanceStarted`` event.

Handlers then append in one transaction with their own rows::

    with path.engine.begin() as conn:
        conn.execute(...)
        path.store.append(conn, stream_id, expected_version, [event], correlation_id=...)
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from electric.platform.v1 import events_pb2 as platform_events
from electric_eventlog import (
    ANY,
    EventBus,
    EventStore,
    InProcessBus,
    OutboxRelay,
    create_engine,
    migrate,
    unsent_count,
    upgrade,
    utc_now,
)
from electric_eventlog.engine import read_only
from electric_eventlog.relay_thread import run_on_own_loop
from prometheus_client import Gauge
from sqlalchemy import Engine, MetaData

from electric_platform.checkpointing import open_checkpoints
from electric_platform.config import env_ms
from electric_platform.context import new_id
from electric_platform.eventmetrics import event_metrics
from electric_platform.metrics import software_version
from electric_platform.server import ServiceHost

#: How long a frozen relay keeps its store's relay leadership (docs/platform.md).
RELAY_LEASE_ENV = "ELECTRIC_RELAY_LEASE_MS"
DEFAULT_RELAY_LEASE_MS = 10_000

_buses: dict[int, InProcessBus] = {}


def inprocess_bus() -> InProcessBus:
    """The in-process bus shared by every service running in this event loop."""
    loop_id = id(asyncio.get_running_loop())
    bus = _buses.get(loop_id)
    if bus is None:
        bus = _buses[loop_id] = InProcessBus()
    return bus


@dataclass
class EventPath:
    """What a service's handlers need to record events."""

    engine: Engine
    store: EventStore
    bus: EventBus
    relay: OutboxRelay
    #: Id of this service instance (also in ServiceInstanceStarted).
    instance_id: str

    @property
    def topic(self) -> str:
        """The service's event topic."""
        return self.store.topic


def _config_digest(host: ServiceHost) -> str:
    text = json.dumps(host.config.describe(), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


async def open_event_path(
    host: ServiceHost,
    *,
    versions_dir: Path | str | None = None,
    target_metadata: MetaData | None = None,
    bus: EventBus | None = None,
    consumes: Sequence[str] = (),
    announce: bool = True,
) -> EventPath:
    """Open the database and event path of ``host``'s service; register its lifecycle.

    ``versions_dir`` holds the service's own Alembic revisions (tracked in
    ``alembic_version_<service>``). ``bus`` overrides the bus choice (tests, embedded
    runner). ``consumes`` lists the topics the service subscribes to: on Kafka they are
    created when missing, so consumers never wait for topic metadata.
    """
    cfg = host.config
    engine = create_engine(cfg.database_url)
    host.on_shutdown(engine.dispose)
    await asyncio.to_thread(migrate, engine)
    if versions_dir is not None:
        await asyncio.to_thread(
            lambda: upgrade(
                engine,
                versions_dir=versions_dir,
                version_table=f"alembic_version_{cfg.service}",
                target_metadata=target_metadata,
            )
        )
    store = EventStore(engine, producer=cfg.service)
    own_kafka_bus = bus is None and cfg.uses_kafka
    if bus is None:
        if cfg.uses_kafka:
            from electric_eventlog.kafka import KafkaBus, ensure_topics

            await ensure_topics(
                cfg.kafka_bootstrap_servers,
                [store.topic, *consumes],
                namespace=cfg.kafka_namespace,
            )
            bus = KafkaBus(
                cfg.kafka_bootstrap_servers,
                client_id=f"electric-{cfg.service}",
                namespace=cfg.kafka_namespace,
            )
        else:
            bus = inprocess_bus()
    await bus.start()
    host.on_shutdown(bus.stop)  # flush the producer (runs after the final relay drain)
    instance_id = new_id()
    # Signed checkpoints; the final one runs after the final relay drain, before bus.stop.
    await open_checkpoints(host, engine, bus, instance_id)
    # Sent rows are purged after ELECTRIC_OUTBOX_RETENTION_HOURS on Kafka; the in-process bus
    # is re-seeded from them at start-up (republish_all), so the embedded runner keeps them.
    keep = cfg.outbox_retention_hours
    relay = OutboxRelay(
        engine,
        bus,
        topic=store.topic,
        sent_retention=timedelta(hours=keep) if cfg.uses_kafka and keep > 0 else None,
        lease_seconds=env_ms(RELAY_LEASE_ENV, DEFAULT_RELAY_LEASE_MS) / 1000,
    )
    store.on_commit(relay.notify)  # a local commit wakes the relay (no 20 ms poll wait)
    if own_kafka_bus:
        # On a loop and producer of its own, not behind the service's gRPC work (issue 16).
        def relay_bus() -> EventBus:
            from electric_eventlog.kafka import KafkaBus

            return KafkaBus(
                cfg.kafka_bootstrap_servers,
                client_id=f"electric-{cfg.service}-relay",
                namespace=cfg.kafka_namespace,
            )

        host.add_background(
            "outbox-relay",
            lambda: run_on_own_loop(relay, relay_bus, host.stopping),
            restart=True,
        )
    else:
        host.add_background("outbox-relay", lambda: relay.run(host.stopping), restart=True)
    host.on_shutdown(relay.final_drain)  # skipped while another instance relays
    register_outbox_metrics(host, engine, store.topic, relay)
    path = EventPath(engine=engine, store=store, bus=bus, relay=relay, instance_id=instance_id)
    if announce:
        await asyncio.to_thread(_announce, host, path)
    host.log.info(
        "eventpath.opened",
        topic=store.topic,
        bus="kafka" if cfg.uses_kafka else "in-process",
    )
    return path


def _announce(host: ServiceHost, path: EventPath) -> None:
    event = platform_events.ServiceInstanceStarted(
        service=host.name,
        instance_id=path.instance_id,
        version=software_version(),
        hostname=socket.gethostname(),
        pid=os.getpid(),
        config_digest=_config_digest(host),
    )
    now = utc_now()
    event.started_at.FromDatetime(now)
    with path.engine.begin() as conn:
        path.store.append(
            conn,
            f"instance-{host.name}",
            ANY,
            [event],
            correlation_id=path.instance_id,
            causation_id=path.instance_id,
            occurred_at=now,
        )


def register_outbox_metrics(
    host: ServiceHost, engine: Engine, topic: str, relay: OutboxRelay | None
) -> None:
    """The outbox metrics of ``topic`` in ``host``'s registry: the backlog gauge
    ``electric_outbox_unsent_events``, ``electric_outbox_relayed_events`` and the counter
    ``electric_eventlog_published_total{topic}`` (``relay`` None: nothing relays here)."""
    event_metrics(host).add_relay(topic, relay)
    registry = host.metrics.registry
    unsent = Gauge(
        "electric_outbox_unsent_events",
        "Events committed to the outbox and not yet published to the bus.",
        registry=registry,
    )

    def count() -> float:
        try:
            with read_only(engine.connect()) as conn, conn.begin():
                return float(unsent_count(conn, topic=topic))
        except Exception:
            return float("nan")

    unsent.set_function(count)
    relayed = Gauge(
        "electric_outbox_relayed_events",
        "Events this process published from the outbox since it started.",
        registry=registry,
    )
    relayed.set_function(lambda: float(relay.published if relay is not None else 0))
