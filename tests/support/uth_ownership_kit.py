"""Two table instances' casino on one store, for the UTH ownership component tests
(tests/component/table_casino/test_table_casino_uth_ownership.py and
test_table_casino_uth_rebalance.py): handlers, live UTH tables and partition ownership per
instance, a fixed clock, and probes of what the store holds."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from electric_clients.wallet import WalletClient
from electric_domain.casino.common.config import load_config
from electric_eventlog import EventStore, create_engine, migrate, upgrade
from electric_table.casino import repo
from electric_table.casino.metrics import CasinoMetrics
from electric_table.casino.thb.handlers import CasinoHandlers
from electric_table.casino.uth.ownership import UthOwnership
from electric_table.casino.uth.settings import uth_config
from electric_table.casino.uth.tables import UthTables
from electric_table.host.ownership import PartitionOwnership
from electric_table.journal import casino_stream
from electric_table.store.tables import VERSIONS_DIR, metadata
from electric_table.tournament.ownership import TournamentOwnership
from electric_table.tournament.runtime import TableManager
from prometheus_client import CollectorRegistry
from sqlalchemy import Engine

from tests.support import wallet_kit
from tests.support.auth import token_source

PARTS = 6
TABLE = "uth-1"
PLAYERS = ["ann", "ben", "cat"]
NOW = 1_800_000_000_000  # a fixed clock: the betting window stays open


@dataclass
class Instance:
    """One table-service instance's casino: handlers, live UTH tables, ownership (no
    driver: the test moves the round itself)."""

    handlers: CasinoHandlers
    uth: UthTables
    ownership: PartitionOwnership
    manager: TableManager
    wallet: WalletClient
    uth_ownership: UthOwnership

    async def close(self) -> None:
        await self.uth.close()
        await self.manager.close()
        await self.wallet.close()


@contextlib.asynccontextmanager
async def instance(
    engine: Engine, name: str, wallet_target: str, stopping: asyncio.Event
) -> AsyncIterator[Instance]:
    store = EventStore(engine, producer="table")
    manager = TableManager(engine, store, stopping=stopping)
    ownership = PartitionOwnership(engine, owner=name, partitions=PARTS)
    TournamentOwnership(manager, ownership)
    wallet = WalletClient.connect(wallet_target, token_source("table"))
    config = uth_config(load_config())
    handlers = CasinoHandlers(
        engine, store, wallet, config, CasinoMetrics(CollectorRegistry()), now_ms=lambda: NOW
    )
    uth = UthTables(handlers, config, pause_ms=0, stopping=stopping)
    inst = Instance(handlers, uth, ownership, manager, wallet, UthOwnership(uth, ownership))
    try:
        yield inst
    finally:
        await inst.close()


def migrated(url: str) -> Engine:
    engine = create_engine(url)
    migrate(engine)
    upgrade(
        engine,
        versions_dir=VERSIONS_DIR,
        version_table="alembic_version_table",
        target_metadata=metadata,
    )
    return engine


def stored(engine: Engine, round_id: str) -> tuple[int, list[str], bool]:
    """(events in the round's stream, players with bet rows, whether ben's request row
    exists)."""
    store = EventStore(engine, producer="probe")
    with engine.connect() as conn:
        events = len(store.read_stream(conn, casino_stream(round_id)))
        players = sorted({b.player_id for b in repo.bets(conn, round_id)})
        ben = repo.get_request(conn, "ben", "r-ben") is not None
    return events, players, ben


def repo_bets(engine: Engine, round_id: str) -> list[repo.BetRow]:
    with engine.connect() as conn:
        return repo.bets(conn, round_id)


async def txn(wallet: wallet_kit.Env, transfer_id: str) -> int:
    from electric.wallet.v1 import wallet_pb2

    resp = await wallet.stub.GetTransfer(
        wallet_pb2.GetTransferRequest(transfer_id=transfer_id), metadata=wallet_kit.OPERATOR
    )
    return int(resp.transfer.state)


def run_scenario(
    url: str,
    tmp_path: Path,
    scenario: Callable[[Engine, wallet_kit.Env], Awaitable[None]],
    funded: Sequence[str] = (),
) -> None:
    """Run ``scenario`` on a migrated table database at ``url`` with a wallet of its own in
    ``tmp_path``, ``funded`` players holding 10,000 cents each; the engine is disposed."""

    async def run() -> None:
        engine = migrated(url)
        try:
            async with wallet_kit.serve_wallet(f"sqlite:///{tmp_path}/wallet.db") as wallet:
                for player in funded:
                    await wallet_kit.deposit(wallet, player, 10_000)
                await scenario(engine, wallet)
        finally:
            engine.dispose()

    asyncio.run(run())
