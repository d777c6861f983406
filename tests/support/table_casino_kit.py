"""Live UTH tables through a real table ServiceHost (SQLite under a tmp path, a second host
on the same path is a restart) and a real wallet service; registration's seat events are
published on the in-process bus."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import grpc
from electric.registration.v1 import casino_events_pb2 as reg_casino
from electric.table.v1 import casino_pb2, casino_pb2_grpc
from electric.wallet.v1 import ledger_pb2, wallet_pb2
from electric_platform import ServiceHost
from electric_table.casino.thb.handlers import CasinoHandlers
from electric_table.casino.uth.tables import UthTables
from electric_table.casino.wiring import CASINO, UTH
from electric_table.journal import casino_stream
from google.protobuf.message import Message

from tests.support import wallet_kit
from tests.support.auth import bearer
from tests.support.casino_setup import registration_event, serve_table, until_seated

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


def betting(v: View) -> bool:
    """The table takes bets: a round open, its light green."""
    return v.phase == "betting" and v.light == "green" and v.status == "open"


@dataclass
class CasinoEnv:
    """A table host serving THB and UTH, its casino stub and the wallet it reaches."""

    casino: casino_pb2_grpc.CasinoTableServiceStub
    wallet: wallet_kit.Env
    handlers: CasinoHandlers
    host: ServiceHost

    def metric(self, name: str, **labels: str) -> float:
        value = self.host.metrics.registry.get_sample_value(name, labels)
        return 0.0 if value is None else float(value)

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


@dataclass
class UthEnv(CasinoEnv):
    """:class:`CasinoEnv` with the host's live UTH tables and calls at table ``uth-1``."""

    uth: UthTables

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
    async with (
        serve_table(tmp_path, wallet, env, database_url) as host,
        grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as channel,
    ):
        yield UthEnv(
            casino_pb2_grpc.CasinoTableServiceStub(channel),
            wallet,
            CASINO[id(host)],
            host,
            UTH[id(host)],
        )


@contextlib.asynccontextmanager
async def thb_host(tmp_path: Path, wallet: wallet_kit.Env) -> AsyncIterator[CasinoEnv]:
    """The table host (SQLite under ``tmp_path``) for THB tests: no UTH windows set."""
    async with (
        serve_table(tmp_path, wallet) as host,
        grpc.aio.insecure_channel(f"127.0.0.1:{host.grpc_port}") as channel,
    ):
        yield CasinoEnv(
            casino_pb2_grpc.CasinoTableServiceStub(channel), wallet, CASINO[id(host)], host
        )


async def seat(env: UthEnv, players: list[str], table_id: str = TABLE) -> None:
    """Registration seats ``players`` (seat numbers from 1) and the table sees them."""
    for i, p in enumerate(players, start=1):
        await registration_event(
            reg_casino.CasinoSeatTaken(
                table_id=table_id, game="uth", player_id=p, seat=i, session_id=f"s-{p}"
            ),
            table_id,
        )
    for p in players:
        await until_seated(env.handlers.engine, table_id, p)
