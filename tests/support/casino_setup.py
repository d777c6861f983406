"""Set-up shared by the casino component tests (registration's lobby, the table service's
casino tables, payout's casino wins): migrated SQLite stores, an injected clock, the table
ServiceHost, registration's events on the in-process bus, and payout's casino pipeline
(wins, crediter and its ``payout.table-events`` worker) against a real wallet."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from electric.eventlog.v1.envelope_pb2 import Envelope
from electric_audit.sources import read_store
from electric_clients.wallet import WalletClient
from electric_eventlog import (
    ConsumerWorker,
    EventStore,
    IdempotentConsumer,
    InProcessBus,
    create_engine,
    envelope_message,
    migrate,
    pack,
    upgrade,
)
from electric_eventlog.bus import ReceivedMessage
from electric_payout.casino.consumers import CasinoConsumers
from electric_payout.casino.crediter import CasinoCrediter
from electric_payout.casino.wins import CasinoWins
from electric_payout.consumers import TABLE_CONSUMER, TABLE_TOPIC
from electric_payout.store import tables as payout_tables
from electric_platform import ServiceHost, load_config
from electric_platform.eventpath import inprocess_bus
from electric_registration.store import tables as registration_tables
from electric_table.app import make_setup
from electric_table.casino import repo as table_repo
from google.protobuf.message import Message
from sqlalchemy import Engine

from tests.support import wallet_kit
from tests.support.auth import auth_env, token_source
from tests.support.table_kit import REG_TOPIC

T0 = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


class FakeClock:
    """An injected clock the test moves by hand (no waiting for real minutes)."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kw: float) -> None:
        self.now += timedelta(**kw)


def _service_engine(path: Path, versions_dir: str, version_table: str, metadata: object) -> Engine:
    engine = create_engine(f"sqlite:///{path}")
    migrate(engine)
    upgrade(
        engine,
        versions_dir=versions_dir,
        version_table=version_table,
        target_metadata=metadata,
    )
    return engine


def registration_engine(path: Path) -> Engine:
    """A SQLite registration store at ``path``: the event log and registration's tables."""
    return _service_engine(
        path,
        registration_tables.VERSIONS_DIR,
        "alembic_version_registration",
        registration_tables.metadata,
    )


def payout_engine(path: Path) -> Engine:
    """A SQLite payout store at ``path``: the event log and payout's tables."""
    return _service_engine(
        path, payout_tables.VERSIONS_DIR, "alembic_version_payout", payout_tables.metadata
    )


@contextlib.asynccontextmanager
async def serve_table(
    tmp_path: Path,
    wallet: wallet_kit.Env,
    env: dict[str, str] | None = None,
    database_url: str = "",
) -> AsyncIterator[ServiceHost]:
    """The table ServiceHost reaching ``wallet``; its database is SQLite under ``tmp_path``
    (a second host on the same path is a restart) unless ``database_url``. ``env`` is set in
    the process environment while the host is built and started (the UTH windows)."""
    db = {"DATABASE_URL": database_url} if database_url else {}
    config = load_config(
        "table",
        {
            **db,
            "ELECTRIC_VAR_DIR": str(tmp_path),
            **auth_env(),
            "ELECTRIC_WALLET_TARGET": wallet.target,
            "ELECTRIC_GRPC_PORT": "0",
            "ELECTRIC_METRICS_PORT": "-1",
            "ELECTRIC_SHUTDOWN_GRACE_SECONDS": "1",
            "ELECTRIC_LOG_LEVEL": "WARNING",
        },
    )
    with _environ(env or {}):
        host = ServiceHost(config, make_setup(pause_ms=50))
        await host.start()
    try:
        yield host
    finally:
        await host.stop()


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_versions = itertools.count(1)


async def registration_event(
    payload: Message, table_id: str, stream_version: int | None = None
) -> None:
    """``payload`` as registration publishes it on its topic (in-process bus); the stream
    version counts up unless given."""
    envelope = Envelope(
        event_id=str(uuid.uuid4()),
        stream_id=f"casino-table-{table_id}",
        stream_version=next(_versions) if stream_version is None else stream_version,
        event_type=payload.DESCRIPTOR.full_name,
        payload=pack(payload),
        producer="registration",
    )
    envelope.occurred_at.GetCurrentTime()
    await inprocess_bus().publish([envelope_message(REG_TOPIC, envelope)])


async def until_seated(
    engine: Engine, table_id: str, player: str, want: bool = True, timeout: float = 10.0
) -> None:
    """Wait until the table's store (``engine``) has ``player`` seated at ``table_id`` (or,
    with ``want`` False, no longer seated)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        with engine.connect() as conn:
            if table_repo.seated(conn, table_id, player) == want:
                return
        assert asyncio.get_running_loop().time() < deadline, (
            f"seat of {player} at {table_id} never became {want}"
        )
        await asyncio.sleep(0.02)


@dataclass
class PayoutCasino:
    """Payout's casino pipeline on its own SQLite store, crediting through a real wallet."""

    engine: Engine
    wins: CasinoWins
    crediter: CasinoCrediter
    client: WalletClient
    worker: ConsumerWorker

    async def deliver(self, envelopes: Iterable[Envelope]) -> None:
        """The table's events to payout's worker, as the bus delivers them."""
        for e in envelopes:
            out = envelope_message(TABLE_TOPIC, e)
            await self.worker.handle(
                ReceivedMessage(out.topic, 0, 0, out.key, out.value, out.headers)
            )


@contextlib.asynccontextmanager
async def payout_casino(path: Path, wallet_target: str) -> AsyncIterator[PayoutCasino]:
    """:class:`PayoutCasino` with its store at ``path`` and a wallet client as payout."""
    engine = payout_engine(path)
    client = WalletClient.connect(wallet_target, token_source("payout"))
    wins = CasinoWins(engine, EventStore(engine, producer="payout"))
    crediter = CasinoCrediter(wins, client)
    worker = ConsumerWorker(
        engine=engine,
        bus=InProcessBus(),
        consumer=IdempotentConsumer(TABLE_CONSUMER),
        topics=[TABLE_TOPIC],
    )
    CasinoConsumers(wins, on_owed=crediter.wake.set).register(worker)
    try:
        yield PayoutCasino(engine, wins, crediter, client, worker)
    finally:
        await client.close()
        engine.dispose()


def reservations_closed(wallet_url: str) -> bool:
    """Every casino bet's reservation (``wallet-transfer-<thb|uth>-r-…``) in the wallet's
    store at ``wallet_url`` is posted or voided."""
    pending, closed = set(), set()
    for x in read_store(wallet_url).events:
        kind = x.envelope.event_type.rsplit(".", 1)[-1]
        if kind == "TransferPending" and "-r-" in x.envelope.stream_id:  # casino bets
            pending.add(x.envelope.stream_id)
        elif kind in ("TransferPosted", "TransferVoided"):
            closed.add(x.envelope.stream_id)
    return pending <= closed
