"""Live UTH tables through a real table ServiceHost (SQLite under a tmp path, a second host
on the same path is a restart) and a real wallet service; registration's seat events are
published on the in-process bus."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
from electric.eventlog.v1.envelope_pb2 import Envelope
from electric.registration.v1 import casino_events_pb2 as reg_casino
from electric.table.v1 import casino_pb2, casino_pb2_grpc
from electric.wallet.v1 import ledger_pb2, wallet_pb2
from electric_eventlog import envelope_message, pack
from electric_platform import ServiceHost, load_config
from electric_platform.eventpath import inprocess_bus
from electric_table.app import make_setup
from electric_table.casino import repo
from electric_table.casino.handlers import CasinoHandlers, casino_stream
from electric_table.casino.uth_tables import UthTables
from electric_table.casino.wiring import CASINO, UTH
from google.protobuf.message import Message

from tests.support import wallet_kit
from tests.support.auth import auth_env, bearer
from tests.support.table_kit import REG_TOPIC

OPERATOR = bearer("op-1", "operator")
PENDING = ledger_pb2.TRANSFER_STATE_PENDING
POSTED = ledger_pb2.TRANSFER_STATE_POSTED
VOIDED = ledger_pb2.TRANSFER_STATE_VOIDED
TABLE = "uth-1"
View = casino_pb2.CasinoTableView


def md(player: str) -> tuple[tuple[str, str], ...]:
    return bearer(player, "player")


def windows(green: int, yellow: int, decision: int, pause: int = 100) -> dict[str, str]:
    """Environment for short UTH windows (ms)."""
    return {
        "ELECTRIC_TABLE_UTH_GREEN_MS": str(green),
        "ELECTRIC_TABLE_UTH_YELLOW_MS": str(yellow),
        "ELECTRIC_TABLE_UTH_DECISION_MS": str(decision),
        "ELECTRIC_TABLE_UTH_PAUSE_MS": str(pause),
    }


@dataclass
class UthEnv:
    casino: casino_pb2_grpc.CasinoTableServiceStub
    wallet: wallet_kit.Env
    handlers: CasinoHandlers
    uth: UthTables
    host: ServiceHost

    async def transfer(self, tid: str) -> wallet_pb2.Transfer:
        resp = await self.wallet.stub.GetTransfer(
            wallet_pb2.GetTransferRequest(transfer_id=tid), metadata=OPERATOR
        )
        return resp.transfer

    def events(self, round_id: str) -> list[Message]:
        store = self.handlers.store
        with store.engine.connect() as conn:
            envs = store.read_stream(conn, casino_stream(round_id))
        return [store.decode(e) for e in envs]

    def kinds(self, round_id: str) -> list[str]:
        return [type(m).__name__ for m in self.events(round_id)]

    async def view(self, player: str, table: str = TABLE) -> View:
        resp = await self.casino.GetCasinoTable(
            casino_pb2.GetCasinoTableRequest(table_id=table), metadata=md(player)
        )
        return resp.view

    async def wait(self, player: str, pred: Callable[[View], bool], timeout: float = 15.0) -> View:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            v = await self.view(player)
            if pred(v):
                return v
            assert asyncio.get_running_loop().time() < deadline, f"never reached: {v}"
            await asyncio.sleep(0.01)

    async def bet(self, player: str, action: int, amount: int = 0, rid: str = "") -> View:
        resp = await self.casino.PlaceBets(
            casino_pb2.PlaceBetsRequest(
                request_id=rid or uuid.uuid4().hex,
                table_id=TABLE,
                action=action,
                amount_cents=amount,
            ),
            metadata=md(player),
        )
        return resp.view

    async def decide(self, player: str, round_id: str, decision: int) -> casino_pb2.CasinoRoundView:
        resp = await self.casino.Decide(
            casino_pb2.DecideRequest(
                request_id=uuid.uuid4().hex, round_id=round_id, decision=decision
            ),
            metadata=md(player),
        )
        return resp.round


@contextlib.asynccontextmanager
async def table_host(
    tmp_path: Path, wallet: wallet_kit.Env, env: dict[str, str], database_url: str = ""
) -> AsyncIterator[UthEnv]:
    """The table host; its database is SQLite under ``tmp_path`` unless ``database_url``."""
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
    with _environ(env):
        host = ServiceHost(config, make_setup(pause_ms=50))
        await host.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}")
    try:
        yield UthEnv(
            casino_pb2_grpc.CasinoTableServiceStub(channel),
            wallet,
            CASINO[id(host)],
            UTH[id(host)],
            host,
        )
    finally:
        await channel.close()
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


async def registration_event(payload: Message, table_id: str) -> None:
    envelope = Envelope(
        event_id=str(uuid.uuid4()),
        stream_id=f"casino-table-{table_id}",
        stream_version=next(_versions),
        event_type=payload.DESCRIPTOR.full_name,
        payload=pack(payload),
        producer="registration",
    )
    envelope.occurred_at.GetCurrentTime()
    await inprocess_bus().publish([envelope_message(REG_TOPIC, envelope)])


async def seat(env: UthEnv, players: list[str], table_id: str = TABLE) -> None:
    """Registration seats ``players`` (seat numbers from 1) and the table sees them."""
    for i, p in enumerate(players, start=1):
        await registration_event(
            reg_casino.CasinoSeatTaken(
                table_id=table_id, game="uth", player_id=p, seat=i, session_id=f"s-{p}"
            ),
            table_id,
        )
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        with env.handlers.engine.connect() as conn:
            if set(players) <= set(repo.seated_players(conn, table_id)):
                return
        assert asyncio.get_running_loop().time() < deadline, "seats never arrived"
        await asyncio.sleep(0.02)
